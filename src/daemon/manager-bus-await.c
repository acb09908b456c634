/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "manager-bus-internal.h"
#include "manager-bus-properties.h"
#include "manager-bus.h"
#include "util.h"

static void awaiter_free(Awaiter *a) {
        if (!a)
                return;
        sd_bus_track_unref(a->track);
        sd_bus_message_unref(a->call);
        g_free(a);
}

void bus_awaiter_free(gpointer p) {
        awaiter_free(p);
}

/* Applied: the last apply pass counted the unit for each of its policies, and the unit tracker
 * still sees it wanted. The second half matters while an apply is queued: a unit that stopped
 * and is being started again must not be answered from the pass before it stopped. */
static bool unit_policies_applied(Manager *m, const char *unit, GPtrArray *policies) {
        GHashTable *units = m->units ? unit_tracker_units(m->units) : NULL;
        TrackedUnit *u = units ? g_hash_table_lookup(units, unit) : NULL;

        if (!m->applied_once || !u || !tracked_unit_is_wanted(u))
                return false;
        for (guint i = 0; i < policies->len; i++) {
                const Policy *p = g_ptr_array_index(policies, i);
                PolicyRuntime *rt = bus_policy_runtime(m, p->name);

                if (!rt || !rt->active || !g_ptr_array_find_with_equal_func(rt->units, unit, g_str_equal, NULL))
                        return false;
        }
        return true;
}

/* Replies when the unit has no policy or its policies are applied; returns true if it did. */
static bool await_try_reply(Manager *m, sd_bus_message *call, const char *unit) {
        g_autoptr(GPtrArray) policies = manager_policies_for_unit(m, unit);
        int r;

        if (policies->len > 0 && !unit_policies_applied(m, unit, policies))
                return false;
        r = sd_bus_reply_method_return(call, "bs", policies->len > 0,
                                       policies->len > 0 ? ((const Policy *) g_ptr_array_index(policies, 0))->name : "");
        if (r < 0)
                log_debug_errno(r, "Cannot answer Await(%s): %m", unit);
        return true;
}

static int on_awaiter_gone(sd_bus_track *track, void *userdata) {
        Awaiter *a = userdata;
        BusData *d = a->m->bus_data;

        log_debug("Await caller %s left the bus.", sd_bus_message_get_sender(a->call));
        g_ptr_array_remove(d->awaiters, a);
        return 0;
}

void bus_answer_awaiters(Manager *m) {
        BusData *d = m->bus_data;

        for (guint i = 0; i < d->awaiters->len;) {
                Awaiter *a = g_ptr_array_index(d->awaiters, i);
                const char *unit;

                if (sd_bus_message_rewind(a->call, true) >= 0 && sd_bus_message_read(a->call, "s", &unit) >= 0 &&
                    !await_try_reply(m, a->call, unit)) {
                        i++;
                        continue;
                }
                g_ptr_array_remove_index(d->awaiters, i);
        }
}

static bool unit_name_plausible(const char *unit) {
        const char *dot = strrchr(unit, '.');

        return strlen(unit) <= UNIT_NAME_MAX && dot && dot != unit && dot[1] && !strchr(unit, '/');
}

int method_await(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        Manager *m = userdata;
        BusData *d = m->bus_data;
        const char *unit, *sender = sd_bus_message_get_sender(msg);
        Awaiter *a;
        int r;

        r = sd_bus_message_read(msg, "s", &unit);
        if (r < 0)
                return r;
        if (!unit_name_plausible(unit)) {
                g_autofree char *q = bus_quote(unit);

                return sd_bus_error_setf(error, SD_BUS_ERROR_INVALID_ARGS,
                                         "%s is not a unit name; pass the full name, e.g. redis-server.service.", q);
        }

        if (await_try_reply(m, msg, unit)) {
                log_debug("Await(%s) from %s: answered at once.", unit, sender);
                return 1;
        }

        if (d->awaiters->len >= AWAITERS_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u Await() calls are already waiting; try again later.", AWAITERS_MAX);

        a = g_new0(Awaiter, 1);
        a->m = m;
        a->call = sd_bus_message_ref(msg);
        r = sd_bus_track_new(m->bus, &a->track, on_awaiter_gone, a);
        if (r >= 0)
                r = sd_bus_track_add_sender(a->track, msg);
        if (r < 0) {
                awaiter_free(a);
                return r;
        }
        g_ptr_array_add(d->awaiters, a);
        log_debug("Await(%s) from %s: waiting for its policy.", unit, sender);
        return 1;
}

/* Await() callers get an answer rather than a vanished peer. */
void bus_fail_awaiters(BusData *d) {
        for (guint i = 0; i < d->awaiters->len; i++) {
                Awaiter *a = g_ptr_array_index(d->awaiters, i);

                (void) sd_bus_reply_method_errorf(a->call, THPD_ERROR_FAILED, "thpd is stopping.");
        }
        g_ptr_array_set_size(d->awaiters, 0);
}

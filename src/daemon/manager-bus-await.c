/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

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
static bool unit_policies_applied(const Manager *m, const char *unit, GPtrArray *policies) {
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
static bool await_try_reply(const Manager *m, sd_bus_message *call, const char *unit) {
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
        BusData *d = a->d;

        log_debug("Await caller %s left the bus.", sd_bus_message_get_sender(a->call));
        g_ptr_array_remove(d->awaiters, a);
        return 0;
}

static int on_await_timer(sd_event_source *s, uint64_t usec, void *userdata);

/* One timer for the earliest deadline: awaiters come with the same timeout, so in order. */
static void arm_await_timer(BusData *d) {
        uint64_t next = UINT64_MAX;
        int r;

        for (guint i = 0; i < d->awaiters->len; i++)
                next = MIN(next, ((const Awaiter *) g_ptr_array_index(d->awaiters, i))->deadline);
        if (next == UINT64_MAX) {
                if (d->await_timer)
                        (void) sd_event_source_set_enabled(d->await_timer, SD_EVENT_OFF);
                return;
        }
        if (!d->await_timer)
                r = sd_event_add_time(d->m->event, &d->await_timer, CLOCK_MONOTONIC, next, USEC_PER_SEC, on_await_timer, d);
        else {
                r = sd_event_source_set_time(d->await_timer, next);
                if (r >= 0)
                        r = sd_event_source_set_enabled(d->await_timer, SD_EVENT_ONESHOT);
        }
        if (r < 0)
                log_warning_errno(r, "Cannot arm the Await() deadline; waiting callers are answered when they leave: %m");
}

static int on_await_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        BusData *d = userdata;
        uint64_t now = now_usec(CLOCK_MONOTONIC);

        for (guint i = 0; i < d->awaiters->len;) {
                Awaiter *a = g_ptr_array_index(d->awaiters, i);
                const char *unit = NULL;
                int r;

                if (a->deadline > now) {
                        i++;
                        continue;
                }
                if (sd_bus_message_rewind(a->call, true) >= 0)
                        (void) sd_bus_message_read(a->call, "s", &unit);
                r = sd_bus_reply_method_errorf(a->call, THPD_ERROR_TIMEOUT,
                                               "The policy of %s was not applied within AwaitTimeout= (%" PRIu64 " s).",
                                               unit ?: "the unit", d->m->settings.await_timeout_usec / USEC_PER_SEC);
                if (r < 0)
                        log_debug_errno(r, "Cannot answer an Await() that timed out: %m");
                log_debug("Await(%s) from %s: timed out.", unit ?: "?", sd_bus_message_get_sender(a->call));
                g_ptr_array_remove_index(d->awaiters, i);
        }
        arm_await_timer(d);
        return 0;
}

void bus_answer_awaiters(BusData *d) {

        for (guint i = 0; i < d->awaiters->len;) {
                Awaiter *a = g_ptr_array_index(d->awaiters, i);
                const char *unit;

                if (sd_bus_message_rewind(a->call, true) >= 0 && sd_bus_message_read(a->call, "s", &unit) >= 0 &&
                    !await_try_reply(d->m, a->call, unit)) {
                        i++;
                        continue;
                }
                g_ptr_array_remove_index(d->awaiters, i);
        }
        arm_await_timer(d);
}

static bool unit_name_plausible(const char *unit) {
        const char *dot = strrchr(unit, '.');

        return strlen(unit) <= UNIT_NAME_MAX && dot && dot != unit && dot[1] && !strchr(unit, '/');
}

/* The caller's effective uid; one that cannot be told counts as a user of its own. */
static uid_t sender_uid(sd_bus_message *msg) {
        _cleanup_(sd_bus_creds_unrefp) sd_bus_creds *creds = NULL;
        uid_t uid;

        if (sd_bus_query_sender_creds(msg, SD_BUS_CREDS_EUID, &creds) < 0 || sd_bus_creds_get_euid(creds, &uid) < 0)
                return (uid_t) -1;
        return uid;
}

static unsigned awaiters_of(const BusData *d, uid_t uid) {
        unsigned n = 0;

        for (guint i = 0; i < d->awaiters->len; i++)
                n += ((const Awaiter *) g_ptr_array_index(d->awaiters, i))->uid == uid;
        return n;
}

int method_await(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusData *d = userdata;
        Manager *m = d->m;
        const char *unit, *sender = sd_bus_message_get_sender(msg);
        Awaiter *a;
        uid_t uid;
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
        uid = sender_uid(msg);
        if (uid != 0 && awaiters_of(d, uid) >= AWAITERS_PER_UID_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "This user has %u Await() calls waiting already; try again later.",
                                         AWAITERS_PER_UID_MAX);

        a = g_new0(Awaiter, 1);
        a->d = d;
        a->uid = uid;
        a->deadline = now_usec(CLOCK_MONOTONIC) + m->settings.await_timeout_usec;
        a->call = sd_bus_message_ref(msg);
        r = sd_bus_track_new(m->bus, &a->track, on_awaiter_gone, a);
        if (r >= 0)
                r = sd_bus_track_add_sender(a->track, msg);
        if (r < 0) {
                awaiter_free(a);
                return r;
        }
        g_ptr_array_add(d->awaiters, a);
        arm_await_timer(d);
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

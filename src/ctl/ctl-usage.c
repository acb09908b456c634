/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "ctl-bus.h"
#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl-usage.h"
#include "log.h"
#include "unit-processes.h"
#include "util.h"

/* Reading smaps_rollup of many processes, and the manager's answers, can take a while on a big
 * host; a hung manager must not hang status for long. */
#define USAGE_TIMEOUT_USEC (10 * UINT64_C(1000000))

static void unit_usage_clear(gpointer p) {
        CtlUnitUsage *u = p;

        g_free(u->unit);
        g_free(u->policy);
        g_free(u->source);
}

static int read_usage(sd_bus_message *reply, GArray *usage) {
        const char *unit, *policy, *source;
        uint64_t anon, shmem;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sstts)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sstts)", &unit, &policy, &anon, &shmem, &source)) > 0) {
                CtlUnitUsage u = {
                        .unit = g_strdup(unit),
                        .policy = g_strdup(policy),
                        .anon_thp_bytes = anon,
                        .shmem_thp_bytes = shmem,
                        .source = g_strdup(source),
                };

                g_array_append_val(usage, u);
        }
        return r;
}

/* What thpd cannot read, the caller may: thpd.service sees no other user's /proc/PID
 * (ProtectProc=invisible) and has no CAP_SYS_PTRACE, so where no cgroup counts a unit's THP (a
 * hybrid host whose units have no memory cgroup of their own, a container) the smaps_rollup of a
 * service running as another user is unknown to it. The same reader, run here, uses the caller's
 * privileges: root gets the figure, any other user only that of their own processes; the kernel
 * decides, as for any other reader of /proc. The processes come from the systemd manager on the
 * bus thpd-ctl talks to, as thpd gets them. */
typedef struct UnitCall {
        CtlUsageCall *call;
        guint index; /* the unit's row in call->usage */
        sd_bus_slot *slot;
} UnitCall;

static void unit_call_free(gpointer p) {
        UnitCall *u = p;

        sd_bus_slot_unref(u->slot);
        g_free(u);
}

static void read_unit_here(sd_bus_message *reply, CtlUnitUsage *u) {
        g_autoptr(GArray) processes = NULL;
        const sd_bus_error *error = sd_bus_message_get_error(reply);
        UnitUsage usage;
        int r;

        if (error) {
                log_debug("%s: the systemd manager did not list its processes: %s", u->unit,
                          error->message ?: strerror(sd_bus_message_get_errno(reply)));
                return;
        }
        r = unit_processes_read(reply, &processes);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot read its processes: %m", u->unit);
                return;
        }
        r = usage_read_unit("/sys/fs/cgroup", "/proc", (const UnitProcess *) processes->data, processes->len, &usage);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot tell how much THP it holds: %m", u->unit);
                return;
        }
        u->anon_thp_bytes = usage.anon_thp_bytes;
        u->shmem_thp_bytes = usage.shmem_thp_bytes;
        g_free(u->source);
        u->source = g_strdup(usage_source_to_string(usage.source));
        u->read_by_ctl = true;
}

static int on_unit_processes_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        UnitCall *u = userdata;

        (*u->call->pending)--;
        read_unit_here(reply, &g_array_index(u->call->usage, CtlUnitUsage, u->index));
        return 0;
}

static void ask_unit_processes(sd_bus *bus, CtlUsageCall *c, guint index) {
        const CtlUnitUsage *unit = &g_array_index(c->usage, CtlUnitUsage, index);
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        UnitCall *u;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitProcesses");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", unit->unit);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot ask the systemd manager for its processes: %m", unit->unit);
                return;
        }
        u = g_new0(UnitCall, 1);
        u->call = c;
        u->index = index;
        r = sd_bus_call_async(bus, &u->slot, call, on_unit_processes_reply, u, 0);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot ask the systemd manager for its processes: %m", unit->unit);
                g_free(u);
                return;
        }
        g_ptr_array_add(c->unit_calls, u);
        (*c->pending)++;
}

static int on_usage_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        CtlUsageCall *c = userdata;
        g_autoptr(GArray) usage = NULL;
        int r;

        (*c->pending)--;
        c->reply = sd_bus_message_ref(reply);
        if (sd_bus_message_is_method_error(reply, NULL))
                return 0;

        usage = g_array_new(FALSE, TRUE, sizeof(CtlUnitUsage));
        g_array_set_clear_func(usage, unit_usage_clear);
        r = read_usage(reply, usage);
        if (r < 0) {
                c->read_error = r;
                return 0;
        }
        c->usage = TAKE_PTR(usage);
        for (guint i = 0; i < c->usage->len; i++)
                if (!g_array_index(c->usage, CtlUnitUsage, i).source[0])
                        ask_unit_processes(sd_bus_message_get_bus(reply), c, i);
        return 0;
}

int ctl_unit_usage_call(sd_bus *bus, unsigned *pending, CtlUsageCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        *c = (CtlUsageCall) {
                .pending = pending,
                .unit_calls = g_ptr_array_new_with_free_func(unit_call_free),
        };
        r = sd_bus_message_new_method_call(bus, &call, THPD_BUS_NAME, THPD_BUS_PATH, THPD_BUS_INTERFACE, "GetUnitUsage");
        if (r >= 0)
                r = sd_bus_call_async(bus, &c->slot, call, on_usage_reply, c, USAGE_TIMEOUT_USEC);
        if (r < 0)
                return r;
        (*pending)++;
        return 0;
}

void ctl_unit_usage_call_done(CtlUsageCall *c) {
        /* The calls still in flight first: their callbacks point into c. */
        g_clear_pointer(&c->unit_calls, g_ptr_array_unref);
        c->slot = sd_bus_slot_unref(c->slot);
        c->reply = sd_bus_message_unref(c->reply);
        g_clear_pointer(&c->usage, g_array_unref);
}

GArray *ctl_unit_usage_finish(CtlUsageCall *c) {
        const sd_bus_error *error = sd_bus_message_get_error(c->reply);

        if (error) {
                /* A thpd from before the method: say nothing, as about any property it lacks. */
                if (!sd_bus_error_has_name(error, SD_BUS_ERROR_UNKNOWN_METHOD))
                        log_warning("Cannot read how much THP the units hold: %s",
                                    error->message ?: strerror(sd_bus_message_get_errno(c->reply)));
                return NULL;
        }
        if (c->read_error < 0) {
                log_warning_errno(c->read_error, "Cannot read thpd's answer about THP usage: %m");
                return NULL;
        }
        return TAKE_PTR(c->usage);
}

const CtlUnitUsage *ctl_unit_usage_find(GArray *usage, const char *unit) {
        for (guint i = 0; usage && i < usage->len; i++) {
                const CtlUnitUsage *u = &g_array_index(usage, CtlUnitUsage, i);

                if (streq(u->unit, unit))
                        return u;
        }
        return NULL;
}

uint64_t ctl_unit_usage_total(const CtlUnitUsage *u) {
        if (u->anon_thp_bytes == UINT64_MAX)
                return u->shmem_thp_bytes;
        if (u->shmem_thp_bytes == UINT64_MAX)
                return u->anon_thp_bytes;
        return u->anon_thp_bytes + MIN(u->shmem_thp_bytes, UINT64_MAX - 1 - u->anon_thp_bytes);
}

/* "2.7 GiB anon, 4.0 MiB shmem (cgroup-v2)" for one unit; "(smaps, read by thpd-ctl)" where thpd
 * could not tell and thpd-ctl read it with the caller's privileges. */
static char *usage_text(const CtlUnitUsage *u) {
        g_autofree char *anon = NULL, *shmem = NULL;

        if (!u->source[0])
                return g_strdup("unknown");
        anon = ctl_format_bytes(u->anon_thp_bytes);
        if (u->shmem_thp_bytes == UINT64_MAX)
                return g_strdup_printf("%s anon, shmem not counted apart (%s%s)", anon, u->source,
                                       u->read_by_ctl ? ", read by thpd-ctl" : "");
        shmem = ctl_format_bytes(u->shmem_thp_bytes);
        return g_strdup_printf("%s anon, %s shmem (%s%s)", anon, shmem, u->source, u->read_by_ctl ? ", read by thpd-ctl" : "");
}

/* UINT64_MAX, unknown, is null. */
static void add_bytes(CtlTable *t, uint64_t value) {
        if (value == UINT64_MAX)
                ctl_table_add_string(t, NULL);
        else
                ctl_table_add_uint(t, value);
}

CtlTable *ctl_unit_usage_table(const CtlUnitUsage *const *units, size_t n) {
        CtlTable *t = ctl_table_new();

        ctl_table_add_column(t, "", "unit");
        ctl_table_add_json_columns(t, "policy", "anon_thp_bytes", "shmem_thp_bytes", "source", "read_by", NULL);
        ctl_table_add_column(t, "", NULL);
        for (size_t i = 0; i < n; i++) {
                const CtlUnitUsage *u = units[i];
                g_autofree char *text = usage_text(u);

                ctl_table_add_string(t, u->unit);
                ctl_table_add_string(t, u->policy);
                add_bytes(t, u->anon_thp_bytes);
                add_bytes(t, u->shmem_thp_bytes);
                ctl_table_add_string(t, empty_to_null(u->source));
                ctl_table_add_string(t, !u->source[0] ? NULL : u->read_by_ctl ? "thpd-ctl" : "thpd");
                ctl_table_add_string(t, text);
        }
        return t;
}

void ctl_unit_usage_to_json(GArray *usage, CtlJson *b) {
        g_autoptr(GPtrArray) units = NULL;
        g_autoptr(CtlTable) t = NULL;

        if (!usage) {
                ctl_json_null(b, "unit_usage");
                return;
        }
        units = g_ptr_array_sized_new(usage->len);
        for (guint i = 0; i < usage->len; i++)
                g_ptr_array_add(units, &g_array_index(usage, CtlUnitUsage, i));
        t = ctl_unit_usage_table((const CtlUnitUsage *const *) units->pdata, units->len);
        ctl_table_to_json(t, b, "unit_usage");
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "manager-bus.h"
#include "manager-usage.h"
#include "manager.h"
#include "systemd-call.h"
#include "thpd-bus.h"
#include "unit-processes.h"
#include "util.h"

/* GetUnitUsage calls waiting for the systemd manager at once; beyond, a caller gets
 * LimitsExceeded instead of our memory and a storm of calls to the manager. */
#define USAGE_REQUESTS_MAX 64U

typedef struct UsageRequest UsageRequest;

typedef struct UsageRow {
        UsageRequest *request;
        char *unit;
        const char *policy;      /* borrowed from the request's policy names */
        GArray *processes;       /* UnitProcess; NULL until the manager answered with them */
} UsageRow;

struct UsageRequest {
        unsigned ref;            /* the request itself, plus one per call in flight */
        Manager *m;
        BusData *bus;            /* whose list holds it; NULL once the bus listener is freed */
        sd_bus_message *call;    /* NULL once answered with an error */
        GPtrArray *rows;         /* UsageRow* */
        GPtrArray *policy_names; /* char* */
        unsigned unanswered;
};

static void usage_row_free(gpointer p) {
        UsageRow *row = p;

        g_free(row->unit);
        if (row->processes)
                g_array_unref(row->processes);
        g_free(row);
}

static UsageRequest *usage_request_new(BusData *d, sd_bus_message *call) {
        UsageRequest *req = g_new0(UsageRequest, 1);

        req->ref = 1;
        req->m = d->m;
        req->bus = d;
        req->call = sd_bus_message_ref(call);
        req->rows = g_ptr_array_new_with_free_func(usage_row_free);
        req->policy_names = g_ptr_array_new_with_free_func(g_free);
        if (!d->usage_requests)
                d->usage_requests = g_ptr_array_new();
        g_ptr_array_add(d->usage_requests, req);
        return req;
}

static void usage_request_unref(UsageRequest *req) {
        if (!req || --req->ref > 0)
                return;
        if (req->bus)
                g_ptr_array_remove_fast(req->bus->usage_requests, req);
        sd_bus_message_unref(req->call);
        g_ptr_array_unref(req->rows);
        g_ptr_array_unref(req->policy_names);
        g_free(req);
}

static void usage_request_unrefp(UsageRequest **req) {
        usage_request_unref(*req);
}

/* One row per unit that an active policy counts, under the first such policy in lexical order. */
static void collect_units(UsageRequest *req) {
        Manager *m = req->m;
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);

        for (guint i = 0; i < m->policies->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, i);
                PolicyRuntime *rt = g_hash_table_lookup(m->plan.policy_runtime, p->name);
                char *name;

                if (!rt || !rt->active)
                        continue;
                name = g_strdup(p->name);
                g_ptr_array_add(req->policy_names, name);
                for (guint j = 0; j < rt->units->len; j++) {
                        const char *unit = g_ptr_array_index(rt->units, j);
                        UsageRow *row;

                        if (!g_hash_table_add(seen, (gpointer) unit))
                                continue;
                        row = g_new0(UsageRow, 1);
                        *row = (UsageRow) {
                                .request = req,
                                .unit = g_strdup(unit),
                                .policy = name,
                        };
                        g_ptr_array_add(req->rows, row);
                }
        }
}

static int append_row(sd_bus_message *reply, const Manager *m, const UsageRow *row) {
        UnitUsage u = { USAGE_UNKNOWN, USAGE_UNKNOWN, USAGE_SOURCE_NONE };
        int r;

        if (row->processes) {
                r = usage_read_unit(m->cgroupfs_root, m->procfs_root, (const UnitProcess *) row->processes->data,
                                    row->processes->len, &u);
                if (r < 0)
                        log_debug_errno(r, "%s: cannot tell how much THP it holds: %m", row->unit);
        }
        return sd_bus_message_append(reply, "(sstts)", row->unit, row->policy, u.anon_thp_bytes, u.shmem_thp_bytes,
                                     usage_source_to_string(u.source));
}

static int reply_usage(UsageRequest *req) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        r = sd_bus_message_new_method_return(req->call, &reply);
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'a', "(sstts)");
        for (guint i = 0; r >= 0 && i < req->rows->len; i++)
                r = append_row(reply, req->m, g_ptr_array_index(req->rows, i));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_send(NULL, reply, NULL);
        if (r < 0)
                log_debug_errno(r, "Cannot answer GetUnitUsage: %m");
        return r;
}

/* GetUnitProcesses: a(sus), (cgroup path, pid, command line) per process. An error (the unit
 * stopped and is gone) leaves the row without a figure. */
static int on_processes_reply(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        UsageRow *row = userdata;
        UsageRequest *req = row->request;
        int r;

        if (sd_bus_message_is_method_error(msg, NULL))
                log_debug("%s: the systemd manager did not list its processes: %s", row->unit,
                          sd_bus_message_get_error(msg)->message);
        else {
                r = unit_processes_read(msg, &row->processes);
                if (r < 0)
                        log_debug_errno(r, "%s: cannot read its processes: %m", row->unit);
        }
        if (--req->unanswered == 0 && req->call)
                (void) reply_usage(req);
        return 0;
}

static void on_call_done(void *userdata) {
        UsageRow *row = userdata;

        usage_request_unref(row->request);
}

/* A manager method: it does not load or touch the unit object (whose properties, read in the
 * wrong moment, made PID 1 and thpd ping-pong; units.c). Asked only about units counted as
 * wanted, which the manager has loaded, and only when a client asks. */
static int ask_processes(Manager *m, UsageRow *row) {
        int r;

        /* The call's reference, which on_call_done() drops (at once if the call cannot be made). */
        row->request->ref++;
        r = systemd_call_async(m->bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitProcesses", on_processes_reply, row,
                               on_call_done, "s", row->unit);
        if (r < 0)
                return r;
        row->request->unanswered++;
        return 0;
}

int method_get_unit_usage(sd_bus_message *msg, void *userdata, sd_bus_error *error) {
        BusData *d = userdata;
        _cleanup_(usage_request_unrefp) UsageRequest *req = NULL;
        int r;

        if (d->usage_requests && d->usage_requests->len >= USAGE_REQUESTS_MAX)
                return sd_bus_error_setf(error, SD_BUS_ERROR_LIMITS_EXCEEDED,
                                         "%u GetUnitUsage() calls are already waiting; try again later.", USAGE_REQUESTS_MAX);

        req = usage_request_new(d, msg);
        collect_units(req);
        if (req->rows->len > 0)
                log_debug("GetUnitUsage: asking the systemd manager for the processes of %u unit(s).", req->rows->len);
        for (guint i = 0; i < req->rows->len; i++) {
                r = ask_processes(d->m, g_ptr_array_index(req->rows, i));
                if (r < 0) {
                        /* sd-bus answers with the error; the calls in flight must not answer again. */
                        req->call = sd_bus_message_unref(req->call);
                        return log_warning_errno(r, "Cannot ask the systemd manager for processes: %m");
                }
        }
        if (req->unanswered == 0) {
                r = reply_usage(req);
                return r < 0 ? r : 1;
        }
        return 1;
}

/* Callers get an answer rather than a vanished peer; and a request that still holds its call
 * holds the bus, which would then never be freed with the calls in flight. */
void manager_usage_fail_pending(BusData *d) {
        if (!d->usage_requests)
                return;
        for (guint i = 0; i < d->usage_requests->len; i++) {
                UsageRequest *req = g_ptr_array_index(d->usage_requests, i);

                if (!req->call)
                        continue;
                (void) sd_bus_reply_method_errorf(req->call, THPD_ERROR_FAILED, "thpd is stopping.");
                req->call = sd_bus_message_unref(req->call);
        }
}

/* The requests with calls in flight outlive the list: they go when the bus, which Manager
 * closes after the listeners, ends those calls. Answered already, they need nothing else. */
void manager_usage_release(BusData *d) {
        manager_usage_fail_pending(d);
        if (!d->usage_requests)
                return;
        for (guint i = 0; i < d->usage_requests->len; i++)
                ((UsageRequest *) g_ptr_array_index(d->usage_requests, i))->bus = NULL;
        g_clear_pointer(&d->usage_requests, g_ptr_array_unref);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "manager-isolation.h"
#include "procfs.h"
#include "systemd-call.h"
#include "thpd-bus.h"
#include "unit-processes.h"
#include "util.h"

typedef struct IsolationCall {
        Manager *manager;
        char *unit;
        unsigned stops;
} IsolationCall;

static void isolation_call_free(void *p) {
        IsolationCall *c = p;

        g_free(c->unit);
        g_free(c);
}

static void set_state(Isolation *i, IsolationState state, char *note) {
        if (i->state != state)
                log_info("%s: %s for %s%s%s", i->unit, isolation_state_to_string(state), i->policy, note ? ": " : "",
                         note ?: "");
        i->state = state;
        g_free(i->note);
        i->note = note;
}

/* How thpd-generator isolates the unit: its own drop-in, or its template's
 * ("foo@.service.d" for "foo@bar.service"). */
static void read_via(const Manager *m, Isolation *i) {
        g_autofree char *dir = manager_generator_dir(m), *template = NULL;
        const char *at = strchr(i->unit, '@'), *dot = strrchr(i->unit, '.');
        const char *names[2] = { i->unit, NULL };

        i->via = SCOPE_VIA_NONE;
        if (!dir)
                return;
        if (at && dot && at < dot) {
                template = g_strdup_printf("%.*s%s", (int) (at - i->unit + 1), i->unit, dot);
                names[1] = template;
        }
        for (size_t n = 0; n < G_N_ELEMENTS(names) && names[n]; n++) {
                g_autofree char *path = g_strdup_printf("%s/%s.d/%s", dir, names[n], SCOPE_DROPIN_NAME);
                g_autofree char *text = NULL;

                if (!g_file_get_contents(path, &text, NULL, NULL))
                        continue;
                i->via = scope_dropin_parse(text, &i->via_value);
                if (i->via != SCOPE_VIA_NONE)
                        return;
        }
}

/* Reads THP_enabled of each process in the reply until one keeps THP, which is enough to say
 * what the unit is (isolation_judge()); then says what was found. */
static void judge(Manager *m, Isolation *i, sd_bus_message *reply) {
        g_autoptr(GArray) processes = NULL;
        IsolationFound found = {};
        const UnitProcess *with_thp = NULL;
        unsigned unreadable = 0;
        IsolationState state;
        char *note;
        int r;

        r = unit_processes_read(reply, &processes);
        if (r < 0) {
                set_state(i, ISOLATION_UNVERIFIED, g_strdup_printf("cannot read its processes: %s", strerror(-r)));
                return;
        }
        for (guint k = 0; k < processes->len && !with_thp; k++) {
                const UnitProcess *p = &g_array_index(processes, UnitProcess, k);
                ProcThpStatus st;

                if (procfs_read_thp_status(m->procfs_root, p->pid, &st) < 0) {
                        /* Gone since the answer, or a kernel before 5.0. */
                        unreadable++;
                        continue;
                }
                switch (isolation_classify_process(st.thp_enabled, st.name, i->via)) {
                case ISOLATION_PROCESS_DISABLED:
                        found.disabled++;
                        break;
                case ISOLATION_PROCESS_STARTING:
                        found.starting++;
                        break;
                default:
                        found.enabled++;
                        with_thp = p;
                        break;
                }
        }

        state = isolation_judge(i->mode, &found);
        switch (state) {
        case ISOLATION_NOT_ISOLATED:
                note = i->via == SCOPE_VIA_NONE
                               ? g_strdup_printf("PID %d (%s) has THP_enabled: 1; thpd-generator wrote no drop-in "
                                                 "for it (a transient unit, or one installed after the last "
                                                 "daemon-reload)", (int) with_thp->pid, with_thp->cmdline)
                               : g_strdup_printf("PID %d (%s) has THP_enabled: 1; it started before "
                                                 "thpd-generator's drop-in took effect", (int) with_thp->pid,
                                                 with_thp->cmdline);
                break;
        case ISOLATION_UNVERIFIED:
                note = with_thp ? g_strdup_printf("Enabled=madvise does not show in /proc/PID/status (PID %d, %s, "
                                                  "has THP_enabled: 1)", (int) with_thp->pid, with_thp->cmdline)
                                : g_strdup_printf("no process could be read (%u gone or without THP_enabled:)",
                                                  unreadable);
                break;
        default:
                note = found.starting > 0
                               ? g_strdup_printf("%u process(es) with THP_enabled: 0, %u starting through %s",
                                                 found.disabled, found.starting,
                                                 i->via == SCOPE_VIA_HELPER ? "thpd-exec" : "the service manager")
                               : g_strdup_printf("%u process(es) with THP_enabled: 0", found.disabled);
                break;
        }
        set_state(i, state, note);
}

static int on_processes_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        IsolationCall *c = userdata;
        Manager *m = c->manager;
        Isolation *i = g_hash_table_lookup(m->isolation, c->unit);

        /* An answer about an earlier run of the unit, or about one that is gone. */
        if (!i || i->stops != c->stops || i->state != ISOLATION_CHECKING)
                return 0;
        if (sd_bus_message_is_method_error(reply, NULL))
                set_state(i, ISOLATION_UNVERIFIED, g_strdup_printf("the service manager did not list its processes: %s",
                                                                  sd_bus_message_get_error(reply)->message));
        else
                judge(m, i, reply);
        manager_queue_apply(m);
        return 0;
}

static void ask_processes(Manager *m, Isolation *i) {
        IsolationCall *c = g_new0(IsolationCall, 1);
        int r;

        *c = (IsolationCall) { .manager = m, .unit = g_strdup(i->unit), .stops = i->stops };
        r = systemd_call_async(m->bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitProcesses", on_processes_reply, c,
                               isolation_call_free, "s", i->unit);
        if (r < 0)
                set_state(i, ISOLATION_UNVERIFIED, g_strdup_printf("cannot ask for its processes: %s", strerror(-r)));
}

/* Which way a unit of a policy that wants always gets it, as its drop-in says. The processes
 * cannot tell: PR_THP_DISABLE_EXCEPT_ADVISED does not show in /proc/PID/status. */
static char *always_note(const Isolation *i) {
        switch (i->via) {
        case SCOPE_VIA_MEMORY_THP:
                return g_strdup("always for its processes alone: every other service gets MemoryTHP=madvise from "
                                "thpd-generator's blanket " SCOPE_BLANKET_DIR "/" SCOPE_BLANKET_NAME
                                " (services started before it keep always until they restart)");
        case SCOPE_VIA_MACHINE_WIDE:
                return g_strdup_printf("always machine-wide, for every service: no blanket, as %s", i->via_value);
        default:
                return g_strdup("thpd-generator wrote no drop-in for it (a transient unit, or one installed after the "
                                "last daemon-reload): where the blanket exists it runs at madvise");
        }
}

static void check(Manager *m, const IsolationRequest *req) {
        const Policy *p = req->policy;
        Isolation *i = g_new0(Isolation, 1);

        *i = (Isolation) {
                .unit = g_strdup(req->unit),
                .policy = g_strdup(p->name),
                .mode = p->service_thp,
                .scope = p->scope,
                .stops = req->stops,
                .state = ISOLATION_CHECKING,
        };
        g_hash_table_replace(m->isolation, i->unit, i);
        read_via(m, i);

        if (i->mode == KNOB_ENABLED_ALWAYS) {
                set_state(i, ISOLATION_UNVERIFIED, always_note(i));
                /* The listeners ran before this entry existed: another apply announces it. */
                manager_queue_apply(m);
        } else if (isolation_before_asking(i->mode, i->via) == ISOLATION_NOT_ISOLATED)
                set_state(i, ISOLATION_NOT_ISOLATED,
                          g_strdup("thpd-generator wrote no drop-in for it (a transient unit, or one installed after "
                                   "the last daemon-reload)"));
        else
                /* Only now, with the unit running: GetUnitProcesses loads the unit it names, so it
                 * is never asked in reaction to UnitNew/UnitRemoved (that looped with PID 1). */
                ask_processes(m, i);
}

/* Forgets the units no longer wanted. */
static void prune(Manager *m, GHashTable *wanted) {
        GHashTableIter iter;
        const char *unit;

        g_hash_table_iter_init(&iter, m->isolation);
        while (g_hash_table_iter_next(&iter, (gpointer *) &unit, NULL))
                if (!g_hash_table_contains(wanted, unit))
                        g_hash_table_iter_remove(&iter);
}

static gint compare_isolation(gconstpointer a, gconstpointer b) {
        return strcmp((*(Isolation *const *) a)->unit, (*(Isolation *const *) b)->unit);
}

GPtrArray *manager_isolation_list(const Manager *m) {
        GPtrArray *list = g_ptr_array_new();
        GHashTableIter iter;
        Isolation *i;

        g_hash_table_iter_init(&iter, m->isolation);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &i))
                g_ptr_array_add(list, i);
        g_ptr_array_sort(list, compare_isolation);
        return list;
}

static void on_applied(Manager *m, const ApplyReport *report, void *userdata) {
        for (size_t i = 0; i < report->n_isolation_checks; i++)
                check(m, &report->isolation_checks[i]);
        if (report->wanted)
                prune(m, report->wanted);
}

const ManagerListener manager_isolation_listener = {
        .applied = on_applied,
};

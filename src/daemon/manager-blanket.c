/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "log.h"
#include "manager-blanket.h"
#include "runtime-file.h"
#include "systemd-call.h"
#include "thpd-bus.h"
#include "util.h"

/* The record of when the blanket took effect, in the runtime directory: a restarted thpd cannot
 * learn it again, as the generator rewrites the blanket at every daemon-reload. */
#define BLANKET_RECORD "blanket"
#define SYSTEMD_SERVICE_INTERFACE "org.freedesktop.systemd1.Service"

typedef struct BlanketAsk {
        Manager *manager;
        char *unit;
        unsigned generation;
} BlanketAsk;

static void entry_free(gpointer p) {
        BlanketEntry *e = p;

        g_free(e->service.unit);
        g_free(e);
}

static void ask_free(void *p) {
        BlanketAsk *a = p;

        g_free(a->unit);
        g_free(a);
}

static char *blanket_path(const Manager *m) {
        g_autofree char *dir = manager_generator_dir(m);

        return dir ? g_build_filename(dir, SCOPE_BLANKET_DIR, SCOPE_BLANKET_NAME, NULL) : NULL;
}

static uint64_t load_record(const Manager *m) {
        g_autofree char *path = g_build_filename(m->runtime_dir, BLANKET_RECORD, NULL), *text = NULL;
        uint64_t since;

        if (!g_file_get_contents(path, &text, NULL, NULL) || !g_str_has_prefix(text, "since=") ||
            parse_u64(g_strstrip(text + strlen("since=")), &since) < 0)
                return 0;
        return since;
}

/* When the blanket took effect: what the record says while the blanket stays; else the time
 * the generator wrote the one found now, during the manager's reload that loads it (at boot,
 * before any service started). A blanket that was there before a reload thpd did not see is
 * taken as new then, so a service started in between counts as started before it: a restart
 * too many is suggested, never one too few. */
static uint64_t read_since(Manager *m) {
        g_autofree char *path = blanket_path(m), *record = NULL;
        struct stat st;
        uint64_t since;
        int r;

        if (!path || stat(path, &st) < 0) {
                r = runtime_file_remove(m->runtime_dir, BLANKET_RECORD);
                if (r < 0)
                        log_warning_errno(r, "Cannot remove %s/%s: %m", m->runtime_dir, BLANKET_RECORD);
                return 0;
        }
        since = load_record(m);
        if (since > 0)
                return since;
        since = (uint64_t) st.st_mtim.tv_sec * USEC_PER_SEC + (uint64_t) st.st_mtim.tv_nsec / 1000;
        record = g_strdup_printf("since=%" PRIu64 "\n", since);
        r = runtime_file_write(m->runtime_dir, BLANKET_RECORD, record);
        if (r < 0)
                log_warning_errno(r, "Cannot record when the blanket took effect in %s: %m", m->runtime_dir);
        log_info("The blanket %s took effect at %" PRIu64 " µs since the epoch.", path, since);
        return since;
}

static void classify(Manager *m, BlanketEntry *e) {
        BlanketClass class;

        if (!e->dropins_known || !e->started_known)
                return;
        class = scope_blanket_classify(&e->facts, m->blanket->since);
        if (class == e->service.class)
                return;
        e->service.class = class;
        log_debug("%s: %s the blanket", e->service.unit, blanket_class_to_string(class));
        manager_queue_apply(m);
}

/* The entry an answer is for, or NULL when the listing or the unit's run it was asked for is
 * over. */
static BlanketEntry *answered(const BlanketAsk *a, sd_bus_message *reply) {
        BlanketWatch *w = a->manager->blanket;
        BlanketEntry *e;

        if (!w || a->generation != w->generation)
                return NULL;
        e = g_hash_table_lookup(w->services, a->unit);
        if (e && sd_bus_message_is_method_error(reply, NULL)) {
                /* Unloaded since: it does not run. */
                g_hash_table_remove(w->services, a->unit);
                return NULL;
        }
        return e;
}

/* Only the drop-ins after the blanket can take a service out of it; thpd-generator's own
 * (zz-thpd-scope.conf) is one of them. */
static int on_dropins(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BlanketAsk *a = userdata;
        BlanketEntry *e = answered(a, reply);
        g_auto(GStrv) paths = NULL;

        if (!e)
                return 0;
        if (sd_bus_message_enter_container(reply, 'v', "as") < 0 || sd_bus_message_read_strv(reply, &paths) < 0)
                return 0;
        e->facts = (BlanketFacts) { .started_usec = e->facts.started_usec };
        for (char **p = paths; *p; p++) {
                g_autofree char *text = NULL;

                if (!e->facts.has_blanket) {
                        e->facts.has_blanket = scope_dropin_is_blanket(*p);
                        continue;
                }
                if (g_file_get_contents(*p, &text, NULL, NULL) && scope_dropin_sets_memory_thp(text))
                        e->facts.overridden = true;
        }
        e->dropins_known = true;
        classify(a->manager, e);
        return 0;
}

static int on_started(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        BlanketAsk *a = userdata;
        BlanketEntry *e = answered(a, reply);
        uint64_t started;

        if (!e || sd_bus_message_read(reply, "v", "t", &started) < 0)
                return 0;
        e->facts.started_usec = started;
        e->started_known = true;
        classify(a->manager, e);
        return 0;
}

static int get_property(Manager *m, const char *unit, const char *path, const char *interface, const char *property,
                        sd_bus_message_handler_t callback) {
        BlanketAsk *a = g_new0(BlanketAsk, 1);

        *a = (BlanketAsk) { .manager = m, .unit = g_strdup(unit), .generation = m->blanket->generation };
        return systemd_call_async(m->bus, path, "org.freedesktop.DBus.Properties", "Get", callback, a, ask_free, "ss",
                                  interface, property);
}

/* Asked again at every start: a restart is a new main process, which may now be under it. */
static void ask(Manager *m, const char *unit, const char *path, uint64_t active_enter) {
        BlanketEntry *e = g_new0(BlanketEntry, 1);
        int r;

        e->service = (BlanketService) { .unit = g_strdup(unit), .class = _BLANKET_CLASS_INVALID };
        e->active_enter = active_enter;
        g_hash_table_replace(m->blanket->services, e->service.unit, e);
        r = get_property(m, unit, path, SYSTEMD_UNIT, "DropInPaths", on_dropins);
        if (r >= 0)
                r = get_property(m, unit, path, SYSTEMD_SERVICE_INTERFACE, "ExecMainStartTimestamp", on_started);
        if (r < 0) {
                log_warning_errno(r, "Cannot ask the service manager about %s: %m", unit);
                g_hash_table_remove(m->blanket->services, unit);
        }
}

/* A service without processes (a oneshot that exited) has nothing the blanket could reach. */
static bool runs_processes(const char *active_state, const char *sub_state) {
        return (streq(active_state, "active") || streq(active_state, "reloading")) && !streq_ptr(sub_state, "exited");
}

static int on_list_reply(sd_bus_message *reply, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        const char *unit, *active_state, *sub_state, *path;
        int r;

        if (!m->blanket)
                return 0;
        if (sd_bus_message_is_method_error(reply, NULL)) {
                log_warning("Cannot list the running services for the blanket: %s", sd_bus_message_get_error(reply)->message);
                return 0;
        }
        r = sd_bus_message_enter_container(reply, 'a', "(ssssssouso)");
        while (r > 0) {
                r = sd_bus_message_read(reply, "(ssssssouso)", &unit, NULL, NULL, &active_state, &sub_state, NULL, &path,
                                        NULL, NULL, NULL);
                if (r > 0 && runs_processes(active_state, sub_state))
                        ask(m, unit, path, 0);
        }
        if (r < 0)
                log_warning_errno(r, "Cannot read the service manager's list of services: %m");
        return 0;
}

/* Forgets what was found and, while there is a blanket, asks about every running service. */
static void refresh(Manager *m) {
        BlanketWatch *w = m->blanket;
        uint64_t since = read_since(m);
        bool changed = since != w->since || g_hash_table_size(w->services) > 0;
        int r;

        w->since = since;
        w->generation++;
        g_hash_table_remove_all(w->services);
        if (changed)
                manager_queue_apply(m);
        if (since == 0)
                return;
        r = sd_bus_call_method_async(m->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "ListUnitsByPatterns",
                                     on_list_reply, m, "asas", 2, "active", "reloading", 1, "*.service");
        if (r < 0)
                log_warning_errno(r, "Cannot list the running services for the blanket: %m");
}

static int on_reloading(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        int active;

        if (sd_bus_message_read(message, "b", &active) < 0)
                return 0;
        m->blanket->reloading = active;
        /* The reload ran the generators: the blanket may have come or gone. */
        if (!active)
                refresh(m);
        return 0;
}

static int on_unit_changed(sd_bus_message *message, void *userdata, sd_bus_error *ret_error) {
        Manager *m = userdata;
        BlanketWatch *w = m->blanket;
        const char *path = sd_bus_message_get_path(message), *interface, *key, *value;
        const char *active_state = NULL, *sub_state = NULL;
        _cleanup_free_ char *unit = NULL;
        uint64_t active_enter = 0;
        bool have_enter = false;
        BlanketEntry *e;

        /* Decided before the body is read: without a blanket, or for other units, nothing to do. */
        if (w->since == 0 || w->reloading || !path || !g_str_has_suffix(path, "_2eservice") ||
            sd_bus_path_decode(path, SYSTEMD_UNIT_PATH_PREFIX, &unit) <= 0)
                return 0;
        if (sd_bus_message_read(message, "s", &interface) < 0 || !streq(interface, SYSTEMD_UNIT) ||
            sd_bus_message_enter_container(message, 'a', "{sv}") < 0)
                return 0;
        while ((!active_state || !sub_state || !have_enter) && sd_bus_message_enter_container(message, 'e', "sv") > 0) {
                if (sd_bus_message_read(message, "s", &key) < 0)
                        return 0;
                if (streq(key, "ActiveState") || streq(key, "SubState")) {
                        if (sd_bus_message_read(message, "v", "s", &value) < 0)
                                return 0;
                        *(streq(key, "ActiveState") ? &active_state : &sub_state) = value;
                } else if (streq(key, "ActiveEnterTimestamp")) {
                        if (sd_bus_message_read(message, "v", "t", &active_enter) < 0)
                                return 0;
                        have_enter = true;
                } else if (sd_bus_message_skip(message, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(message) < 0)
                        return 0;
        }
        if (!active_state)
                return 0;
        e = g_hash_table_lookup(w->services, unit);
        if (runs_processes(active_state, sub_state)) {
                /* Asked once per run: a reload of the service keeps its processes and its
                 * ActiveEnterTimestamp, a restart has a new one. */
                if (!e || e->active_enter != active_enter)
                        ask(m, unit, path, active_enter);
        } else if (e && (streq(active_state, "inactive") || streq(active_state, "failed"))) {
                g_hash_table_remove(w->services, unit);
                manager_queue_apply(m);
        }
        return 0;
}

int manager_blanket_start(Manager *m) {
        BlanketWatch *w = g_new0(BlanketWatch, 1);
        int r;

        w->services = g_hash_table_new_full(g_str_hash, g_str_equal, NULL, entry_free);
        m->blanket = w;
        r = sd_bus_match_signal_async(m->bus, &w->reloading_slot, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                      "Reloading", on_reloading, NULL, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch systemd's Reloading signal: %m");
        r = sd_bus_add_match_async(m->bus, &w->changed_slot,
                                   "type='signal',sender='" SYSTEMD_SERVICE "',"
                                   "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                                   "arg0='" SYSTEMD_UNIT "',path_namespace='" SYSTEMD_UNIT_PATH_PREFIX "'",
                                   on_unit_changed, NULL, m);
        if (r < 0)
                return log_error_errno(r, "Cannot watch unit state changes: %m");
        refresh(m);
        return 0;
}

void manager_blanket_stop(Manager *m) {
        BlanketWatch *w = m->blanket;

        if (!w)
                return;
        sd_bus_slot_unref(w->reloading_slot);
        sd_bus_slot_unref(w->changed_slot);
        g_hash_table_destroy(w->services);
        g_free(w);
        m->blanket = NULL;
}

uint64_t manager_blanket_since(const Manager *m) {
        return m->blanket ? m->blanket->since : 0;
}

static gint compare_services(gconstpointer a, gconstpointer b) {
        return strcmp((*(BlanketService *const *) a)->unit, (*(BlanketService *const *) b)->unit);
}

GPtrArray *manager_blanket_services(const Manager *m) {
        GPtrArray *list = g_ptr_array_new();
        GHashTableIter iter;
        BlanketEntry *e;

        if (!m->blanket)
                return list;
        g_hash_table_iter_init(&iter, m->blanket->services);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &e))
                if (e->service.class != _BLANKET_CLASS_INVALID)
                        g_ptr_array_add(list, &e->service);
        g_ptr_array_sort(list, compare_services);
        return list;
}

const char *manager_blanket_policy(const Manager *m) {
        for (guint i = 0; i < m->policies->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, i);

                if (policy_inverts(p))
                        return p->name;
        }
        return NULL;
}

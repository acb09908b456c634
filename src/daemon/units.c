/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "systemd-call.h"
#include "thpd-bus.h"
#include "unit-processes.h"
#include "unit-state.h"
#include "units.h"
#include "util.h"

#define RETRY_USEC (5 * UINT64_C(1000000))

struct UnitTracker {
        sd_bus *bus;
        sd_event *event;
        UnitFilter filter;
        UnitsChanged changed;
        UnitJobEnded job_ended;
        UnitJobNew job_new;
        UnitRunWatched run_watched;
        UnitActiveState run_changed;
        void *userdata;

        GHashTable *units;       /* name -> TrackedUnit* */
        GHashTable *by_path;     /* path -> TrackedUnit* (borrowed) */

        sd_bus_slot *match_slots[6];
        sd_event_source *retry;
        bool ready;
        /* Enumerated once, or found that no manager answers: either way thpd may act. */
        bool answered;
        bool warned_unavailable;
        /* Between the manager's Reloading(true) and Reloading(false): it frees and re-creates
         * every unit object, so UnitRemoved then says nothing about what runs. */
        bool manager_reloading;
        unsigned generation;     /* bumps on every (re-)enumeration to drop stale replies */
        /* GetUnitProcesses calls in flight; an enumeration is complete once they answered. */
        unsigned processes_pending;
        bool enumeration_pending;
};

static void tracked_unit_free(gpointer p) {
        TrackedUnit *u = p;

        if (!u)
                return;
        g_free(u->name);
        g_free(u->path);
        g_free(u->active_state);
        g_free(u->sub_state);
        g_free(u);
}

static bool is_exited(const TrackedUnit *u) {
        return unit_sub_state_exited(u->sub_state);
}

static UnitFacts unit_facts(const TrackedUnit *u) {
        return (UnitFacts) {
                .active_state = u->active_state,
                .sub_state = u->sub_state,
                .start_job = u->start_job != 0,
                .exited_with_processes = u->exited_with_processes,
        };
}

bool tracked_unit_is_wanted(const TrackedUnit *u) {
        UnitFacts f = unit_facts(u);

        return unit_state_wanted(&f);
}

bool tracked_unit_is_running(const TrackedUnit *u) {
        UnitFacts f = unit_facts(u);

        return unit_state_running(&f);
}

GHashTable *unit_tracker_units(const UnitTracker *t) {
        return t->units;
}

bool unit_tracker_is_ready(const UnitTracker *t) {
        return t->ready;
}

bool unit_tracker_has_answered(const UnitTracker *t) {
        return t->answered;
}

static UnitView unit_view(const TrackedUnit *u) {
        return (UnitView) {
                .wanted = tracked_unit_is_wanted(u),
                .running = tracked_unit_is_running(u),
                .stops = u->stops,
        };
}

static void notify(UnitTracker *t, const char *unit, const UnitView *before, const UnitView *now, bool start_queued) {
        if (t->ready && t->changed)
                t->changed(t, unit, before, now, start_queued, t->userdata);
}

/* Every unit, after an enumeration: the listener sees them all afresh. */
static void notify_all(UnitTracker *t) {
        GHashTableIter iter;
        TrackedUnit *u;

        if (!t->ready)
                return;
        g_hash_table_iter_init(&iter, t->units);
        while (g_hash_table_iter_next(&iter, NULL, (gpointer *) &u)) {
                u->notified_view = unit_view(u);
                u->notified = true;
        }
        notify(t, NULL, NULL, NULL, false);
}

/* Before the first enumeration nothing is told, so nothing is noted: notify_all() does it. */
static void notify_unit(UnitTracker *t, TrackedUnit *u, bool start_queued) {
        UnitView before = u->notified_view, now = unit_view(u);
        bool told = u->notified;

        if (!t->ready || (told && before.wanted == now.wanted && before.running == now.running &&
                                  before.stops == now.stops))
                return;
        u->notified_view = now;
        u->notified = true;
        notify(t, u->name, told ? &before : NULL, &now, start_queued);
}

static TrackedUnit *track(UnitTracker *t, const char *name, const char *path) {
        TrackedUnit *u = g_hash_table_lookup(t->units, name);
        _cleanup_free_ char *encoded = NULL;

        /* systemd derives a unit's object path from its name, so a unit first seen in JobNew can
         * still be matched against later PropertiesChanged signals. */
        if (!path && (!u || !u->path) &&
            sd_bus_path_encode(SYSTEMD_UNIT_PATH_PREFIX, name, &encoded) >= 0)
                path = encoded;

        if (!u) {
                u = g_new0(TrackedUnit, 1);
                u->name = g_strdup(name);
                g_hash_table_insert(t->units, u->name, u);
        }
        if (path && !streq_ptr(u->path, path)) {
                if (u->path)
                        g_hash_table_remove(t->by_path, u->path);
                g_free(u->path);
                u->path = g_strdup(path);
                g_hash_table_insert(t->by_path, u->path, u);
        }
        return u;
}

static void untrack(UnitTracker *t, TrackedUnit *u) {
        if (u->path)
                g_hash_table_remove(t->by_path, u->path);
        g_hash_table_remove(t->units, u->name);
}

/* Returns whether anything changed. */
static bool set_state(TrackedUnit *u, const char *active_state, const char *sub_state) {
        bool changed = false;

        if (active_state && !streq_ptr(u->active_state, active_state)) {
                if (unit_state_stopped(u->active_state, active_state))
                        u->stops++;
                g_free(u->active_state);
                u->active_state = g_strdup(active_state);
                changed = true;
        }
        if (sub_state && !streq_ptr(u->sub_state, sub_state)) {
                g_free(u->sub_state);
                u->sub_state = g_strdup(sub_state);
                changed = true;
        }
        return changed;
}

/* Per-call context for replies that concern one unit; freed by the slot's destroy callback so
 * calls still in flight at exit do not leak. */
typedef struct UnitCall {
        UnitTracker *tracker;
        char *unit;
        uint32_t job;
        unsigned generation;
} UnitCall;

static void unit_call_free(void *p) {
        UnitCall *c = p;

        if (!c)
                return;
        g_free(c->unit);
        g_free(c);
}

static int on_job_type_reply(sd_bus_message *m, void *userdata, sd_bus_error *error);

/* Asks a job (never a unit: that could load it) what kind it is. */
static int call_job_type(UnitTracker *t, const char *unit, uint32_t job, const char *job_path) {
        UnitCall *c;

        c = g_new0(UnitCall, 1);
        *c = (UnitCall) { .tracker = t, .unit = g_strdup(unit), .job = job, .generation = t->generation };
        return systemd_call_async(t->bus, job_path, "org.freedesktop.DBus.Properties", "Get", on_job_type_reply, c,
                                  unit_call_free, "ss", SYSTEMD_JOB, "JobType");
}

static int read_string_variant(sd_bus_message *m, const char **ret) {
        int r;

        r = sd_bus_message_enter_container(m, 'v', "s");
        if (r < 0)
                return r;
        return sd_bus_message_read(m, "s", ret);
}

static int on_job_type_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitCall *c = userdata;
        UnitTracker *t = c->tracker;
        const char *type;
        TrackedUnit *u;

        /* An error means the job already finished; JobRemoved has told us all we need. */
        if (c->generation != t->generation || sd_bus_message_is_method_error(m, NULL))
                return 0;
        u = g_hash_table_lookup(t->units, c->unit);
        if (!u || read_string_variant(m, &type) < 0)
                return 0;
        if (unit_job_type_is_start(type)) {
                if (u->start_job != c->job) {
                        u->start_job = c->job;
                        notify_unit(t, u, true);
                }
        } else if (u->start_job == c->job) {
                log_debug("%s: job %u is a %s job, not a start", u->name, c->job, type);
                u->start_job = 0;
                notify_unit(t, u, false);
        }
        return 0;
}

static void finish_enumeration(UnitTracker *t);

static int on_processes_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitCall *c = userdata;
        UnitTracker *t = c->tracker;
        bool any = false;
        TrackedUnit *u;

        t->processes_pending--;
        if (c->generation == t->generation && (u = g_hash_table_lookup(t->units, c->unit)) && is_exited(u)) {
                g_autoptr(GArray) processes = NULL;

                /* An error: the unit is gone already, and with it its processes. */
                if (!sd_bus_message_is_method_error(m, NULL) && unit_processes_read(m, &processes) >= 0)
                        any = processes->len > 0;
                log_debug("%s: exited, %s", u->name, any ? "processes left in its control group" : "nothing left running");
                if (any != u->exited_with_processes) {
                        u->exited_with_processes = any;
                        notify_unit(t, u, false);
                }
        }
        if (t->processes_pending == 0 && t->enumeration_pending)
                finish_enumeration(t);
        return 0;
}

/* GetUnitProcesses loads the unit it names, which is why it is only asked about a unit that
 * just reported "exited" (it is loaded and active), never in reaction to UnitNew/UnitRemoved. */
static void ask_processes(UnitTracker *t, TrackedUnit *u) {
        UnitCall *c;
        int r;

        c = g_new0(UnitCall, 1);
        *c = (UnitCall) { .tracker = t, .unit = g_strdup(u->name), .generation = t->generation };
        r = systemd_call_async(t->bus, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitProcesses", on_processes_reply, c,
                               unit_call_free, "s", u->name);
        if (r < 0) {
                log_debug_errno(r, "%s: cannot ask for its processes, taking it as exited: %m", u->name);
                return;
        }
        t->processes_pending++;
}

/* Never touch a unit's object in reaction to UnitNew or UnitRemoved: reading a property of a
 * unit the manager has just garbage-collected loads it again (UnitNew), it is collected again
 * (UnitRemoved), and the three processes ping-pong for ever. A newly loaded unit is inactive;
 * JobNew and PropertiesChanged say when that changes. */
static int on_unit_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        const char *name, *path;
        TrackedUnit *u;

        if (t->manager_reloading || sd_bus_message_read(m, "so", &name, &path) < 0)
                return 0;
        u = g_hash_table_lookup(t->units, name);
        if (!u)
                return 0;
        /* Unloaded units are not running. */
        g_autofree char *unit = g_strdup(u->name);
        UnitView before = u->notified_view, now = { .stops = u->stops };
        bool told = u->notified;

        untrack(t, u);
        if (told)
                notify(t, unit, &before, &now, false);
        return 0;
}

static int on_job_new(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        const char *job_path, *name;
        TrackedUnit *u;
        uint32_t id;

        if (sd_bus_message_read(m, "uos", &id, &job_path, &name) < 0)
                return 0;
        if (t->ready && t->job_new)
                t->job_new(t, name, id, t->userdata);
        if (!t->filter(name, t->userdata))
                return 0;
        u = track(t, name, NULL);
        (void) call_job_type(t, name, id, job_path);

        /* Every new job counts as a start until the JobType reply says otherwise. On a unit
         * that is not running it almost always is one, and acting now rather than after the
         * round trip sets the knobs before a Type=simple service, which goes straight to
         * "active", runs its main process. On a running unit it may be a restart, whose stop
         * half must not release the policy; a stop is released once the reply or JobRemoved
         * comes, a round trip later. */
        if (u->start_job == 0) {
                bool was_wanted = tracked_unit_is_wanted(u);

                u->start_job = id;
                log_debug("%s: job %u queued", name, id);
                if (!was_wanted)
                        notify_unit(t, u, true);
        }
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        const char *job_path, *name, *result;
        TrackedUnit *u;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &job_path, &name, &result) < 0)
                return 0;
        if (t->ready && t->job_ended)
                t->job_ended(t, name, id, t->userdata);
        u = g_hash_table_lookup(t->units, name);
        if (!u || u->start_job != id)
                return 0;
        u->start_job = 0;
        log_debug("%s: start job %u %s", name, id, result);
        notify_unit(t, u, false);
        return 0;
}

/* The Unit interface's ActiveState, the two timestamps that tell whether the last run reached
 * active, and the id of the unit's job (0: none), out of GetAll's answer or a PropertiesChanged
 * signal (which carries them all). */
static int read_run_state(sd_bus_message *m, const char **ret_state, bool *ret_reached_active, uint32_t *ret_job) {
        const char *state = NULL, *job_path;
        uint64_t active_enter = 0, inactive_exit = 0;
        uint32_t job = 0;
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *key;

                r = sd_bus_message_read(m, "s", &key);
                if (r < 0)
                        return r;
                if (streq(key, "ActiveState"))
                        r = sd_bus_message_read(m, "v", "s", &state);
                else if (streq(key, "ActiveEnterTimestampMonotonic"))
                        r = sd_bus_message_read(m, "v", "t", &active_enter);
                else if (streq(key, "InactiveExitTimestampMonotonic"))
                        r = sd_bus_message_read(m, "v", "t", &inactive_exit);
                else if (streq(key, "Job"))
                        r = sd_bus_message_read(m, "v", "(uo)", &job, &job_path);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        if (!state)
                return -EBADMSG;
        *ret_state = state;
        *ret_reached_active = active_enter > 0 && active_enter >= inactive_exit;
        *ret_job = job;
        return 0;
}

/* A watched unit's signal, read whole for its timestamps; then the message is rewound for the
 * tracker's own reading. A state passed through while a job runs is not reported: a restart
 * goes through "inactive" and runs on, and its job's end is asked about anyway. */
static void report_run(UnitTracker *t, sd_bus_message *m, const char *name) {
        const char *state;
        bool reached_active;
        uint32_t job;

        if (read_run_state(m, &state, &reached_active, &job) >= 0 && job == 0)
                t->run_changed(name, 0, state, reached_active, t->userdata);
        (void) sd_bus_message_rewind(m, true);
        (void) sd_bus_message_skip(m, "s");
}

static int on_properties_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        const char *path = sd_bus_message_get_path(m), *interface, *key, *value;
        const char *active_state = NULL, *sub_state = NULL;
        _cleanup_free_ char *name = NULL;
        bool was_exited, watched;
        TrackedUnit *u;

        /* The object path is the escaped unit name, so a unit we have not met yet (one that
         * became active without a job, or after a re-enumeration) is recognised too. Decided
         * before the body is read: most units' signals are of no interest. */
        u = path ? g_hash_table_lookup(t->by_path, path) : NULL;
        if (!u && (!path || sd_bus_path_decode(path, SYSTEMD_UNIT_PATH_PREFIX, &name) <= 0))
                return 0;
        watched = t->run_watched && t->run_watched(u ? u->name : name, t->userdata);
        if (!u && !watched && !t->filter(name, t->userdata))
                return 0;

        if (sd_bus_message_read(m, "s", &interface) < 0 || !streq(interface, SYSTEMD_UNIT))
                return 0;
        if (watched) {
                report_run(t, m, u ? u->name : name);
                if (!u && !t->filter(name, t->userdata))
                        return 0;
        }
        if (sd_bus_message_enter_container(m, 'a', "{sv}") < 0)
                return 0;
        /* Skipping a variant is costly and a unit's signal carries some twenty: stop reading
         * once both states are in. */
        while ((!active_state || !sub_state) && sd_bus_message_enter_container(m, 'e', "sv") > 0) {
                if (sd_bus_message_read(m, "s", &key) < 0)
                        return 0;
                if (streq(key, "ActiveState") || streq(key, "SubState")) {
                        if (read_string_variant(m, &value) < 0 || sd_bus_message_exit_container(m) < 0)
                                return 0;
                        *(streq(key, "ActiveState") ? &active_state : &sub_state) = value;
                } else if (sd_bus_message_skip(m, "v") < 0)
                        return 0;
                if (sd_bus_message_exit_container(m) < 0)
                        return 0;
        }
        if (!active_state && !sub_state)
                return 0;

        if (!u)
                u = track(t, name, path);
        was_exited = is_exited(u);
        if (set_state(u, active_state, sub_state)) {
                log_debug("%s: %s (%s)", u->name, u->active_state ?: "?", u->sub_state ?: "?");
                if (is_exited(u) && !was_exited) {
                        /* Still counted until the manager says what is left: a running service
                         * must not lose its policy for the length of a round trip. */
                        u->exited_with_processes = true;
                        ask_processes(t, u);
                } else if (!is_exited(u))
                        u->exited_with_processes = false;
                notify_unit(t, u, false);
        }
        return 0;
}

static int schedule_retry(UnitTracker *t);

static GHashTable *new_unit_table(void) {
        return g_hash_table_new_full(g_str_hash, g_str_equal, NULL, tracked_unit_free);
}

static int on_list_units_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        g_autoptr(GHashTable) before = NULL;
        const char *name, *active, *sub, *path, *job_type;
        uint32_t job_id;
        int r;

        if (sd_bus_message_is_method_error(m, NULL)) {
                log_warning("Listing units failed: %s", sd_bus_message_get_error(m)->message);
                return schedule_retry(t);
        }

        /* A unit's history survives a re-enumeration: how often it stopped, and what is left
         * of an exited one (only newly exited units are asked). */
        before = t->units;
        t->units = new_unit_table();
        g_hash_table_remove_all(t->by_path);

        r = sd_bus_message_enter_container(m, 'a', "(ssssssouso)");
        if (r < 0)
                return schedule_retry(t);
        while ((r = sd_bus_message_read(m, "(ssssssouso)", &name, NULL, NULL, &active, &sub, NULL,
                                        &path, &job_id, &job_type, NULL)) > 0) {
                TrackedUnit *u;

                if (!t->filter(name, t->userdata))
                        continue;
                u = track(t, name, path);
                (void) set_state(u, active, sub);
                if (job_id != 0 && unit_job_type_is_start(job_type))
                        u->start_job = job_id;
                const TrackedUnit *prev = g_hash_table_lookup(before, name);

                if (prev)
                        u->stops = prev->stops;
                if (is_exited(u)) {
                        if (prev && is_exited(prev))
                                u->exited_with_processes = prev->exited_with_processes;
                        else
                                ask_processes(t, u);
                }
        }
        if (r < 0)
                return schedule_retry(t);

        t->enumeration_pending = true;
        if (t->processes_pending == 0)
                finish_enumeration(t);
        return 0;
}

static void finish_enumeration(UnitTracker *t) {
        t->enumeration_pending = false;
        if (!t->ready)
                log_info("Following the systemd manager: %u unit(s) match a policy", g_hash_table_size(t->units));
        t->ready = true;
        t->answered = true;
        t->warned_unavailable = false;
        notify_all(t);
}

static int list_units(UnitTracker *t) {
        t->generation++;
        return sd_bus_call_method_async(t->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                        "ListUnits", on_list_units_reply, t, "");
}

static int on_subscribe_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        int r;

        /* The manager keeps its subscribers across daemon-reexec: we are still subscribed. */
        if (sd_bus_message_is_method_error(m, NULL) &&
            !sd_bus_message_is_method_error(m, SYSTEMD_ERROR_ALREADY_SUBSCRIBED)) {
                if (!t->warned_unavailable)
                        log_warning("No systemd manager answers on the bus (%s); keeping the baseline and retrying every %us.",
                                    sd_bus_message_get_error(m)->message, (unsigned) (RETRY_USEC / 1000000));
                t->warned_unavailable = true;
                t->ready = false;
                if (!t->answered) {
                        t->answered = true;
                        if (t->changed)
                                t->changed(t, NULL, NULL, NULL, false, t->userdata);
                }
                return schedule_retry(t);
        }
        r = list_units(t);
        if (r < 0)
                return schedule_retry(t);
        return 0;
}

static int subscribe(UnitTracker *t) {
        return sd_bus_call_method_async(t->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                        "Subscribe", on_subscribe_reply, t, "");
}

static int on_retry(sd_event_source *s, uint64_t usec, void *userdata) {
        UnitTracker *t = userdata;

        log_debug("Asking the systemd manager again.");
        if (subscribe(t) < 0)
                return schedule_retry(t);
        return 0;
}

static int schedule_retry(UnitTracker *t) {
        int r;

        if (!t->retry) {
                r = sd_event_add_time_relative(t->event, &t->retry, CLOCK_MONOTONIC, RETRY_USEC, 0, on_retry, t);
                if (r < 0)
                        return log_error_errno(r, "Cannot arm the retry timer: %m");
                return 0;
        }

        r = sd_event_source_set_time_relative(t->retry, RETRY_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(t->retry, SD_EVENT_ONESHOT);
        if (r < 0)
                return log_error_errno(r, "Cannot re-arm the retry timer: %m");
        return 0;
}

static int on_name_owner_changed(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        const char *name, *old_owner, *new_owner;

        if (sd_bus_message_read(m, "sss", &name, &old_owner, &new_owner) < 0)
                return 0;
        if (new_owner[0] == '\0') {
                log_notice("The systemd manager left the bus; keeping the current state until it is back.");
                return 0;
        }
        /* Back after daemon-reexec (still subscribed) or a real restart (not any more): either
         * way, subscribe and enumerate afresh. */
        log_info("The systemd manager is back on the bus; enumerating its units again.");
        t->manager_reloading = false;
        if (subscribe(t) < 0)
                return schedule_retry(t);
        return 0;
}

static int on_reloading(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        UnitTracker *t = userdata;
        int active;

        if (sd_bus_message_read(m, "b", &active) < 0)
                return 0;
        t->manager_reloading = active;
        if (active)
                return 0;
        /* The signals sent while it re-created its units say little; one enumeration says all. */
        log_debug("The systemd manager finished reloading; enumerating its units again.");
        if (list_units(t) < 0)
                return schedule_retry(t);
        return 0;
}

int unit_tracker_new(sd_bus *bus, sd_event *event, UnitFilter filter, UnitsChanged changed,
                     void *userdata, UnitTracker **ret) {
        UnitTracker *t;

        t = g_new0(UnitTracker, 1);
        t->bus = sd_bus_ref(bus);
        t->event = sd_event_ref(event);
        t->filter = filter;
        t->changed = changed;
        t->userdata = userdata;
        t->units = new_unit_table();
        t->by_path = g_hash_table_new(g_str_hash, g_str_equal);

        *ret = t;
        return 0;
}

void unit_tracker_set_job_ended(UnitTracker *t, UnitJobEnded job_ended) {
        t->job_ended = job_ended;
}

void unit_tracker_set_job_new(UnitTracker *t, UnitJobNew job_new) {
        t->job_new = job_new;
}

void unit_tracker_set_run_watch(UnitTracker *t, UnitRunWatched watched, UnitActiveState changed) {
        t->run_watched = watched;
        t->run_changed = changed;
}

typedef struct ActiveStateQuery {
        char *unit;
        UnitActiveState callback;
        void *userdata;
} ActiveStateQuery;

static void active_state_query_free(void *p) {
        ActiveStateQuery *q = p;

        g_free(q->unit);
        g_free(q);
}

static int on_active_state_reply(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        ActiveStateQuery *q = userdata;
        const char *state = NULL;
        bool reached_active = false;
        uint32_t job;
        int r;

        r = -sd_bus_message_get_errno(m);
        if (r >= 0)
                r = read_run_state(m, &state, &reached_active, &job);
        q->callback(q->unit, r < 0 ? r : 0, r < 0 ? NULL : state, r >= 0 && reached_active, q->userdata);
        return 0;
}

int unit_tracker_query_active_state(UnitTracker *t, const char *unit, UnitActiveState callback, void *userdata) {
        _cleanup_free_ char *path = NULL;
        ActiveStateQuery *q;
        int r;

        r = sd_bus_path_encode(SYSTEMD_UNIT_PATH_PREFIX, unit, &path);
        if (r < 0)
                return r;
        q = g_new0(ActiveStateQuery, 1);
        *q = (ActiveStateQuery) { .unit = g_strdup(unit), .callback = callback, .userdata = userdata };
        return systemd_call_async(t->bus, path, "org.freedesktop.DBus.Properties", "GetAll", on_active_state_reply, q,
                                  active_state_query_free, "s", SYSTEMD_UNIT);
}

UnitTracker *unit_tracker_free(UnitTracker *t) {
        if (!t)
                return NULL;
        for (size_t i = 0; i < ELEMENTSOF(t->match_slots); i++)
                sd_bus_slot_unref(t->match_slots[i]);
        sd_event_source_disable_unref(t->retry);
        g_hash_table_destroy(t->by_path);
        g_hash_table_destroy(t->units);
        sd_event_unref(t->event);
        sd_bus_unref(t->bus);
        g_free(t);
        return NULL;
}

int unit_tracker_start(UnitTracker *t) {
        static const struct {
                const char *path, *interface, *member;
                sd_bus_message_handler_t handler;
        } manager_signals[] = {
                { SYSTEMD_PATH, SYSTEMD_MANAGER, "Reloading", on_reloading },
                { SYSTEMD_PATH, SYSTEMD_MANAGER, "UnitRemoved", on_unit_removed },
                { SYSTEMD_PATH, SYSTEMD_MANAGER, "JobNew", on_job_new },
                { SYSTEMD_PATH, SYSTEMD_MANAGER, "JobRemoved", on_job_removed },
        };
        int r;

        for (size_t i = 0; i < ELEMENTSOF(manager_signals); i++) {
                r = sd_bus_match_signal_async(t->bus, &t->match_slots[i], SYSTEMD_SERVICE,
                                              manager_signals[i].path, manager_signals[i].interface,
                                              manager_signals[i].member, manager_signals[i].handler,
                                              NULL, t);
                if (r < 0)
                        return log_error_errno(r, "Cannot watch systemd's %s signal: %m",
                                               manager_signals[i].member);
        }

        /* Only unit objects, and only their ActiveState matters: keep the match narrow. */
        r = sd_bus_add_match_async(t->bus, &t->match_slots[4],
                                   "type='signal',sender='" SYSTEMD_SERVICE "',"
                                   "interface='org.freedesktop.DBus.Properties',member='PropertiesChanged',"
                                   "arg0='" SYSTEMD_UNIT "',path_namespace='" SYSTEMD_UNIT_PATH_PREFIX "'",
                                   on_properties_changed, NULL, t);
        if (r < 0)
                return log_error_errno(r, "Cannot watch unit state changes: %m");

        r = sd_bus_add_match_async(t->bus, &t->match_slots[5],
                                   "type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',"
                                   "member='NameOwnerChanged',arg0='" SYSTEMD_SERVICE "'",
                                   on_name_owner_changed, NULL, t);
        if (r < 0)
                return log_error_errno(r, "Cannot watch the systemd manager's bus name: %m");

        r = subscribe(t);
        if (r < 0)
                return log_error_errno(r, "Cannot subscribe to the systemd manager: %m");
        return 0;
}

int unit_tracker_rescan(UnitTracker *t) {
        if (!t->ready)
                return 0; /* the pending subscribe/enumeration will use the new filter */
        return list_units(t);
}

/* Short: thpd is being stopped, and a manager that does not answer means no restart is coming. */
#define OWN_JOB_TIMEOUT_USEC (2 * UINT64_C(1000000))

static int get_property(sd_bus *bus, const char *path, const char *interface, const char *property,
                        sd_bus_message **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, SYSTEMD_SERVICE, path, "org.freedesktop.DBus.Properties", "Get");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "ss", interface, property);
        if (r < 0)
                return r;
        return sd_bus_call(bus, call, OWN_JOB_TIMEOUT_USEC, NULL, ret);
}

int unit_tracker_restart_queued_for_pid(UnitTracker *t, pid_t pid) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL, *job = NULL, *type = NULL;
        const char *unit_path, *job_path, *job_type;
        uint32_t job_id;
        int r;

        r = sd_bus_message_new_method_call(t->bus, &call, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "GetUnitByPID");
        if (r < 0)
                return r;
        r = sd_bus_message_append(call, "u", (uint32_t) pid);
        if (r < 0)
                return r;
        r = sd_bus_call(t->bus, call, OWN_JOB_TIMEOUT_USEC, NULL, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "o", &unit_path);
        if (r < 0)
                return r;

        r = get_property(t->bus, unit_path, SYSTEMD_UNIT, "Job", &job);
        if (r < 0)
                return r;
        r = sd_bus_message_read(job, "v", "(uo)", &job_id, &job_path);
        if (r < 0)
                return r;
        if (job_id == 0)
                return 0;

        r = get_property(t->bus, job_path, SYSTEMD_JOB, "JobType", &type);
        if (r < 0)
                return r;
        r = sd_bus_message_read(type, "v", "s", &job_type);
        if (r < 0)
                return r;
        return unit_job_type_is_restart(job_type);
}

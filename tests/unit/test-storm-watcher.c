/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <inttypes.h>
#include <math.h>

#include "log.h"
#include "storm.h"
#include "test-util.h"
#include "util.h"

/* The watcher on a scratch procfs tree: a writer in the same sd_event loop plays a storm into
 * vmstat, pressure/ and the kthread stat files, and the callback must see it come and go. A
 * plain file cannot carry a PSI trigger, so these runs use the IdlePollInterval= path. */

#define MSEC UINT64_C(1000)
#define SEC USEC_PER_SEC
#define WRITER_INTERVAL (10 * MSEC)
#define TEST_TIMEOUT (20 * SEC)
#define KHUGEPAGED_PID 38
#define KCOMPACTD_PID 36

typedef enum Stage {
        STAGE_CALM_BEFORE,
        STAGE_STORM,
        STAGE_CALM_AFTER,
        STAGE_DONE,
} Stage;

typedef struct Load {
        double stalls_per_sec, fail_ratio, psi_percent, khugepaged_percent;
} Load;

typedef struct Scenario {
        char *root;
        sd_event *event;
        StormWatcher *watcher;
        StormKind kind;
        Load storm, calm;
        uint64_t calm_before_usec;
        /* 0: the storm lasts until it is detected; else a burst this long, then calm for
         * calm_after_usec, at the end of which the watcher must be idle again. */
        uint64_t burst_usec, calm_after_usec;
        bool sampled_after_burst;

        Stage stage;
        uint64_t stage_since, last_write;
        bool sampled_while_calm;
        bool left_calm;
        /* cumulative counters as the fake kernel shows them */
        double stalls, fail, success, psi_usec, khugepaged_usec;
        pid_t khugepaged_pid;

        unsigned detected[_STORM_KIND_MAX], cleared[_STORM_KIND_MAX];
        uint64_t storm_started, detected_at, cleared_at;
        StormFigures trip;
        double max_khugepaged_percent;
        unsigned levels[8], n_levels;
} Scenario;

static uint64_t clk_tck(void) {
        return (uint64_t) sysconf(_SC_CLK_TCK);
}

static void write_kthread(const Scenario *sc, pid_t pid, const char *comm, double cpu_usec) {
        g_autofree char *rel = g_strdup_printf("%d/stat", (int) pid);
        uint64_t ticks = (uint64_t) (cpu_usec * (double) clk_tck() / (double) SEC);
        g_autofree char *line = g_strdup_printf("%d (%s) S 2 0 0 0 -1 %u 0 0 0 0 0 %" PRIu64 " 0 0 20 0 1 0 27 0 0 "
                                                "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0\n",
                                                (int) pid, comm, PROC_FLAG_KTHREAD | 0x40, ticks);

        test_write_file(sc->root, rel, line);
}

static void write_files(const Scenario *sc) {
        g_autofree char *vmstat = g_strdup_printf(
                "nr_free_pages 1049017\n"
                "allocstall_normal 0\n"
                "compact_migrate_scanned %" PRIu64 "\n"
                "compact_free_scanned %" PRIu64 "\n"
                "compact_stall %" PRIu64 "\n"
                "compact_fail %" PRIu64 "\n"
                "compact_success %" PRIu64 "\n"
                "thp_fault_alloc 1000\n"
                "thp_fault_fallback %" PRIu64 "\n",
                (uint64_t) (sc->stalls * 2000), (uint64_t) (sc->stalls * 5000), (uint64_t) sc->stalls,
                (uint64_t) sc->fail, (uint64_t) sc->success, (uint64_t) (sc->stalls / 2));
        g_autofree char *memory = g_strdup_printf("some avg10=0.00 avg60=0.00 avg300=0.00 total=%" PRIu64 "\n"
                                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n",
                                                  (uint64_t) sc->psi_usec);

        test_write_file(sc->root, "vmstat", vmstat);
        test_write_file(sc->root, "pressure/memory", memory);
        test_write_file(sc->root, "pressure/cpu", "some avg10=0.00 avg60=0.00 avg300=0.00 total=100\n"
                                                  "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
        write_kthread(sc, sc->khugepaged_pid, "khugepaged", sc->khugepaged_usec);
        write_kthread(sc, KCOMPACTD_PID, "kcompactd0", 0);
}

static void advance(Scenario *sc, uint64_t dt_usec, const Load *l) {
        double secs = (double) dt_usec / (double) SEC;
        double stalls = l->stalls_per_sec * secs;

        sc->stalls += stalls;
        sc->fail += stalls * l->fail_ratio;
        sc->success += stalls * (1 - l->fail_ratio);
        sc->psi_usec += l->psi_percent / 100.0 * (double) dt_usec;
        sc->khugepaged_usec += l->khugepaged_percent / 100.0 * (double) dt_usec;
}

static void set_stage(Scenario *sc, Stage stage, uint64_t now) {
        sc->stage = stage;
        sc->stage_since = now;
}

static int on_write(sd_event_source *s, uint64_t usec, void *userdata) {
        Scenario *sc = userdata;
        uint64_t now;

        ck_assert_int_ge(sd_event_now(sc->event, CLOCK_MONOTONIC, &now), 0);
        advance(sc, now - sc->last_write, sc->stage == STAGE_STORM ? &sc->storm : &sc->calm);
        sc->last_write = now;
        write_files(sc);

        switch (sc->stage) {
        case STAGE_CALM_BEFORE:
                /* Quiet polls must not start a sampling run. */
                if (storm_watcher_is_sampling(sc->watcher))
                        sc->sampled_while_calm = true;
                if (now - sc->stage_since >= sc->calm_before_usec) {
                        set_stage(sc, STAGE_STORM, now);
                        sc->storm_started = now;
                }
                break;
        case STAGE_STORM:
                if (sc->burst_usec > 0 && now - sc->stage_since >= sc->burst_usec)
                        set_stage(sc, STAGE_CALM_AFTER, now);
                break;
        case STAGE_CALM_AFTER:
                if (sc->burst_usec == 0)
                        break;
                if (storm_watcher_is_sampling(sc->watcher))
                        sc->sampled_after_burst = true;
                if (now - sc->stage_since >= sc->calm_after_usec && !storm_watcher_is_sampling(sc->watcher))
                        return sd_event_exit(sc->event, 0);
                break;
        case STAGE_DONE:
                /* After the storm cleared and the hold-down passed, the run ends. */
                if (!storm_watcher_is_sampling(sc->watcher))
                        return sd_event_exit(sc->event, 0);
                break;
        }

        ck_assert_int_ge(sd_event_source_set_time(s, usec + WRITER_INTERVAL), 0);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

static int on_timeout(sd_event_source *s, uint64_t usec, void *userdata) {
        Scenario *sc = userdata;

        return sd_event_exit(sc->event, -ETIMEDOUT);
}

static const char *journal_field(char **fields, const char *name) {
        size_t len = strlen(name);

        for (char **f = fields; f && *f; f++)
                if (strncmp(*f, name, len) == 0 && (*f)[len] == '=')
                        return *f + len + 1;
        ck_abort_msg("no journal field %s", name);
        return NULL;
}

/* What goes to the journal: the right MESSAGE_ID and kind, and the figures the callback got. */
static void check_journal(StormWatcher *w, StormEvent event, StormKind kind, const StormFigures *f) {
        g_auto(GStrv) fields = storm_watcher_journal_fields(w, event, kind);
        bool detected = event == STORM_EVENT_DETECTED;
        uint64_t window;

        ck_assert_ptr_nonnull(fields);
        ck_assert_str_eq(journal_field(fields, "MESSAGE_ID"),
                         detected ? STORM_MESSAGE_ID_DETECTED : STORM_MESSAGE_ID_CLEARED);
        ck_assert_str_eq(journal_field(fields, "THPD_STORM_KIND"), storm_kind_to_string(kind));
        ck_assert_str_eq(journal_field(fields, "THPD_STORM_EVENT"), detected ? "detected" : "cleared");
        ck_assert_ptr_nonnull(strstr(journal_field(fields, "MESSAGE"), detected ? "storm detected" : "storm cleared"));
        ck_assert_double_eq_tol(g_ascii_strtod(journal_field(fields, "THPD_COMPACT_STALLS_PER_SEC"), NULL),
                                f->compact_stalls_per_sec, 0.01);
        ck_assert_double_eq_tol(g_ascii_strtod(journal_field(fields, "THPD_KHUGEPAGED_CPU_PERCENT"), NULL),
                                f->khugepaged_cpu_percent, 0.1);
        ck_assert_int_eq(parse_u64(journal_field(fields, "THPD_STORM_WINDOW_USEC"), &window), 0);
        ck_assert_uint_eq(window, f->window_usec);
        if (!detected) {
                uint64_t duration;

                ck_assert_int_eq(parse_u64(journal_field(fields, "THPD_STORM_DURATION_USEC"), &duration), 0);
                ck_assert_uint_gt(duration, 0);
        }
}

static void on_storm(StormWatcher *w, StormEvent event, StormKind kind, const StormFigures *f, void *userdata) {
        Scenario *sc = userdata;
        uint64_t now;

        ck_assert_ptr_eq(w, sc->watcher);
        ck_assert_int_ge(sd_event_now(sc->event, CLOCK_MONOTONIC, &now), 0);

        switch (event) {
        case STORM_EVENT_DETECTED:
                ck_assert_int_ge(kind, 0);
                ck_assert_int_lt(kind, _STORM_KIND_MAX);
                ck_assert_ptr_nonnull(f);
                sc->detected[kind]++;
                if (kind != sc->kind)
                        break;
                ck_assert_int_eq(sc->stage, STAGE_STORM);
                ck_assert_int_eq(storm_watcher_get_phase(w, kind), STORM_PHASE_STORM);
                ck_assert_ptr_eq(storm_watcher_get_trip(w, kind), f);
                check_journal(w, event, kind, f);
                sc->trip = *f;
                sc->detected_at = now;
                set_stage(sc, STAGE_CALM_AFTER, now);
                break;

        case STORM_EVENT_CLEARED:
                ck_assert_ptr_nonnull(f);
                sc->cleared[kind]++;
                if (kind != sc->kind)
                        break;
                ck_assert_int_eq(sc->stage, STAGE_CALM_AFTER);
                ck_assert_int_eq(storm_watcher_get_phase(w, kind), STORM_PHASE_CALM);
                ck_assert_ptr_eq(storm_watcher_get_latest(w), f);
                check_journal(w, event, kind, f);
                sc->cleared_at = now;
                set_stage(sc, STAGE_DONE, now);
                break;

        case STORM_EVENT_MITIGATION_CHANGED:
                ck_assert_int_eq(kind, _STORM_KIND_INVALID);
                ck_assert_ptr_null(f);
                ck_assert_uint_lt(sc->n_levels, ELEMENTSOF(sc->levels));
                sc->levels[sc->n_levels++] = storm_watcher_get_mitigation_level(w);
                break;

        default:
                ck_abort_msg("unexpected event %d", event);
        }
}

static void config_for_test(StormConfig *cfg) {
        static const char *const settings[][2] = {
                { "Action", "mitigate" },
                { "Window", "100ms" },
                { "StormAfter", "300ms" },
                { "CoolAfter", "300ms" },
                { "HoldDown", "200ms" },
                { "EscalateAfter", "1h" },
                { "SampleInterval", "20ms" },
                { "IdlePollInterval", "50ms" },
        };

        storm_config_init_defaults(cfg);
        for (size_t i = 0; i < ELEMENTSOF(settings); i++)
                ck_assert_int_eq(storm_config_set(cfg, settings[i][0], settings[i][1]), 0);
}

static void run_scenario(Scenario *sc, const StormConfig *cfg) {
        sd_event_source *writer = NULL, *timeout = NULL;
        uint64_t now;
        int r;

        sc->root = test_mkdtemp();
        sc->khugepaged_pid = KHUGEPAGED_PID;
        write_files(sc);

        ck_assert_int_ge(sd_event_new(&sc->event), 0);
        ck_assert_int_ge(sd_event_now(sc->event, CLOCK_MONOTONIC, &now), 0);
        sc->last_write = now;
        set_stage(sc, STAGE_CALM_BEFORE, now);

        ck_assert_int_eq(storm_watcher_new(sc->event, sc->root, NULL, cfg, on_storm, sc, &sc->watcher), 0);
        ck_assert(!storm_watcher_has_psi_trigger(sc->watcher));
        ck_assert(!storm_watcher_is_sampling(sc->watcher));
        ck_assert_ptr_null(storm_watcher_get_latest(sc->watcher));

        ck_assert_int_ge(sd_event_add_time(sc->event, &writer, CLOCK_MONOTONIC, now + WRITER_INTERVAL, 0, on_write, sc), 0);
        ck_assert_int_ge(sd_event_add_time(sc->event, &timeout, CLOCK_MONOTONIC, now + TEST_TIMEOUT, 0, on_timeout, sc), 0);

        r = sd_event_loop(sc->event);
        ck_assert_msg(r == 0, "event loop ended with %d (%s) in stage %d", r, strerror(-r), sc->stage);

        sd_event_source_unref(writer);
        sd_event_source_unref(timeout);
}

static void scenario_done(Scenario *sc) {
        storm_watcher_free(sc->watcher);
        sd_event_unref(sc->event);
        test_rm_rf(sc->root);
        g_free(sc->root);
}

START_TEST(test_direct_compaction_storm) {
        Scenario sc = {
                .kind = STORM_KIND_DIRECT_COMPACTION,
                .storm = { .stalls_per_sec = 2000, .fail_ratio = 0.9, .psi_percent = 40 },
                .calm = { .psi_percent = 1 },
                .calm_before_usec = 400 * MSEC,
        };
        StormConfig cfg;

        config_for_test(&cfg);
        run_scenario(&sc, &cfg);

        ck_assert(!sc.sampled_while_calm);
        ck_assert_uint_eq(sc.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_eq(sc.cleared[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_eq(sc.detected[STORM_KIND_KHUGEPAGED] + sc.detected[STORM_KIND_KCOMPACTD], 0);

        /* Not before StormAfter of hot windows; the first of them may have begun up to a window
         * before the storm, and still be hot on average, and the window that ends nearest to
         * StormAfter= (or CoolAfter=) counts, which may be half a window short of it: half of
         * the window as it was measured, which a loaded machine stretches (a late sample). So a
         * whole window of slack for that half. */
        ck_assert_uint_ge(sc.detected_at, sc.storm_started + cfg.storm_after_usec - 2 * cfg.window_usec);
        ck_assert_uint_ge(sc.cleared_at, sc.detected_at + cfg.cool_after_usec - cfg.window_usec);

        /* The figures are what the writer played, give or take timer jitter. */
        ck_assert_double_gt(sc.trip.compact_stalls_per_sec, 500);
        ck_assert_double_lt(sc.trip.compact_stalls_per_sec, 4000);
        ck_assert_double_eq_tol(sc.trip.compact_fail_ratio, 0.9, 0.05);
        ck_assert(sc.trip.has_psi_memory);
        /* PSI is a share of time, so a writer whose timer slips under load (ASan, a busy
         * machine) plays less of it; what must hold is that it was above the threshold. */
        ck_assert_double_gt(sc.trip.psi_memory_some_percent, cfg.pressure_percent);
        ck_assert_double_le(sc.trip.psi_memory_some_percent, 100);

        /* Mitigation: step 1 at detection, lifted after the hold-down once calm. */
        ck_assert_uint_eq(sc.n_levels, 2);
        ck_assert_uint_eq(sc.levels[0], 1);
        ck_assert_uint_eq(sc.levels[1], 0);
        ck_assert_uint_eq(storm_watcher_get_mitigation_level(sc.watcher), 0);
        ck_assert(storm_state_is_idle(storm_watcher_get_state(sc.watcher)));

        scenario_done(&sc);
}
END_TEST

/* Without a PSI trigger the watcher polls every IdlePollInterval=, much longer than StormAfter=
 * (10 s and 3 s by default; a tenth of that here). A poll that was not quiet only starts a
 * sampling run, as the trigger would: a burst shorter than StormAfter= is no storm, however hot,
 * and sustained heat still is. */
static void config_for_fallback(StormConfig *cfg) {
        config_for_test(cfg);
        ck_assert_int_eq(storm_config_set(cfg, "IdlePollInterval", "1s"), 0);
        ck_assert_int_eq(storm_config_set(cfg, "StormAfter", "500ms"), 0);
}

START_TEST(test_fallback_burst_is_no_storm) {
        Scenario sc = {
                .kind = STORM_KIND_DIRECT_COMPACTION,
                .storm = { .stalls_per_sec = 2000, .fail_ratio = 0.95, .psi_percent = 40 },
                .calm = { .psi_percent = 1 },
                .calm_before_usec = 400 * MSEC,
                .burst_usec = 150 * MSEC,
                .calm_after_usec = 2500 * MSEC,
        };
        StormConfig cfg;

        config_for_fallback(&cfg);
        run_scenario(&sc, &cfg);

        ck_assert(!sc.sampled_while_calm);
        /* The poll that saw the burst started a run, which ended calm. */
        ck_assert(sc.sampled_after_burst);
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                ck_assert_uint_eq(sc.detected[k], 0);
        ck_assert_uint_eq(sc.n_levels, 0);
        ck_assert(storm_state_is_idle(storm_watcher_get_state(sc.watcher)));

        scenario_done(&sc);
}
END_TEST

START_TEST(test_fallback_sustained_storm) {
        Scenario sc = {
                .kind = STORM_KIND_DIRECT_COMPACTION,
                .storm = { .stalls_per_sec = 2000, .fail_ratio = 0.95, .psi_percent = 40 },
                .calm = { .psi_percent = 1 },
                .calm_before_usec = 400 * MSEC,
        };
        StormConfig cfg;

        config_for_fallback(&cfg);
        run_scenario(&sc, &cfg);

        ck_assert(!sc.sampled_while_calm);
        ck_assert_uint_eq(sc.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_eq(sc.cleared[STORM_KIND_DIRECT_COMPACTION], 1);
        /* StormAfter= of heat sampled after the poll that saw it first, not the poll interval. */
        ck_assert_uint_ge(sc.detected_at, sc.storm_started + cfg.storm_after_usec - 2 * cfg.window_usec);
        /* A late timer on a loaded machine stretches a sampling window; only a trip
         * measured across the whole idle poll means the poll itself was judged. */
        ck_assert_uint_lt(sc.trip.window_usec, cfg.idle_poll_interval_usec);

        scenario_done(&sc);
}
END_TEST

START_TEST(test_khugepaged_storm) {
        Scenario sc = {
                .kind = STORM_KIND_KHUGEPAGED,
                .storm = { .psi_percent = 15, .khugepaged_percent = 80 },
                .calm = { .psi_percent = 1, .khugepaged_percent = 1 },
                .calm_before_usec = 300 * MSEC,
        };
        StormConfig cfg;

        config_for_test(&cfg);
        /* Clock ticks are 10 ms: a window of a few ticks would be too coarse for a CPU share. */
        ck_assert_int_eq(storm_config_set(&cfg, "Window", "200ms"), 0);
        ck_assert_int_eq(storm_config_set(&cfg, "StormAfter", "400ms"), 0);
        ck_assert_int_eq(storm_config_set(&cfg, "CoolAfter", "400ms"), 0);
        run_scenario(&sc, &cfg);

        ck_assert_uint_eq(sc.detected[STORM_KIND_KHUGEPAGED], 1);
        ck_assert_uint_eq(sc.cleared[STORM_KIND_KHUGEPAGED], 1);
        ck_assert_uint_eq(sc.detected[STORM_KIND_DIRECT_COMPACTION], 0);
        ck_assert_double_gt(sc.trip.khugepaged_cpu_percent, cfg.kthread_cpu_percent);
        ck_assert_double_le(sc.trip.khugepaged_cpu_percent, 100);
        ck_assert_uint_ge(sc.n_levels, 1);
        ck_assert_uint_eq(sc.levels[0], storm_kind_mitigation_start(STORM_KIND_KHUGEPAGED));

        scenario_done(&sc);
}
END_TEST

/* khugepaged restarts with a new pid (THP set to never and back) during a run: the old pid's
 * CPU time must not be compared with the new one's. */
static int on_restart_write(sd_event_source *s, uint64_t usec, void *userdata) {
        Scenario *sc = userdata;
        uint64_t now;

        ck_assert_int_ge(sd_event_now(sc->event, CLOCK_MONOTONIC, &now), 0);

        if (sc->stage == STAGE_CALM_BEFORE && now - sc->stage_since >= 200 * MSEC) {
                /* Start a run with a pressure blip, then swap khugepaged for one with a lot of
                 * accumulated CPU time: a wrong subtraction would read as a huge share. */
                sc->psi_usec += 40 * MSEC;
                set_stage(sc, STAGE_STORM, now);
        } else if (sc->stage == STAGE_STORM && storm_watcher_is_sampling(sc->watcher) &&
                   now - sc->stage_since >= 100 * MSEC) {
                g_autofree char *old = g_strdup_printf("%s/%d", sc->root, KHUGEPAGED_PID);

                test_rm_rf(old);
                sc->khugepaged_pid = 4000;
                sc->khugepaged_usec = 3600.0 * (double) SEC;
                set_stage(sc, STAGE_CALM_AFTER, now);
        } else if (sc->stage == STAGE_CALM_AFTER && now - sc->stage_since >= 600 * MSEC)
                return sd_event_exit(sc->event, 0);

        /* One bad window would already show: as a suspect phase and in the figures. */
        if (storm_watcher_get_phase(sc->watcher, STORM_KIND_KHUGEPAGED) != STORM_PHASE_CALM)
                sc->left_calm = true;
        if (storm_watcher_get_latest(sc->watcher))
                sc->max_khugepaged_percent = MAX(sc->max_khugepaged_percent,
                                                 storm_watcher_get_latest(sc->watcher)->khugepaged_cpu_percent);

        advance(sc, now - sc->last_write, &sc->calm);
        sc->last_write = now;
        write_files(sc);

        ck_assert_int_ge(sd_event_source_set_time(s, usec + WRITER_INTERVAL), 0);
        return sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
}

START_TEST(test_kthread_restart) {
        Scenario sc = {
                .kind = STORM_KIND_KHUGEPAGED,
                .calm = { .psi_percent = 1, .khugepaged_percent = 1 },
        };
        sd_event_source *writer = NULL, *timeout = NULL;
        const StormFigures *latest;
        StormConfig cfg;
        uint64_t now;

        config_for_test(&cfg);
        sc.root = test_mkdtemp();
        sc.khugepaged_pid = KHUGEPAGED_PID;
        write_files(&sc);

        ck_assert_int_ge(sd_event_new(&sc.event), 0);
        ck_assert_int_ge(sd_event_now(sc.event, CLOCK_MONOTONIC, &now), 0);
        sc.last_write = now;
        set_stage(&sc, STAGE_CALM_BEFORE, now);
        ck_assert_int_eq(storm_watcher_new(sc.event, sc.root, NULL, &cfg, on_storm, &sc, &sc.watcher), 0);
        ck_assert_int_ge(sd_event_add_time(sc.event, &writer, CLOCK_MONOTONIC, now + WRITER_INTERVAL, 0,
                                           on_restart_write, &sc), 0);
        ck_assert_int_ge(sd_event_add_time(sc.event, &timeout, CLOCK_MONOTONIC, now + TEST_TIMEOUT, 0, on_timeout, &sc), 0);
        ck_assert_int_eq(sd_event_loop(sc.event), 0);

        ck_assert_int_eq(sc.stage, STAGE_CALM_AFTER);
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                ck_assert_uint_eq(sc.detected[k], 0);
        ck_assert(!sc.left_calm);
        ck_assert_double_lt(sc.max_khugepaged_percent, cfg.kthread_cpu_percent);
        ck_assert_int_eq(storm_watcher_get_phase(sc.watcher, STORM_KIND_KHUGEPAGED), STORM_PHASE_CALM);
        latest = storm_watcher_get_latest(sc.watcher);
        ck_assert_ptr_nonnull(latest);
        ck_assert_double_lt(latest->khugepaged_cpu_percent, cfg.kthread_cpu_percent);

        sd_event_source_unref(writer);
        sd_event_source_unref(timeout);
        scenario_done(&sc);
}
END_TEST

START_TEST(test_new_errors) {
        g_autofree char *root = test_mkdtemp();
        sd_event *e = NULL;
        StormWatcher *w = NULL;
        StormConfig cfg;

        config_for_test(&cfg);
        ck_assert_int_ge(sd_event_new(&e), 0);

        /* Nothing to watch without vmstat. */
        ck_assert_int_eq(storm_watcher_new(e, root, NULL, &cfg, NULL, NULL, &w), -ENOENT);
        test_write_file(root, "vmstat", "this is not vmstat\n");
        ck_assert_int_eq(storm_watcher_new(e, root, NULL, &cfg, NULL, NULL, &w), -EBADMSG);
        ck_assert_ptr_null(w);

        /* vmstat alone is enough: no PSI, no kthreads. */
        test_write_file(root, "vmstat", "compact_stall 0\n");
        ck_assert_int_eq(storm_watcher_new(e, root, NULL, &cfg, NULL, NULL, &w), 0);
        ck_assert(!storm_watcher_has_psi_trigger(w));
        ck_assert_int_eq(storm_watcher_get_phase(w, STORM_KIND_KCOMPACTD), STORM_PHASE_CALM);
        ck_assert_int_eq(storm_watcher_get_phase(w, _STORM_KIND_MAX), _STORM_PHASE_INVALID);
        ck_assert_ptr_null(storm_watcher_get_trip(w, STORM_KIND_KHUGEPAGED));
        ck_assert_ptr_null(storm_watcher_journal_fields(w, STORM_EVENT_DETECTED, STORM_KIND_KHUGEPAGED));
        ck_assert_ptr_null(storm_watcher_journal_fields(w, STORM_EVENT_CLEARED, STORM_KIND_KHUGEPAGED));
        w = storm_watcher_free(w);
        ck_assert_ptr_null(storm_watcher_free(NULL));

        sd_event_unref(e);
        test_rm_rf(root);
}
END_TEST

START_TEST(test_real_psi_trigger) {
        sd_event *e = NULL;
        StormWatcher *w = NULL;
        StormConfig cfg;

        /* Only reads and a PSI trigger, which goes away with its fd: no knob is touched. */
        storm_config_init_defaults(&cfg);
        ck_assert_int_ge(sd_event_new(&e), 0);
        ck_assert_int_eq(storm_watcher_new(e, "/proc", NULL, &cfg, NULL, NULL, &w), 0);
        /* The kernel accepted the trigger: an idle watcher arms no timer at all. */
        ck_assert(storm_watcher_has_psi_trigger(w));
        ck_assert(!storm_watcher_is_sampling(w));

        storm_watcher_free(w);
        sd_event_unref(e);
}
END_TEST

int main(int argc, char *argv[]) {
        Suite *s;
        TCase *tc;

        /* The watcher logs every storm as a warning; keep the test output to the failures. */
        log_set_max_level(LOG_ERR);

        /* This kernel's PSI, which a kernel may be built without or boot with psi=0. */
        if (argc > 1 && streq(argv[1], "--psi")) {
                if (access("/proc/pressure/memory", R_OK) < 0)
                        return test_skip("no /proc/pressure/memory (PSI disabled or not built)");
                s = suite_create("storm-watcher");
                tc = tcase_create("real-procfs");
                tcase_add_test(tc, test_real_psi_trigger);
                suite_add_tcase(s, tc);
                return test_run_suite(s);
        }

        s = suite_create("storm-watcher");
        tc = tcase_create("scratch-procfs");
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_direct_compaction_storm);
        tcase_add_test(tc, test_fallback_burst_is_no_storm);
        tcase_add_test(tc, test_fallback_sustained_storm);
        tcase_add_test(tc, test_khugepaged_storm);
        tcase_add_test(tc, test_kthread_restart);
        tcase_add_test(tc, test_new_errors);
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <math.h>

#include "knob.h"
#include "storm-classify.h"
#include "test-util.h"
#include "util.h"

#define SEC USEC_PER_SEC
/* Sample clocks start well after boot, as CLOCK_MONOTONIC does for a daemon. */
#define T0 (1000 * SEC)

/* What a replay saw, to compare with what the recording's shape says should happen. */
typedef struct Trace {
        unsigned detected[_STORM_KIND_MAX], cleared[_STORM_KIND_MAX];
        uint64_t detected_at[_STORM_KIND_MAX], cleared_at[_STORM_KIND_MAX];
        StormPhase phases[_STORM_KIND_MAX][64]; /* the distinct phases each kind went through */
        unsigned n_phases[_STORM_KIND_MAX];
        unsigned ignored, windows, runs;
        unsigned levels[16];                    /* mitigation level after each change */
        uint64_t level_at[16];
        unsigned n_levels;
        double max_window_stalls, max_window_psi;
} Trace;

static void trace_init(Trace *t) {
        *t = (Trace) {};
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                t->phases[k][0] = STORM_PHASE_CALM;
                t->n_phases[k] = 1;
        }
}

static void trace_step(Trace *t, const StormState *st, const StormChanges *c, uint64_t now, bool was_idle) {
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                StormPhase p = st->kinds[k].phase;

                if (c->detected & (1u << k)) {
                        t->detected[k]++;
                        t->detected_at[k] = now;
                }
                if (c->cleared & (1u << k)) {
                        t->cleared[k]++;
                        t->cleared_at[k] = now;
                }
                if (p != t->phases[k][t->n_phases[k] - 1]) {
                        ck_assert_uint_lt(t->n_phases[k], ELEMENTSOF(t->phases[k]));
                        t->phases[k][t->n_phases[k]++] = p;
                }
        }
        if (c->interval_ignored)
                t->ignored++;
        if (c->window_completed) {
                t->windows++;
                t->max_window_stalls = MAX(t->max_window_stalls, st->latest.compact_stalls_per_sec);
                t->max_window_psi = MAX(t->max_window_psi, st->latest.psi_memory_some_percent);
        }
        if (c->mitigation_changed) {
                ck_assert_uint_lt(t->n_levels, ELEMENTSOF(t->levels));
                t->levels[t->n_levels] = st->mitigation_level;
                t->level_at[t->n_levels++] = now;
        }
        if (was_idle && !storm_state_is_idle(st))
                t->runs++;
}

static StormChanges step(const StormConfig *cfg, StormState *st, const StormSample *prev, const StormSample *cur,
                         Trace *t) {
        bool was_idle = storm_state_is_idle(st);
        StormChanges c = storm_classify(cfg, st, prev, cur);

        trace_step(t, st, &c, cur->timestamp_usec, was_idle);
        return c;
}

static void assert_phases(const Trace *t, StormKind k, const StormPhase *expected, size_t n) {
        ck_assert_uint_eq(t->n_phases[k], n);
        for (size_t i = 0; i < n; i++)
                ck_assert_msg(t->phases[k][i] == expected[i], "%s: phase %zu is %s, expected %s",
                              storm_kind_to_string(k), i, storm_phase_to_string(t->phases[k][i]),
                              storm_phase_to_string(expected[i]));
}

/* Recordings: tests/data/storm/NAME, one sample per line, columns named by the header. */
static GArray *load_recording(const char *name) {
        static const struct {
                const char *column;
                size_t offset;
        } columns[] = {
                { "compact_stall",             offsetof(StormSample, vmstat.compact_stall) },
                { "compact_fail",              offsetof(StormSample, vmstat.compact_fail) },
                { "compact_success",           offsetof(StormSample, vmstat.compact_success) },
                { "compact_migrate_scanned",   offsetof(StormSample, vmstat.compact_migrate_scanned) },
                { "compact_free_scanned",      offsetof(StormSample, vmstat.compact_free_scanned) },
                { "compact_daemon_wake",       offsetof(StormSample, vmstat.compact_daemon_wake) },
                { "thp_fault_alloc",           offsetof(StormSample, vmstat.thp_fault_alloc) },
                { "thp_fault_fallback",        offsetof(StormSample, vmstat.thp_fault_fallback) },
                { "thp_collapse_alloc",        offsetof(StormSample, vmstat.thp_collapse_alloc) },
                { "thp_collapse_alloc_failed", offsetof(StormSample, vmstat.thp_collapse_alloc_failed) },
                { "allocstall",                offsetof(StormSample, vmstat.allocstall) },
                { "khugepaged_cpu_usec",       offsetof(StormSample, khugepaged_cpu_usec) },
                { "kcompactd_cpu_usec",        offsetof(StormSample, kcompactd_cpu_usec) },
                { "psi_memory_some_usec",      offsetof(StormSample, psi_memory_some_usec) },
                { "psi_memory_full_usec",      offsetof(StormSample, psi_memory_full_usec) },
                { "psi_cpu_some_usec",         offsetof(StormSample, psi_cpu_some_usec) },
        };
        const char *root = g_getenv("THPD_SOURCE_ROOT");
        g_autofree char *dir = NULL, *content = NULL;
        g_auto(GStrv) lines = NULL, header = NULL;
        GArray *samples = g_array_new(false, true, sizeof(StormSample));
        size_t map[32];

        ck_assert_ptr_nonnull(root);
        dir = g_build_filename(root, "tests", "data", "storm", NULL);
        content = test_read_file(dir, name);
        lines = g_strsplit(content, "\n", -1);

        for (char **l = lines; *l; l++) {
                g_auto(GStrv) words = NULL;
                StormSample s = {
                        .has_khugepaged = true, .has_kcompactd = true,
                        .has_psi_memory = true, .has_psi_cpu = true,
                };
                uint64_t v;

                if ((*l)[0] == '\0' || (*l)[0] == '#')
                        continue;
                words = g_strsplit_set(*l, " ", -1);

                if (!header) {
                        header = g_steal_pointer(&words);
                        ck_assert_uint_le(g_strv_length(header), ELEMENTSOF(map));
                        ck_assert_str_eq(header[0], "t_ms");
                        for (guint i = 1; header[i]; i++) {
                                map[i] = SIZE_MAX;
                                for (size_t j = 0; j < ELEMENTSOF(columns); j++)
                                        if (streq(header[i], columns[j].column))
                                                map[i] = columns[j].offset;
                                ck_assert_msg(map[i] != SIZE_MAX, "%s: unknown column %s", name, header[i]);
                        }
                        continue;
                }

                ck_assert_uint_eq(g_strv_length(words), g_strv_length(header));
                ck_assert_int_eq(parse_u64(words[0], &v), 0);
                s.timestamp_usec = T0 + v * 1000;
                for (guint i = 1; words[i]; i++) {
                        ck_assert_int_eq(parse_u64(words[i], &v), 0);
                        *(uint64_t *) ((uint8_t *) &s + map[i]) = v;
                }
                g_array_append_val(samples, s);
        }

        ck_assert_uint_gt(samples->len, 2);
        return samples;
}

static void replay(const StormConfig *cfg, StormState *st, GArray *samples, Trace *t) {
        for (guint i = 1; i < samples->len; i++)
                step(cfg, st, &g_array_index(samples, StormSample, i - 1), &g_array_index(samples, StormSample, i), t);
}

/* Synthetic load for shapes the recordings do not cover. */
typedef struct Load {
        double stalls_per_sec;
        double fail_ratio;
        double psi_percent;
        double khugepaged_percent;
        double kcompactd_percent;
        bool other_orders;      /* the stalls are not THP faults (page cache, other high orders) */
        uint64_t size_kb;       /* the THP faults are of this size, counted in its stats/, not vmstat's */
} Load;

static const Load calm_load = { .stalls_per_sec = 0, .psi_percent = 1 };
static const Load compaction_storm = { .stalls_per_sec = 80, .fail_ratio = 0.9, .psi_percent = 30, .kcompactd_percent = 5 };

static StormSample gen_start(void) {
        return (StormSample) {
                .timestamp_usec = T0,
                .vmstat = { .compact_stall = 100, .compact_fail = 20, .compact_success = 80 },
                .has_khugepaged = true, .has_kcompactd = true,
                .has_psi_memory = true, .has_psi_cpu = true,
                .psi_memory_some_usec = 5 * SEC,
                .sizes = { { .size_kb = 64, .fault_alloc = 300 }, { .size_kb = 2048, .fault_alloc = 900 } },
                .pmd_size_kb = 2048,
        };
}

static StormSizeCounters *gen_size(StormSample *s, uint64_t size_kb) {
        for (size_t i = 0; i < STORM_SIZES_MAX; i++)
                if (s->sizes[i].size_kb == size_kb)
                        return &s->sizes[i];
        ck_abort_msg("no size %llu kB in the sample", (unsigned long long) size_kb);
        return NULL;
}

static void gen_advance(StormSample *s, uint64_t dt_usec, const Load *l) {
        double secs = (double) dt_usec / (double) SEC;
        uint64_t stalls = (uint64_t) llround(l->stalls_per_sec * secs);
        uint64_t fail = (uint64_t) llround((double) stalls * l->fail_ratio);

        s->timestamp_usec += dt_usec;
        s->vmstat.compact_stall += stalls;
        s->vmstat.compact_fail += fail;
        s->vmstat.compact_success += stalls - fail;
        if (l->size_kb > 0) {
                StormSizeCounters *c = gen_size(s, l->size_kb);

                c->fault_alloc += stalls - stalls / 2;
                c->fault_fallback += stalls / 2;
                c->split += stalls / 4;
        } else if (!l->other_orders)
                s->vmstat.thp_fault_fallback += stalls / 2;
        s->psi_memory_some_usec += (uint64_t) llround(l->psi_percent / 100.0 * (double) dt_usec);
        s->khugepaged_cpu_usec += (uint64_t) llround(l->khugepaged_percent / 100.0 * (double) dt_usec);
        s->kcompactd_cpu_usec += (uint64_t) llround(l->kcompactd_percent / 100.0 * (double) dt_usec);
}

/* Runs `seconds` one-second intervals of load from *s. */
static void gen_run(const StormConfig *cfg, StormState *st, StormSample *s, unsigned seconds, const Load *l, Trace *t) {
        for (unsigned i = 0; i < seconds; i++) {
                StormSample prev = *s;

                gen_advance(s, SEC, l);
                step(cfg, st, &prev, s, t);
        }
}

/* The recordings of real workloads (tools/record-storm-trace.py; each file's header says how). */
#define RECORDED_STORM "recorded-storm.txt"
/* The header's "onset at t_ms=": the first second of the 40 s of faulting that stalled. */
#define RECORDED_STORM_ONSET (T0 + 21000 * 1000)
/* ... and the last second that did. */
#define RECORDED_STORM_END (T0 + 48000 * 1000)
#define RECORDED_SPIKE "recorded-spike.txt"
static const char *const recorded_ordinary[] = {
        "recorded-page-cache-churn.txt",
        "recorded-compile.txt",
        "recorded-jvm-heap.txt",
        "recorded-jvm-heap-large.txt",
};
/* The figure: a sustained storm is detected, and mitigated, within this of its onset. */
#define DETECT_WITHIN (5 * SEC)

/* Whether the trace shows, at sample i, what the PSI trigger waits for: memory "some" stall of
 * storm_config_wake_percent() over the last trigger window (2 s; here at the trace's 1 s
 * resolution, so never earlier than the kernel would fire). */
static bool trace_wakes(const StormConfig *cfg, GArray *samples, guint i) {
        const StormSample *cur = &g_array_index(samples, StormSample, i);
        const uint64_t window = 2 * SEC;

        for (guint j = 0; j < i; j++) {
                const StormSample *old = &g_array_index(samples, StormSample, j);

                if (cur->timestamp_usec - old->timestamp_usec > window + SEC / 10)
                        continue;
                return (double) (cur->psi_memory_some_usec - old->psi_memory_some_usec) >=
                        storm_config_wake_percent(cfg) / 100.0 * (double) window;
        }
        return false;
}

/* Replays a recording the way the watcher meets it on a kernel with PSI: idle until the trace
 * reaches the trigger's level, a run from there (the first sample only starts it), idle again
 * once the classifier says so. */
static void replay_watcher(const StormConfig *cfg, StormState *st, GArray *samples, Trace *t) {
        for (guint i = 1; i < samples->len; i++) {
                const StormSample *cur = &g_array_index(samples, StormSample, i);

                if (!storm_state_is_idle(st))
                        step(cfg, st, &g_array_index(samples, StormSample, i - 1), cur, t);
                else if (trace_wakes(cfg, samples, i)) {
                        (void) storm_classify(cfg, st, NULL, cur);
                        t->runs++;
                }
        }
}

START_TEST(test_recorded_storm) {
        const StormPhase expected[] = {
                STORM_PHASE_CALM, STORM_PHASE_SUSPECT, STORM_PHASE_STORM, STORM_PHASE_COOLING, STORM_PHASE_CALM,
        };
        const StormPhase calm_only[] = { STORM_PHASE_CALM };
        g_autoptr(GArray) samples = load_recording(RECORDED_STORM);
        StormConfig cfg;
        StormState st;
        Trace t;
        const StormFigures *trip;

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;
        storm_state_init(&st);
        trace_init(&t);
        replay_watcher(&cfg, &st, samples, &t);

        ck_assert_uint_eq(t.ignored, 0);
        assert_phases(&t, STORM_KIND_DIRECT_COMPACTION, expected, ELEMENTSOF(expected));
        assert_phases(&t, STORM_KIND_KHUGEPAGED, calm_only, 1);
        assert_phases(&t, STORM_KIND_KCOMPACTD, calm_only, 1);

        /* Detected once, within 5 s of the onset, and not before StormAfter= of it. */
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_ge(t.detected_at[STORM_KIND_DIRECT_COMPACTION], RECORDED_STORM_ONSET + cfg.storm_after_usec);
        ck_assert_uint_le(t.detected_at[STORM_KIND_DIRECT_COMPACTION], RECORDED_STORM_ONSET + DETECT_WITHIN);
        /* Mitigated at the same sample: step 1, defrag=defer. */
        ck_assert_uint_eq(t.n_levels, 1);
        ck_assert_uint_eq(t.levels[0], 1);
        ck_assert_uint_eq(t.level_at[0], t.detected_at[STORM_KIND_DIRECT_COMPACTION]);

        /* The storm did not feel like pressure: it tripped on the failed stalls alone. */
        trip = &st.kinds[STORM_KIND_DIRECT_COMPACTION].trip;
        ck_assert_double_ge(trip->compact_fails_per_sec, cfg.compact_fails_per_sec);
        ck_assert_double_gt(trip->compact_fail_ratio, cfg.fail_ratio);
        ck_assert(trip->has_psi_memory);
        ck_assert_double_lt(trip->psi_memory_some_percent, cfg.pressure_percent);

        /* Clearing stays slow: CoolAfter= of calm after the last stall, and the mitigation stays
         * for HoldDown=, beyond the end of the recording. */
        ck_assert_uint_eq(t.cleared[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_ge(t.cleared_at[STORM_KIND_DIRECT_COMPACTION], RECORDED_STORM_END + cfg.cool_after_usec);
        ck_assert_uint_le(t.cleared_at[STORM_KIND_DIRECT_COMPACTION],
                          RECORDED_STORM_END + cfg.cool_after_usec + 2 * cfg.window_usec);
        ck_assert_uint_eq(st.mitigation_level, 1);
        ck_assert(!storm_state_is_idle(&st));
}
END_TEST

/* The same storm sampled from the first line (a run already going, or polling without PSI):
 * the same bound, and with Action=log nothing changes. */
START_TEST(test_recorded_storm_sampled_throughout) {
        g_autoptr(GArray) samples = load_recording(RECORDED_STORM);
        StormConfig cfg;
        StormState st;
        Trace t;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);
        replay(&cfg, &st, samples, &t);

        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_ge(t.detected_at[STORM_KIND_DIRECT_COMPACTION], RECORDED_STORM_ONSET + cfg.storm_after_usec);
        ck_assert_uint_le(t.detected_at[STORM_KIND_DIRECT_COMPACTION], RECORDED_STORM_ONSET + DETECT_WITHIN);
        ck_assert_uint_eq(t.detected[STORM_KIND_KHUGEPAGED] + t.detected[STORM_KIND_KCOMPACTD], 0);
        ck_assert_uint_eq(t.n_levels, 0);
}
END_TEST

START_TEST(test_recorded_spike) {
        g_autoptr(GArray) samples = load_recording(RECORDED_SPIKE);
        StormConfig cfg;
        StormState st;
        Trace t;

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;

        /* Sampled throughout, and as the watcher meets it: suspect at most, never a storm. */
        for (unsigned watcher = 0; watcher < 2; watcher++) {
                storm_state_init(&st);
                trace_init(&t);
                if (watcher)
                        replay_watcher(&cfg, &st, samples, &t);
                else
                        replay(&cfg, &st, samples, &t);

                for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                        ck_assert_uint_eq(t.detected[k], 0);
                ck_assert_uint_eq(t.n_levels, 0);
                ck_assert(!st.kinds[STORM_KIND_DIRECT_COMPACTION].has_trip);
        }
        /* It was hot, though: the hysteresis is what kept it from being a storm. */
        ck_assert_uint_ge(t.n_phases[STORM_KIND_DIRECT_COMPACTION], 2);
        ck_assert_int_eq(t.phases[STORM_KIND_DIRECT_COMPACTION][1], STORM_PHASE_SUSPECT);
}
END_TEST

START_TEST(test_recorded_ordinary) {
        const char *name = recorded_ordinary[_i];
        g_autoptr(GArray) samples = load_recording(name);
        StormConfig cfg;
        StormState st;
        Trace t;

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;

        for (unsigned watcher = 0; watcher < 2; watcher++) {
                storm_state_init(&st);
                trace_init(&t);
                if (watcher)
                        replay_watcher(&cfg, &st, samples, &t);
                else
                        replay(&cfg, &st, samples, &t);

                ck_assert_uint_eq(t.ignored, 0);
                for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                        ck_assert_msg(t.detected[k] == 0, "%s: a %s storm", name, storm_kind_to_string(k));
                ck_assert_uint_eq(t.n_levels, 0);
        }
        /* The workload did press on memory: the watcher woke for it. */
        ck_assert_uint_gt(t.runs, 0);
}
END_TEST

START_TEST(test_counter_reset_recording) {
        g_autoptr(GArray) samples = load_recording("generated-counter-reset.txt");
        StormConfig cfg;
        StormState st;
        Trace t;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);
        replay(&cfg, &st, samples, &t);

        /* The one interval across the reset is dropped: no giant (or negative) delta anywhere. */
        ck_assert_uint_eq(t.ignored, 1);
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                ck_assert_uint_eq(t.detected[k], 0);
        /* The background has a stray stall a second at most; across the reset there would be
         * millions, or a negative number. */
        ck_assert_double_lt(t.max_window_stalls, 2);
        ck_assert_double_lt(t.max_window_psi, cfg.pressure_percent);
        ck_assert_uint_gt(t.windows, 0);
        ck_assert_double_lt(st.latest.khugepaged_cpu_percent, cfg.kthread_cpu_percent);
}
END_TEST

START_TEST(test_counter_wrap_and_bad_intervals) {
        StormConfig cfg;
        StormState st;
        StormSample a, b;
        StormChanges c;
        Trace t;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);

        /* A 64-bit counter that wraps (or a 32-bit one read on a 32-bit kernel) goes backwards. */
        a = gen_start();
        a.vmstat.compact_stall = UINT64_MAX - 5;
        b = a;
        gen_advance(&b, SEC, &calm_load);
        b.vmstat.compact_stall = 3;
        c = step(&cfg, &st, &a, &b, &t);
        ck_assert(c.interval_ignored);
        ck_assert_uint_eq(st.window.duration_usec, 0);

        /* PSI totals going backwards count the same. */
        b = a;
        gen_advance(&b, SEC, &calm_load);
        b.psi_memory_some_usec = a.psi_memory_some_usec - 1;
        ck_assert(step(&cfg, &st, &a, &b, &t).interval_ignored);

        /* Time that does not advance is no interval at all. */
        b = a;
        ck_assert(step(&cfg, &st, &a, &b, &t).interval_ignored);

        /* CPU times of different kthread sets cannot be subtracted. */
        b = a;
        gen_advance(&b, SEC, &calm_load);
        b.kthreads_generation++;
        ck_assert(step(&cfg, &st, &a, &b, &t).interval_ignored);

        /* A good interval is used: with the default one-second Window= it makes a whole window. */
        b = a;
        gen_advance(&b, SEC, &calm_load);
        c = step(&cfg, &st, &a, &b, &t);
        ck_assert(!c.interval_ignored);
        ck_assert(c.window_completed);
        ck_assert_uint_eq(st.latest.window_usec, SEC);
        ck_assert_uint_eq(t.ignored, 4);
}
END_TEST

/* Sample times jitter around their schedule (timer slack, a busy loop): a window a hair short of
 * Window= closes at the sample nearest its end instead of waiting for one more. */
START_TEST(test_jittery_samples) {
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);

        for (unsigned i = 0; i < 20; i++) {
                StormSample prev = s;

                gen_advance(&s, i % 2 ? SEC + 20000 : SEC - 20000, i < 10 ? &calm_load : &compaction_storm);
                step(&cfg, &st, &prev, &s, &t);
                ck_assert_uint_le(st.latest.window_usec, SEC + 20000);
        }
        /* One window per sample, and a storm three samples into the hot ones. */
        ck_assert_uint_eq(t.windows, 20);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_le(t.detected_at[STORM_KIND_DIRECT_COMPACTION], T0 + 13 * SEC + 20000);
}
END_TEST

START_TEST(test_recovery_and_reheat) {
        const StormPhase expected[] = {
                STORM_PHASE_CALM, STORM_PHASE_SUSPECT, STORM_PHASE_STORM, STORM_PHASE_COOLING,
                STORM_PHASE_STORM, STORM_PHASE_COOLING, STORM_PHASE_CALM,
        };
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;
        uint64_t cooling_started;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);

        gen_run(&cfg, &st, &s, 60, &calm_load, &t);
        gen_run(&cfg, &st, &s, 60, &compaction_storm, &t);
        ck_assert_int_eq(st.kinds[STORM_KIND_DIRECT_COMPACTION].phase, STORM_PHASE_STORM);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);

        /* Calm for less than CoolAfter, then hot again: the same storm goes on, no new event. */
        gen_run(&cfg, &st, &s, (unsigned) (cfg.cool_after_usec / SEC / 2), &calm_load, &t);
        ck_assert_int_eq(st.kinds[STORM_KIND_DIRECT_COMPACTION].phase, STORM_PHASE_COOLING);
        gen_run(&cfg, &st, &s, 20, &compaction_storm, &t);
        ck_assert_int_eq(st.kinds[STORM_KIND_DIRECT_COMPACTION].phase, STORM_PHASE_STORM);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_eq(t.cleared[STORM_KIND_DIRECT_COMPACTION], 0);

        /* Then calm for good: cleared once, after CoolAfter of calm windows. */
        cooling_started = s.timestamp_usec;
        gen_run(&cfg, &st, &s, (unsigned) ((cfg.cool_after_usec + 3 * cfg.window_usec) / SEC), &calm_load, &t);
        assert_phases(&t, STORM_KIND_DIRECT_COMPACTION, expected, ELEMENTSOF(expected));
        ck_assert_uint_eq(t.cleared[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_ge(t.cleared_at[STORM_KIND_DIRECT_COMPACTION], cooling_started + cfg.cool_after_usec);
        ck_assert_uint_le(t.cleared_at[STORM_KIND_DIRECT_COMPACTION],
                          cooling_started + cfg.cool_after_usec + 2 * cfg.window_usec);
        /* The trip figures stay for reporting after the storm. */
        ck_assert(st.kinds[STORM_KIND_DIRECT_COMPACTION].has_trip);
        ck_assert_double_ge(st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.compact_stalls_per_sec,
                            cfg.compact_stalls_per_sec);
}
END_TEST

START_TEST(test_kthread_storms) {
        const Load khugepaged = { .psi_percent = 12, .khugepaged_percent = 60 };
        const Load kcompactd = { .psi_percent = 3, .kcompactd_percent = 40 };
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;
        storm_state_init(&st);
        trace_init(&t);

        gen_run(&cfg, &st, &s, 60, &khugepaged, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_KHUGEPAGED], 1);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 0);
        ck_assert_uint_eq(t.detected[STORM_KIND_KCOMPACTD], 0);
        ck_assert_double_gt(st.kinds[STORM_KIND_KHUGEPAGED].trip.khugepaged_cpu_percent, cfg.kthread_cpu_percent);
        ck_assert_double_le(st.kinds[STORM_KIND_KHUGEPAGED].trip.khugepaged_cpu_percent, 100);
        /* defrag alone does not reach khugepaged: its storms start at the khugepaged step. */
        ck_assert_uint_eq(t.n_levels, 1);
        ck_assert_uint_eq(t.levels[0], storm_kind_mitigation_start(STORM_KIND_KHUGEPAGED));
        ck_assert_uint_eq(t.level_at[0], t.detected_at[STORM_KIND_KHUGEPAGED]);

        /* Read at slightly different instants, the CPU time of one thread can exceed the
         * window it is divided by: one thread is never more than one CPU. */
        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 10, &(Load) { .psi_percent = 12, .khugepaged_percent = 130 }, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_KHUGEPAGED], 1);
        ck_assert_double_eq(st.latest.khugepaged_cpu_percent, 100);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &kcompactd, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_KCOMPACTD], 1);
        ck_assert_uint_eq(t.detected[STORM_KIND_KHUGEPAGED], 0);
        ck_assert_double_gt(st.kinds[STORM_KIND_KCOMPACTD].trip.kcompactd_cpu_percent, cfg.kthread_cpu_percent);
        ck_assert_uint_eq(st.mitigation_level, storm_kind_mitigation_start(STORM_KIND_KCOMPACTD));

        /* Just under the threshold is no storm. */
        {
                const Load busy = { .psi_percent = 3, .kcompactd_percent = cfg.kthread_cpu_percent - 5 };

                storm_state_init(&st);
                trace_init(&t);
                gen_run(&cfg, &st, &s, 120, &busy, &t);
                ck_assert_uint_eq(t.detected[STORM_KIND_KCOMPACTD], 0);
                ck_assert_int_eq(st.kinds[STORM_KIND_KCOMPACTD].phase, STORM_PHASE_CALM);
        }
}
END_TEST

START_TEST(test_pressure_condition) {
        /* The recorded storm's shape: many failed stalls, hardly any PSI (each stall is short). */
        const Load failing_unfelt = { .stalls_per_sec = 40, .fail_ratio = 0.95, .psi_percent = 1.5 };
        /* The same without THP faults: page cache filling memory, say. */
        const Load failing_other_orders = { .stalls_per_sec = 40, .fail_ratio = 0.95, .psi_percent = 1.5,
                                            .other_orders = true };
        /* A few failed stalls a second: a storm only when tasks are seen waiting on memory. */
        const Load few_failing = { .stalls_per_sec = 5, .fail_ratio = 0.9, .psi_percent = 2 };
        const Load few_failing_felt = { .stalls_per_sec = 5, .fail_ratio = 0.9, .psi_percent = 30 };
        const Load succeeding = { .stalls_per_sec = 80, .fail_ratio = 0.2, .psi_percent = 30 };
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;

        storm_config_init_defaults(&cfg);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &failing_unfelt, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_double_lt(st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.psi_memory_some_percent, cfg.pressure_percent);
        ck_assert_double_ge(st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.compact_fails_per_sec, cfg.compact_fails_per_sec);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &failing_other_orders, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 0);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &few_failing, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 0);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &few_failing_felt, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_double_lt(st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.compact_fails_per_sec, cfg.compact_fails_per_sec);

        /* Compaction that mostly succeeds is doing its job, however many stalls and however
         * much pressure. */
        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &succeeding, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 0);

        /* Without PSI (psi=0), the few failing stalls are all there is to go on. */
        storm_state_init(&st);
        trace_init(&t);
        for (unsigned i = 0; i < 60; i++) {
                StormSample prev = s;

                gen_advance(&s, SEC, &few_failing);
                prev.has_psi_memory = s.has_psi_memory = false;
                step(&cfg, &st, &prev, &s, &t);
        }
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert(!st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.has_psi_memory);
}
END_TEST

/* Faults of smaller THP sizes count beside vmstat's PMD ones: a storm of failing compactions
 * for 64K faults is seen though vmstat's thp_* stay quiet, and the PMD size's per-size counters,
 * vmstat's again, are not counted twice. */
START_TEST(test_mthp_storm) {
        const Load failing_64k = { .stalls_per_sec = 40, .fail_ratio = 0.95, .psi_percent = 1.5, .other_orders = true,
                                   .size_kb = 64 };
        /* The same faults shown as the PMD size's own counters only, vmstat quiet: not THP
         * faults thpd may count, since the PMD size's are vmstat's. */
        const Load failing_pmd_counters = { .stalls_per_sec = 40, .fail_ratio = 0.95, .psi_percent = 1.5,
                                            .other_orders = true, .size_kb = 2048 };
        const StormFigures *trip;
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;

        storm_config_init_defaults(&cfg);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &failing_64k, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        trip = &st.kinds[STORM_KIND_DIRECT_COMPACTION].trip;
        ck_assert_double_eq(trip->thp_faults_per_sec, 0);
        ck_assert_double_eq(trip->thp_fault_fallback_per_sec, 0);
        ck_assert_double_eq_tol(trip->mthp_faults_per_sec, 40, 0.01);
        ck_assert_double_eq_tol(trip->mthp_fault_fallback_per_sec, 20, 0.01);
        ck_assert_double_eq_tol(trip->mthp_split_per_sec, 10, 0.01);
        ck_assert_uint_eq(trip->mthp_size_kb, 64);
        ck_assert_double_eq_tol(trip->mthp_size_fault_fallback_per_sec, 20, 0.01);

        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &failing_pmd_counters, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 0);
        ck_assert(st.has_latest);
        ck_assert_double_eq(st.latest.mthp_faults_per_sec, 0);
        ck_assert_uint_eq(st.latest.mthp_size_kb, 0);

        /* With the PMD size unknown, no size is taken for vmstat's. */
        s.pmd_size_kb = 0;
        storm_state_init(&st);
        trace_init(&t);
        gen_run(&cfg, &st, &s, 60, &failing_pmd_counters, &t);
        ck_assert_uint_eq(t.detected[STORM_KIND_DIRECT_COMPACTION], 1);
        ck_assert_uint_eq(st.kinds[STORM_KIND_DIRECT_COMPACTION].trip.mthp_size_kb, 2048);
}
END_TEST

/* A size counts over the intervals it was read at both ends of; a per-size counter that goes
 * backwards makes the interval carry no data, as a vmstat one does. */
START_TEST(test_mthp_sizes_come_and_go) {
        StormConfig cfg;
        StormState st;
        StormSample prev = gen_start(), cur;
        StormChanges c;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);

        /* 64K is missing at the start of the interval: its counts are not a rate. */
        cur = prev;
        prev.sizes[0].size_kb = 0;
        cur.timestamp_usec += SEC;
        gen_size(&cur, 64)->fault_fallback += 500;
        c = storm_classify(&cfg, &st, &prev, &cur);
        ck_assert(c.window_completed);
        ck_assert_double_eq(st.latest.mthp_fault_fallback_per_sec, 0);

        prev = cur;
        cur.timestamp_usec += SEC;
        gen_size(&cur, 64)->fault_fallback += 30;
        gen_size(&cur, 64)->split += 3;
        cur.vmstat.thp_split_page += 7;
        c = storm_classify(&cfg, &st, &prev, &cur);
        ck_assert(c.window_completed);
        ck_assert_double_eq_tol(st.latest.mthp_fault_fallback_per_sec, 30, 0.01);
        ck_assert_double_eq_tol(st.latest.mthp_split_per_sec, 3, 0.01);
        ck_assert_double_eq_tol(st.latest.thp_split_per_sec, 7, 0.01);
        ck_assert_uint_eq(st.latest.mthp_size_kb, 64);

        prev = cur;
        cur.timestamp_usec += SEC;
        gen_size(&cur, 64)->split -= 1;
        c = storm_classify(&cfg, &st, &prev, &cur);
        ck_assert(c.interval_ignored);
        ck_assert(!c.window_completed);
}
END_TEST

START_TEST(test_mitigation_escalation_and_revert) {
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;
        uint64_t detected, cleared, last_step;

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;
        storm_state_init(&st);
        trace_init(&t);

        gen_run(&cfg, &st, &s, 30, &calm_load, &t);
        gen_run(&cfg, &st, &s, (unsigned) ((cfg.storm_after_usec + 2 * cfg.escalate_after_usec) / SEC + 60),
                &compaction_storm, &t);

        /* One step at detection, one more per EscalateAfter the storm outlasts it, then no more. */
        detected = t.detected_at[STORM_KIND_DIRECT_COMPACTION];
        ck_assert_uint_eq(t.n_levels, STORM_MITIGATION_LEVEL_MAX);
        for (unsigned i = 0; i < t.n_levels; i++) {
                ck_assert_uint_eq(t.levels[i], i + 1);
                ck_assert_uint_ge(t.level_at[i], detected + i * cfg.escalate_after_usec);
                ck_assert_uint_le(t.level_at[i], detected + i * cfg.escalate_after_usec + i * SEC);
        }
        last_step = t.level_at[t.n_levels - 1];

        /* Calm: the storm clears after CoolAfter, but the last step holds for HoldDown. */
        gen_run(&cfg, &st, &s, (unsigned) ((cfg.cool_after_usec + 2 * cfg.window_usec) / SEC), &calm_load, &t);
        ck_assert_uint_eq(t.cleared[STORM_KIND_DIRECT_COMPACTION], 1);
        cleared = t.cleared_at[STORM_KIND_DIRECT_COMPACTION];
        ck_assert_uint_lt(cleared, last_step + cfg.hold_down_usec);
        ck_assert_uint_eq(st.mitigation_level, STORM_MITIGATION_LEVEL_MAX);
        ck_assert(!storm_state_is_idle(&st));

        gen_run(&cfg, &st, &s, (unsigned) (cfg.hold_down_usec / SEC), &calm_load, &t);
        ck_assert_uint_eq(st.mitigation_level, 0);
        ck_assert_uint_eq(t.n_levels, STORM_MITIGATION_LEVEL_MAX + 1);
        ck_assert_uint_ge(t.level_at[t.n_levels - 1], last_step + cfg.hold_down_usec);
        ck_assert_uint_le(t.level_at[t.n_levels - 1], last_step + cfg.hold_down_usec + SEC);

        /* Idle only once nothing is held any more. */
        gen_run(&cfg, &st, &s, (unsigned) (storm_config_idle_after_usec(&cfg) / SEC) + 1, &calm_load, &t);
        ck_assert(storm_state_is_idle(&st));
}
END_TEST

/* Mitigation that keeps the storm away gets lifted after HoldDown=, the storm comes back at once:
 * each return doubles the next hold-down instead of flapping at the same pace. */
START_TEST(test_recurring_storm_holds_longer) {
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;
        uint64_t lifted[3];

        storm_config_init_defaults(&cfg);
        cfg.action = STORM_ACTION_MITIGATE;
        cfg.escalate_after_usec = 3600 * SEC;
        storm_state_init(&st);
        trace_init(&t);

        gen_run(&cfg, &st, &s, 30, &calm_load, &t);
        for (unsigned round = 0; round < 3; round++) {
                unsigned before = t.n_levels;

                /* Storm until detected, then calm while mitigated, until the lift. */
                gen_run(&cfg, &st, &s, (unsigned) ((cfg.storm_after_usec + cfg.window_usec) / SEC) + 1,
                        &compaction_storm, &t);
                ck_assert_uint_eq(st.mitigation_level, 1);
                while (st.mitigation_level > 0)
                        gen_run(&cfg, &st, &s, 1, &calm_load, &t);
                ck_assert_uint_eq(t.n_levels, before + 2);
                lifted[round] = t.level_at[t.n_levels - 1];
                ck_assert_uint_ge(lifted[round] - t.level_at[before], cfg.hold_down_usec << round);
                ck_assert_uint_le(lifted[round] - t.level_at[before], (cfg.hold_down_usec << round) + 2 * SEC);
        }
        ck_assert_uint_eq(st.hold_down_factor, 4);

        /* A storm long after the last hold-down starts over at one HoldDown=. */
        gen_run(&cfg, &st, &s, (unsigned) (4 * cfg.hold_down_usec / SEC) + 1, &calm_load, &t);
        gen_run(&cfg, &st, &s, (unsigned) ((cfg.storm_after_usec + cfg.window_usec) / SEC) + 1, &compaction_storm, &t);
        ck_assert_uint_eq(st.mitigation_level, 1);
        ck_assert_uint_eq(st.hold_down_factor, 1);
}
END_TEST

START_TEST(test_sampling_runs) {
        const Load pressure = { .psi_percent = 50 };
        StormConfig cfg;
        StormState st;
        StormSample s = gen_start();
        Trace t;

        storm_config_init_defaults(&cfg);
        storm_state_init(&st);
        trace_init(&t);

        /* A fresh state is idle, and quiet intervals keep it so. */
        ck_assert(storm_state_is_idle(&st));
        gen_run(&cfg, &st, &s, 30, &calm_load, &t);
        ck_assert(storm_state_is_idle(&st));

        /* A wake-up (no previous sample) starts a run that lasts StormAfter= plus a window of
         * quiet (4 s at the defaults, not CoolAfter=: ordinary pressure wakes thpd often). */
        ck_assert_uint_eq(storm_config_idle_after_usec(&cfg), 4 * SEC);
        (void) storm_classify(&cfg, &st, NULL, &s);
        ck_assert(!storm_state_is_idle(&st));
        gen_run(&cfg, &st, &s, (unsigned) (storm_config_idle_after_usec(&cfg) / SEC) - 1, &calm_load, &t);
        ck_assert(!storm_state_is_idle(&st));
        gen_run(&cfg, &st, &s, 1, &calm_load, &t);
        ck_assert(storm_state_is_idle(&st));

        /* Pressure over the threshold starts one too, and restarts the quiet count. */
        gen_run(&cfg, &st, &s, 1, &pressure, &t);
        ck_assert(!storm_state_is_idle(&st));
        gen_run(&cfg, &st, &s, (unsigned) (storm_config_idle_after_usec(&cfg) / SEC) - 1, &calm_load, &t);
        gen_run(&cfg, &st, &s, 1, &pressure, &t);
        gen_run(&cfg, &st, &s, (unsigned) (storm_config_idle_after_usec(&cfg) / SEC) - 1, &calm_load, &t);
        ck_assert(!storm_state_is_idle(&st));
        gen_run(&cfg, &st, &s, 1, &calm_load, &t);
        ck_assert(storm_state_is_idle(&st));
}
END_TEST

static KnobValue word(Knob k, const char *s) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, s, &v), 0);
        return v;
}

START_TEST(test_mitigation_votes) {
        /* The kernel's defaults (kernel-facts §1): every vote must be at least as strict. */
        const struct {
                Knob knob;
                const char *kernel_default;
                unsigned from_level;
        } expected[] = {
                { KNOB_DEFRAG,                           "madvise", 1 },
                { KNOB_KHUGEPAGED_DEFRAG,                "1",       2 },
                { KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS,  "10000",   2 },
                { KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS, "60000",   2 },
                { KNOB_KHUGEPAGED_PAGES_TO_SCAN,         "4096",    2 },
                { KNOB_ENABLED,                          "always",  3 },
        };
        KnobValue votes[_KNOB_MAX];
        StormConfig cfg;

        storm_config_init_defaults(&cfg);

        for (unsigned level = 0; level <= STORM_MITIGATION_LEVEL_MAX; level++) {
                unsigned n_votes = 0;

                ck_assert_int_eq(storm_mitigation_votes(&cfg, level, votes), 0);
                FOREACH_KNOB(k)
                        if (votes[k] != KNOB_VALUE_UNSET)
                                n_votes++;

                for (size_t i = 0; i < ELEMENTSOF(expected); i++) {
                        Knob k = expected[i].knob;

                        if (level < expected[i].from_level) {
                                ck_assert_int_eq(votes[k], KNOB_VALUE_UNSET);
                                continue;
                        }
                        ck_assert_int_ne(votes[k], KNOB_VALUE_UNSET);
                        ck_assert_int_lt(knob_compare_strictness(k, votes[k], word(k, expected[i].kernel_default),
                                                                 KNOB_VALUE_UNSET), 0);
                        n_votes--;
                }
                /* Nothing else is voted on. */
                ck_assert_uint_eq(n_votes, 0);
        }

        ck_assert_int_eq(storm_mitigation_votes(&cfg, 2, votes), 0);
        ck_assert_int_eq(votes[KNOB_DEFRAG], word(KNOB_DEFRAG, "defer"));
        ck_assert_int_eq(votes[KNOB_KHUGEPAGED_DEFRAG], 0);
        ck_assert_int_eq(votes[KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS], 30000);
        ck_assert_int_eq(votes[KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS], 120000);
        ck_assert_int_eq(votes[KNOB_KHUGEPAGED_PAGES_TO_SCAN], 2048);
        ck_assert_int_eq(storm_mitigation_votes(&cfg, 3, votes), 0);
        ck_assert_int_eq(votes[KNOB_ENABLED], word(KNOB_ENABLED, "madvise"));

        ck_assert_int_eq(storm_config_set(&cfg, "MitigationDefrag", "never"), 0);
        ck_assert_int_eq(storm_mitigation_votes(&cfg, 1, votes), 0);
        ck_assert_int_eq(votes[KNOB_DEFRAG], word(KNOB_DEFRAG, "never"));
}
END_TEST

START_TEST(test_config) {
        StormConfig cfg, saved;

        storm_config_init_defaults(&cfg);
        ck_assert_int_eq(cfg.action, STORM_ACTION_LOG);
        ck_assert_double_eq(cfg.fail_ratio, STORM_DEFAULT_FAIL_RATIO);
        ck_assert_double_eq(cfg.compact_fails_per_sec, STORM_DEFAULT_COMPACT_FAILS_PER_SEC);
        ck_assert_double_eq(cfg.compact_stalls_per_sec, STORM_DEFAULT_COMPACT_STALLS_PER_SEC);
        ck_assert_double_eq(cfg.pressure_percent, STORM_DEFAULT_PRESSURE_PERCENT);
        ck_assert_double_eq(cfg.kthread_cpu_percent, STORM_DEFAULT_KTHREAD_CPU_PERCENT);
        ck_assert_uint_eq(cfg.window_usec, STORM_DEFAULT_WINDOW_USEC);
        ck_assert_uint_eq(cfg.storm_after_usec, STORM_DEFAULT_STORM_AFTER_USEC);
        ck_assert_uint_eq(cfg.cool_after_usec, STORM_DEFAULT_COOL_AFTER_USEC);
        ck_assert_uint_eq(cfg.escalate_after_usec, STORM_DEFAULT_ESCALATE_AFTER_USEC);
        ck_assert_uint_eq(cfg.hold_down_usec, STORM_DEFAULT_HOLD_DOWN_USEC);
        ck_assert_uint_eq(cfg.sample_interval_usec, STORM_DEFAULT_SAMPLE_INTERVAL_USEC);
        ck_assert_uint_eq(cfg.idle_poll_interval_usec, STORM_DEFAULT_IDLE_POLL_INTERVAL_USEC);
        ck_assert_int_eq(cfg.mitigation_defrag, word(KNOB_DEFRAG, STORM_DEFAULT_MITIGATION_DEFRAG));

        ck_assert_int_eq(storm_config_set(&cfg, "Action", "mitigate"), 0);
        ck_assert_int_eq(cfg.action, STORM_ACTION_MITIGATE);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactFailsPerSec", "20"), 0);
        ck_assert_double_eq(cfg.compact_fails_per_sec, 20);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", "2.5"), 0);
        ck_assert_double_eq(cfg.compact_stalls_per_sec, 2.5);
        ck_assert_int_eq(storm_config_set(&cfg, "FailRatio", "0.75"), 0);
        ck_assert_double_eq(cfg.fail_ratio, 0.75);
        /* The wake-up trigger stays far below PressurePercent=, unless that is lower still. */
        ck_assert_double_eq(storm_config_wake_percent(&cfg), STORM_WAKE_PERCENT);
        ck_assert_int_eq(storm_config_set(&cfg, "PressurePercent", "0.1"), 0);
        ck_assert_double_eq(storm_config_wake_percent(&cfg), 0.1);
        ck_assert_int_eq(storm_config_set(&cfg, "PressurePercent", "20%"), 0);
        ck_assert_double_eq(cfg.pressure_percent, 20);
        ck_assert_double_eq(storm_config_wake_percent(&cfg), STORM_WAKE_PERCENT);
        ck_assert_int_eq(storm_config_set(&cfg, "KthreadCpuPercent", "50"), 0);
        ck_assert_double_eq(cfg.kthread_cpu_percent, 50);
        ck_assert_int_eq(storm_config_set(&cfg, "Window", "5s"), 0);
        ck_assert_uint_eq(cfg.window_usec, 5 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "StormAfter", "1min"), 0);
        ck_assert_uint_eq(cfg.storm_after_usec, 60 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "CoolAfter", "90"), 0);
        ck_assert_uint_eq(cfg.cool_after_usec, 90 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "EscalateAfter", "5min"), 0);
        ck_assert_uint_eq(cfg.escalate_after_usec, 300 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "HoldDown", "1h"), 0);
        ck_assert_uint_eq(cfg.hold_down_usec, 3600 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "SampleInterval", "500ms"), 0);
        ck_assert_uint_eq(cfg.sample_interval_usec, SEC / 2);
        ck_assert_int_eq(storm_config_set(&cfg, "IdlePollInterval", "30s"), 0);
        ck_assert_uint_eq(cfg.idle_poll_interval_usec, 30 * SEC);
        ck_assert_int_eq(storm_config_set(&cfg, "MitigationDefrag", "never"), 0);
        ck_assert_int_eq(cfg.mitigation_defrag, word(KNOB_DEFRAG, "never"));

        memcpy(&saved, &cfg, sizeof(cfg));
        ck_assert_int_eq(storm_config_set(&cfg, "Threshold", "1"), -ENOENT);
        ck_assert_int_eq(storm_config_set(&cfg, "action", "log"), -ENOENT);
        ck_assert_int_eq(storm_config_set(&cfg, "Action", "panic"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "MitigationDefrag", "always"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "MitigationDefrag", "sometimes"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", "-1"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", "1x"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", "nan"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", "1e999"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactStallsPerSec", ""), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactFailsPerSec", "0"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "CompactFailsPerSec", "5%"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "FailRatio", "1.5"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "FailRatio", "50%"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "PressurePercent", "0"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "PressurePercent", "101"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "KthreadCpuPercent", "%"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "Window", "50ms"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "Window", "10d"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "Window", "ten"), -EINVAL);
        ck_assert_int_eq(storm_config_set(&cfg, "SampleInterval", "0"), -ERANGE);
        ck_assert_int_eq(storm_config_set(&cfg, "HoldDown", "2d"), -ERANGE);
        ck_assert(memcmp(&cfg, &saved, sizeof(cfg)) == 0);
}
END_TEST

START_TEST(test_strings) {
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                ck_assert_int_eq(storm_kind_from_string(storm_kind_to_string(k)), k);
        for (StormPhase p = 0; p < _STORM_PHASE_MAX; p++)
                ck_assert_int_eq(storm_phase_from_string(storm_phase_to_string(p)), p);
        for (StormAction a = 0; a < _STORM_ACTION_MAX; a++)
                ck_assert_int_eq(storm_action_from_string(storm_action_to_string(a)), a);

        ck_assert_str_eq(storm_kind_to_string(STORM_KIND_DIRECT_COMPACTION), "direct-compaction");
        ck_assert_str_eq(storm_phase_to_string(STORM_PHASE_COOLING), "cooling");
        ck_assert_ptr_null(storm_kind_to_string(_STORM_KIND_MAX));
        ck_assert_ptr_null(storm_phase_to_string(_STORM_PHASE_INVALID));
        ck_assert_int_eq(storm_kind_from_string("hurricane"), -EINVAL);
        ck_assert_int_eq(storm_phase_from_string(NULL), -EINVAL);
}
END_TEST

START_TEST(test_describe) {
        const StormFigures f = {
                .window_usec = 10 * SEC,
                .compact_stalls_per_sec = 87.5,
                .compact_fail_ratio = 0.91,
                .khugepaged_cpu_percent = 63,
                .kcompactd_cpu_percent = 41,
                .compact_daemon_wakes_per_sec = 2.5,
                .has_psi_memory = true,
                .psi_memory_some_percent = 33.3,
        };
        StormFigures no_psi = f;
        g_autofree char *direct = storm_figures_describe(STORM_KIND_DIRECT_COMPACTION, &f);
        g_autofree char *khugepaged = storm_figures_describe(STORM_KIND_KHUGEPAGED, &f);
        g_autofree char *kcompactd = storm_figures_describe(STORM_KIND_KCOMPACTD, &f);
        g_autofree char *unknown = NULL;

        ck_assert_ptr_nonnull(strstr(direct, "87.5 direct compaction stalls/s"));
        ck_assert_ptr_nonnull(strstr(direct, "91% failed"));
        ck_assert_ptr_nonnull(strstr(direct, "memory pressure 33.3%"));
        ck_assert_ptr_nonnull(strstr(direct, "over 10.0s"));
        ck_assert_ptr_nonnull(strstr(khugepaged, "khugepaged at 63% of a CPU"));
        ck_assert_ptr_nonnull(strstr(kcompactd, "kcompactd at 41% of a CPU, 2.5 wake-ups/s"));

        /* The mTHP size with the most fallbacks is named; without one the text is as before. */
        ck_assert_ptr_null(strstr(direct, "mTHP"));
        {
                StormFigures mthp = f;
                g_autofree char *text = NULL;

                mthp.mthp_fault_fallback_per_sec = 25;
                mthp.mthp_size_kb = 64;
                mthp.mthp_size_fault_fallback_per_sec = 20;
                text = storm_figures_describe(STORM_KIND_DIRECT_COMPACTION, &mthp);
                ck_assert_ptr_nonnull(strstr(text, "25.0 mTHP fault fallbacks/s (20.0/s at 64K)"));
        }

        no_psi.has_psi_memory = false;
        unknown = storm_figures_describe(STORM_KIND_DIRECT_COMPACTION, &no_psi);
        ck_assert_ptr_nonnull(strstr(unknown, "memory pressure unknown"));
}
END_TEST

int main(void) {
        Suite *s = suite_create("storm-classify");
        TCase *recordings = tcase_create("recordings");
        TCase *shapes = tcase_create("shapes");
        TCase *config = tcase_create("config");

        tcase_add_test(recordings, test_recorded_storm);
        tcase_add_test(recordings, test_recorded_storm_sampled_throughout);
        tcase_add_test(recordings, test_recorded_spike);
        tcase_add_loop_test(recordings, test_recorded_ordinary, 0, ELEMENTSOF(recorded_ordinary));
        tcase_add_test(recordings, test_counter_reset_recording);
        suite_add_tcase(s, recordings);

        tcase_add_test(shapes, test_counter_wrap_and_bad_intervals);
        tcase_add_test(shapes, test_jittery_samples);
        tcase_add_test(shapes, test_recovery_and_reheat);
        tcase_add_test(shapes, test_kthread_storms);
        tcase_add_test(shapes, test_pressure_condition);
        tcase_add_test(shapes, test_mthp_storm);
        tcase_add_test(shapes, test_mthp_sizes_come_and_go);
        tcase_add_test(shapes, test_mitigation_escalation_and_revert);
        tcase_add_test(shapes, test_recurring_storm_holds_longer);
        tcase_add_test(shapes, test_sampling_runs);
        suite_add_tcase(s, shapes);

        tcase_add_test(config, test_mitigation_votes);
        tcase_add_test(config, test_config);
        tcase_add_test(config, test_strings);
        tcase_add_test(config, test_describe);
        suite_add_tcase(s, config);

        return test_run_suite(s);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <glib.h>
#include <math.h>

#include "storm-classify.h"
#include "util.h"

static const char *const storm_kind_table[_STORM_KIND_MAX] = {
        [STORM_KIND_DIRECT_COMPACTION] = "direct-compaction",
        [STORM_KIND_KHUGEPAGED] = "khugepaged",
        [STORM_KIND_KCOMPACTD] = "kcompactd",
};

static const char *const storm_phase_table[_STORM_PHASE_MAX] = {
        [STORM_PHASE_CALM] = "calm",
        [STORM_PHASE_SUSPECT] = "suspect",
        [STORM_PHASE_STORM] = "storm",
        [STORM_PHASE_COOLING] = "cooling",
};

static const char *const storm_action_table[_STORM_ACTION_MAX] = {
        [STORM_ACTION_LOG] = "log",
        [STORM_ACTION_MITIGATE] = "mitigate",
};

DEFINE_STRING_TABLE_LOOKUP(storm_kind, StormKind);
DEFINE_STRING_TABLE_LOOKUP(storm_phase, StormPhase);
DEFINE_STRING_TABLE_LOOKUP(storm_action, StormAction);

void storm_config_init_defaults(StormConfig *cfg) {
        *cfg = (StormConfig) {
                .action = STORM_DEFAULT_ACTION,
                .fail_ratio = STORM_DEFAULT_FAIL_RATIO,
                .compact_fails_per_sec = STORM_DEFAULT_COMPACT_FAILS_PER_SEC,
                .compact_stalls_per_sec = STORM_DEFAULT_COMPACT_STALLS_PER_SEC,
                .pressure_percent = STORM_DEFAULT_PRESSURE_PERCENT,
                .kthread_cpu_percent = STORM_DEFAULT_KTHREAD_CPU_PERCENT,
                .window_usec = STORM_DEFAULT_WINDOW_USEC,
                .storm_after_usec = STORM_DEFAULT_STORM_AFTER_USEC,
                .cool_after_usec = STORM_DEFAULT_COOL_AFTER_USEC,
                .escalate_after_usec = STORM_DEFAULT_ESCALATE_AFTER_USEC,
                .hold_down_usec = STORM_DEFAULT_HOLD_DOWN_USEC,
                .sample_interval_usec = STORM_DEFAULT_SAMPLE_INTERVAL_USEC,
                .idle_poll_interval_usec = STORM_DEFAULT_IDLE_POLL_INTERVAL_USEC,
        };
        /* Cannot fail: the default is a word of the knob table. */
        (void) knob_value_from_string(KNOB_DEFRAG, STORM_DEFAULT_MITIGATION_DEFRAG, &cfg->mitigation_defrag);
}

double storm_config_wake_percent(const StormConfig *cfg) {
        return MIN(cfg->pressure_percent, STORM_WAKE_PERCENT);
}

int storm_config_set(StormConfig *cfg, const char *key, const char *value) {
        /* Durations: the lower bounds keep the sampler from spinning, the upper ones catch a unit
         * typed wrong ("10d" for "10s"). The short minima let tests run in well under a second. */
        static const struct {
                char key[17]; /* an array, not a pointer: see KnobInfo in knob.h */
                size_t offset;
                uint64_t min, max;
        } durations[] = {
                { "Window",           offsetof(StormConfig, window_usec),             100 * USEC_PER_MSEC, 3600 * USEC_PER_SEC },
                { "StormAfter",       offsetof(StormConfig, storm_after_usec),        0,                   USEC_PER_DAY },
                { "CoolAfter",        offsetof(StormConfig, cool_after_usec),         0,                   USEC_PER_DAY },
                { "EscalateAfter",    offsetof(StormConfig, escalate_after_usec),     0,                   USEC_PER_DAY },
                { "HoldDown",         offsetof(StormConfig, hold_down_usec),          0,                   USEC_PER_DAY },
                { "SampleInterval",   offsetof(StormConfig, sample_interval_usec),    10 * USEC_PER_MSEC,  60 * USEC_PER_SEC },
                { "IdlePollInterval", offsetof(StormConfig, idle_poll_interval_usec), 10 * USEC_PER_MSEC,  3600 * USEC_PER_SEC },
        };
        double d;
        int r;

        /* A NULL value is refused by each key's parser, as a malformed one. */
        assert(cfg);
        assert(key);

        if (streq(key, "Action")) {
                StormAction a = storm_action_from_string(value);

                if (a < 0)
                        return -EINVAL;
                cfg->action = a;
                return 0;
        }

        if (streq(key, "MitigationDefrag")) {
                KnobValue v;

                r = knob_value_from_string(KNOB_DEFRAG, value, &v);
                if (r < 0)
                        return r;
                /* Only the values that keep faults out of direct compaction are mitigations. */
                if (!streq(value, "defer") && !streq(value, "never"))
                        return -EINVAL;
                cfg->mitigation_defrag = v;
                return 0;
        }

        if (streq(key, "CompactFailsPerSec")) {
                /* 0 would make any window with a failed compaction in it hot. */
                r = parse_double_in_range(value, false, 0.0, false, HUGE_VAL, &d);
                if (r < 0)
                        return r;
                cfg->compact_fails_per_sec = d;
                return 0;
        }

        if (streq(key, "CompactStallsPerSec")) {
                r = parse_double_in_range(value, false, 0.0, true, HUGE_VAL, &d);
                if (r < 0)
                        return r;
                cfg->compact_stalls_per_sec = d;
                return 0;
        }

        if (streq(key, "FailRatio")) {
                r = parse_double_in_range(value, false, 0.0, true, 1.0, &d);
                if (r < 0)
                        return r;
                cfg->fail_ratio = d;
                return 0;
        }

        if (streq(key, "PressurePercent")) {
                /* 0 would make the PSI wake-up trigger fire on any stall at all. */
                r = parse_double_in_range(value, true, 0.0, false, 100.0, &d);
                if (r < 0)
                        return r;
                cfg->pressure_percent = d;
                return 0;
        }

        if (streq(key, "KthreadCpuPercent")) {
                r = parse_double_in_range(value, true, 0.0, false, 100.0, &d);
                if (r < 0)
                        return r;
                cfg->kthread_cpu_percent = d;
                return 0;
        }

        for (size_t i = 0; i < ELEMENTSOF(durations); i++)
                if (streq(key, durations[i].key))
                        return parse_duration_usec_in_range(value, durations[i].min, durations[i].max,
                                                       (uint64_t *) ((uint8_t *) cfg + durations[i].offset));

        return -ENOENT;
}

void storm_state_init(StormState *s) {
        *s = (StormState) { .hold_down_factor = 1 };
}

static const StormSizeCounters *find_size(const StormSizeCounters sizes[static STORM_SIZES_MAX], uint64_t size_kb) {
        for (size_t i = 0; i < STORM_SIZES_MAX; i++)
                if (sizes[i].size_kb == size_kb)
                        return &sizes[i];
        return NULL;
}

/* Adds the increases of one size to the slot of its size, or to a free one. A window has as many
 * slots as a sample; only a kernel whose sizes changed within one window could fill them, and
 * then the extra size is left out of that window. */
static void sizes_add(StormSizeCounters sizes[static STORM_SIZES_MAX], const StormSizeCounters *d) {
        StormSizeCounters *slot = NULL;

        for (size_t i = 0; i < STORM_SIZES_MAX && !slot; i++)
                if (sizes[i].size_kb == d->size_kb)
                        slot = &sizes[i];
        for (size_t i = 0; i < STORM_SIZES_MAX && !slot; i++)
                if (sizes[i].size_kb == 0)
                        slot = &sizes[i];
        if (!slot)
                return;
        slot->size_kb = d->size_kb;
        slot->fault_alloc += d->fault_alloc;
        slot->fault_fallback += d->fault_fallback;
        slot->split += d->split;
}

static bool deltas_from_interval(const StormSample *prev, const StormSample *cur, StormDeltas *ret) {
        StormDeltas d = {};

        if (cur->timestamp_usec <= prev->timestamp_usec)
                return false;
        if (cur->kthreads_generation != prev->kthreads_generation)
                return false;

        d.duration_usec = cur->timestamp_usec - prev->timestamp_usec;

#define DELTA(to, a, b)                 \
        do {                            \
                if ((b) < (a))          \
                        return false;   \
                (to) = (b) - (a);       \
        } while (false)
#define VMSTAT_DELTA(field) DELTA(d.vmstat.field, prev->vmstat.field, cur->vmstat.field)

        VMSTAT_DELTA(compact_stall);
        VMSTAT_DELTA(compact_fail);
        VMSTAT_DELTA(compact_success);
        VMSTAT_DELTA(compact_migrate_scanned);
        VMSTAT_DELTA(compact_free_scanned);
        VMSTAT_DELTA(compact_daemon_wake);
        VMSTAT_DELTA(thp_fault_alloc);
        VMSTAT_DELTA(thp_fault_fallback);
        VMSTAT_DELTA(thp_collapse_alloc);
        VMSTAT_DELTA(thp_collapse_alloc_failed);
        VMSTAT_DELTA(allocstall);
        VMSTAT_DELTA(thp_split_page);

        /* A size only counts over an interval it was read at both ends of. The PMD size's counters
         * are vmstat's thp_fault_* and thp_split_page again. */
        for (size_t i = 0; i < STORM_SIZES_MAX; i++) {
                const StormSizeCounters *c = &cur->sizes[i], *p;

                if (c->size_kb == 0 || c->size_kb == cur->pmd_size_kb)
                        continue;
                p = find_size(prev->sizes, c->size_kb);
                if (!p)
                        continue;
                d.sizes[i].size_kb = c->size_kb;
                DELTA(d.sizes[i].fault_alloc, p->fault_alloc, c->fault_alloc);
                DELTA(d.sizes[i].fault_fallback, p->fault_fallback, c->fault_fallback);
                DELTA(d.sizes[i].split, p->split, c->split);
        }

        if (prev->has_khugepaged && cur->has_khugepaged) {
                DELTA(d.khugepaged_cpu_usec, prev->khugepaged_cpu_usec, cur->khugepaged_cpu_usec);
                d.khugepaged_covered_usec = d.duration_usec;
        }
        if (prev->has_kcompactd && cur->has_kcompactd) {
                DELTA(d.kcompactd_cpu_usec, prev->kcompactd_cpu_usec, cur->kcompactd_cpu_usec);
                d.kcompactd_covered_usec = d.duration_usec;
        }
        if (prev->has_psi_memory && cur->has_psi_memory) {
                DELTA(d.psi_memory_some_usec, prev->psi_memory_some_usec, cur->psi_memory_some_usec);
                DELTA(d.psi_memory_full_usec, prev->psi_memory_full_usec, cur->psi_memory_full_usec);
                d.psi_memory_covered_usec = d.duration_usec;
        }
        if (prev->has_psi_cpu && cur->has_psi_cpu) {
                DELTA(d.psi_cpu_some_usec, prev->psi_cpu_some_usec, cur->psi_cpu_some_usec);
                d.psi_cpu_covered_usec = d.duration_usec;
        }

#undef VMSTAT_DELTA
#undef DELTA

        *ret = d;
        return true;
}

static void deltas_add(StormDeltas *w, const StormDeltas *d) {
        w->duration_usec += d->duration_usec;
        w->vmstat.compact_stall += d->vmstat.compact_stall;
        w->vmstat.compact_fail += d->vmstat.compact_fail;
        w->vmstat.compact_success += d->vmstat.compact_success;
        w->vmstat.compact_migrate_scanned += d->vmstat.compact_migrate_scanned;
        w->vmstat.compact_free_scanned += d->vmstat.compact_free_scanned;
        w->vmstat.compact_daemon_wake += d->vmstat.compact_daemon_wake;
        w->vmstat.thp_fault_alloc += d->vmstat.thp_fault_alloc;
        w->vmstat.thp_fault_fallback += d->vmstat.thp_fault_fallback;
        w->vmstat.thp_collapse_alloc += d->vmstat.thp_collapse_alloc;
        w->vmstat.thp_collapse_alloc_failed += d->vmstat.thp_collapse_alloc_failed;
        w->vmstat.allocstall += d->vmstat.allocstall;
        w->vmstat.thp_split_page += d->vmstat.thp_split_page;
        for (size_t i = 0; i < STORM_SIZES_MAX; i++)
                if (d->sizes[i].size_kb > 0)
                        sizes_add(w->sizes, &d->sizes[i]);
        w->khugepaged_cpu_usec += d->khugepaged_cpu_usec;
        w->khugepaged_covered_usec += d->khugepaged_covered_usec;
        w->kcompactd_cpu_usec += d->kcompactd_cpu_usec;
        w->kcompactd_covered_usec += d->kcompactd_covered_usec;
        w->psi_memory_some_usec += d->psi_memory_some_usec;
        w->psi_memory_full_usec += d->psi_memory_full_usec;
        w->psi_memory_covered_usec += d->psi_memory_covered_usec;
        w->psi_cpu_some_usec += d->psi_cpu_some_usec;
        w->psi_cpu_covered_usec += d->psi_cpu_covered_usec;
}

static double ratio(uint64_t part, uint64_t whole) {
        return whole > 0 ? (double) part / (double) whole : 0.0;
}

/* khugepaged is one thread: it cannot use more than one CPU. Its CPU time and the window are read
 * at two slightly different instants (and the CPU time in 10 ms ticks), so a busy window can
 * come out a little above 100 %, which is the sampling, not the thread. */
static double one_thread_percent(uint64_t cpu_usec, uint64_t covered_usec) {
        return MIN(100.0, 100.0 * ratio(cpu_usec, covered_usec));
}

static void figures_from_deltas(const StormDeltas *d, StormFigures *ret) {
        double secs = (double) d->duration_usec / (double) USEC_PER_SEC;
        const VmStat *v = &d->vmstat;
        StormSizeCounters mthp = {};
        const StormSizeCounters *top = NULL;

        /* The size named is the one whose faults fall back the most, or else splits the most. */
        for (size_t i = 0; i < STORM_SIZES_MAX; i++) {
                const StormSizeCounters *c = &d->sizes[i];

                if (c->size_kb == 0)
                        continue;
                mthp.fault_alloc += c->fault_alloc;
                mthp.fault_fallback += c->fault_fallback;
                mthp.split += c->split;
                if (c->fault_fallback + c->split > 0 &&
                    (!top || c->fault_fallback > top->fault_fallback ||
                     (c->fault_fallback == top->fault_fallback && c->split > top->split)))
                        top = c;
        }

        *ret = (StormFigures) {
                .window_usec = d->duration_usec,
                .compact_stalls_per_sec = (double) v->compact_stall / secs,
                .compact_fails_per_sec = (double) v->compact_fail / secs,
                .compact_fail_ratio = ratio(v->compact_fail, v->compact_fail + v->compact_success),
                .compact_scanned_per_sec = (double) (v->compact_migrate_scanned + v->compact_free_scanned) / secs,
                .thp_faults_per_sec = (double) (v->thp_fault_alloc + v->thp_fault_fallback) / secs,
                .thp_fault_fallback_per_sec = (double) v->thp_fault_fallback / secs,
                .thp_fault_fallback_ratio = ratio(v->thp_fault_fallback, v->thp_fault_alloc + v->thp_fault_fallback),
                .thp_collapse_failed_per_sec = (double) v->thp_collapse_alloc_failed / secs,
                .thp_split_per_sec = (double) v->thp_split_page / secs,
                .mthp_faults_per_sec = (double) (mthp.fault_alloc + mthp.fault_fallback) / secs,
                .mthp_fault_fallback_per_sec = (double) mthp.fault_fallback / secs,
                .mthp_split_per_sec = (double) mthp.split / secs,
                .mthp_size_kb = top ? top->size_kb : 0,
                .mthp_size_fault_fallback_per_sec = top ? (double) top->fault_fallback / secs : 0.0,
                .allocstalls_per_sec = (double) v->allocstall / secs,
                .compact_daemon_wakes_per_sec = (double) v->compact_daemon_wake / secs,
                .khugepaged_cpu_percent = one_thread_percent(d->khugepaged_cpu_usec, d->khugepaged_covered_usec),
                .kcompactd_cpu_percent = 100.0 * ratio(d->kcompactd_cpu_usec, d->kcompactd_covered_usec),
                .has_psi_memory = d->psi_memory_covered_usec > 0,
                .has_psi_cpu = d->psi_cpu_covered_usec > 0,
                .psi_memory_some_percent = 100.0 * ratio(d->psi_memory_some_usec, d->psi_memory_covered_usec),
                .psi_memory_full_percent = 100.0 * ratio(d->psi_memory_full_usec, d->psi_memory_covered_usec),
                .psi_cpu_some_percent = 100.0 * ratio(d->psi_cpu_some_usec, d->psi_cpu_covered_usec),
        };
}

static bool kind_is_hot(const StormConfig *cfg, StormKind kind, const StormFigures *f) {
        switch (kind) {
        case STORM_KIND_DIRECT_COMPACTION:
                /* Compaction that mostly succeeds is doing its job, whatever else is going on. */
                if (f->compact_fail_ratio <= cfg->fail_ratio)
                        return false;
                /* Many failed stalls a second are a storm by themselves: each one is a fault that
                 * waited for nothing. PSI cannot gate this: the storm recorded in
                 * tests/data/storm/ kept memory "some" at 1-2 %, since every stall is short. Only
                 * as many of them count as there were THP faults: page cache and other high-order
                 * allocations compact too (filling memory with page cache, recorded there, failed
                 * 10-30 times a second without a THP fault), and softer THP knobs cannot help
                 * them. Faults of every THP size count: a 64K fault compacts as a 2M one does,
                 * and vmstat's thp_fault_* count the PMD size only. */
                if (MIN(f->compact_fails_per_sec, f->thp_faults_per_sec + f->mthp_faults_per_sec) >=
                    cfg->compact_fails_per_sec)
                        return true;
                /* Fewer of them count once tasks are seen waiting on memory. Without PSI (psi=0)
                 * the stall figures have to do on their own. */
                return f->compact_stalls_per_sec > 0 &&
                        f->compact_stalls_per_sec >= cfg->compact_stalls_per_sec &&
                        (!f->has_psi_memory || f->psi_memory_some_percent >= cfg->pressure_percent);
        case STORM_KIND_KHUGEPAGED:
                return f->khugepaged_cpu_percent > cfg->kthread_cpu_percent;
        case STORM_KIND_KCOMPACTD:
                return f->kcompactd_cpu_percent > cfg->kthread_cpu_percent;
        default:
                return false;
        }
}

/* Quiet: nothing in this interval would count towards a storm, and memory pressure is below
 * the threshold that would have woken us. */
static bool interval_is_quiet(const StormConfig *cfg, const StormFigures *f) {
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                if (kind_is_hot(cfg, k, f))
                        return false;
        return !f->has_psi_memory || f->psi_memory_some_percent < cfg->pressure_percent;
}

static void set_phase(StormKindState *ks, StormPhase phase, uint64_t now) {
        ks->phase = phase;
        ks->phase_since_usec = now;
}

/* Whether a span that just grew by step has reached target: at the step whose end is nearest to
 * it. Samples jitter around their schedule, and a span a hair short of its target must not wait
 * a whole step more: with one-second windows that would double Window= and add a second to
 * StormAfter=. */
static bool reached(uint64_t span, uint64_t step, uint64_t target) {
        return span + step / 2 >= target;
}

/* Returns +1 when the kind entered STORM, -1 when it went back to CALM from a storm. */
static int advance_kind(const StormConfig *cfg, StormKindState *ks, bool hot, const StormFigures *f, uint64_t now) {
        uint64_t dur = f->window_usec;

        switch (ks->phase) {
        case STORM_PHASE_CALM:
        case STORM_PHASE_SUSPECT:
                if (!hot) {
                        ks->hot_usec = 0;
                        if (ks->phase != STORM_PHASE_CALM)
                                set_phase(ks, STORM_PHASE_CALM, now);
                        return 0;
                }
                ks->hot_usec = ks->phase == STORM_PHASE_CALM ? dur : ks->hot_usec + dur;
                if (!reached(ks->hot_usec, dur, cfg->storm_after_usec)) {
                        if (ks->phase != STORM_PHASE_SUSPECT)
                                set_phase(ks, STORM_PHASE_SUSPECT, now);
                        return 0;
                }
                set_phase(ks, STORM_PHASE_STORM, now);
                ks->cool_usec = 0;
                ks->has_trip = true;
                ks->storm_since_usec = now;
                ks->trip = *f;
                return 1;

        case STORM_PHASE_STORM:
        case STORM_PHASE_COOLING:
                if (hot) {
                        ks->hot_usec += dur;
                        ks->cool_usec = 0;
                        /* Heating up again while cooling continues the same storm: no new event. */
                        if (ks->phase != STORM_PHASE_STORM)
                                set_phase(ks, STORM_PHASE_STORM, now);
                        return 0;
                }
                ks->cool_usec = ks->phase == STORM_PHASE_STORM ? dur : ks->cool_usec + dur;
                if (!reached(ks->cool_usec, dur, cfg->cool_after_usec)) {
                        if (ks->phase != STORM_PHASE_COOLING)
                                set_phase(ks, STORM_PHASE_COOLING, now);
                        return 0;
                }
                set_phase(ks, STORM_PHASE_CALM, now);
                ks->hot_usec = 0;
                ks->cool_usec = 0;
                return -1;

        default:
                return 0;
        }
}

unsigned storm_kind_mitigation_start(StormKind kind) {
        return kind == STORM_KIND_KHUGEPAGED ? 2 : 1;
}

static bool update_mitigation(const StormConfig *cfg, StormState *s, uint64_t now) {
        unsigned want = 0, level = s->mitigation_level;
        bool storming = false, calm = true;

        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                if (s->kinds[k].phase == STORM_PHASE_STORM) {
                        storming = true;
                        want = MAX(want, storm_kind_mitigation_start(k));
                }
                if (s->kinds[k].phase != STORM_PHASE_CALM)
                        calm = false;
        }

        if (cfg->action != STORM_ACTION_MITIGATE)
                level = 0;
        else if (storming) {
                if (level < want)
                        level = want;
                else if (level < STORM_MITIGATION_LEVEL_MAX &&
                         now - s->mitigation_changed_usec >= cfg->escalate_after_usec)
                        level++;
        } else if (calm && level > 0 && now - s->mitigation_changed_usec >= cfg->hold_down_usec * s->hold_down_factor)
                level = 0;

        if (level == s->mitigation_level)
                return false;

        if (level > 0 && s->mitigation_level == 0) {
                /* Back soon after the last lift: the mitigation was what kept it calm. */
                if (s->mitigation_lifted_usec > 0 &&
                    now - s->mitigation_lifted_usec < cfg->hold_down_usec * s->hold_down_factor)
                        s->hold_down_factor = MIN(s->hold_down_factor * 2, STORM_HOLD_DOWN_FACTOR_MAX);
                else
                        s->hold_down_factor = 1;
        }
        if (level == 0)
                s->mitigation_lifted_usec = now;

        s->mitigation_level = level;
        s->mitigation_changed_usec = now;
        return true;
}

static bool all_calm(const StormState *s) {
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++)
                if (s->kinds[k].phase != STORM_PHASE_CALM)
                        return false;
        return true;
}

StormChanges storm_classify(const StormConfig *cfg, StormState *state, const StormSample *prev,
                            const StormSample *cur) {
        StormChanges c = {};
        StormFigures interval;
        StormDeltas d;
        uint64_t now = cur->timestamp_usec;
        bool quiet, calm;

        if (!prev) {
                state->window = (StormDeltas) {};
                state->active = true;
                state->quiet_usec = 0;
                return c;
        }

        if (!deltas_from_interval(prev, cur, &d)) {
                c.interval_ignored = true;
                return c;
        }

        figures_from_deltas(&d, &interval);
        quiet = interval_is_quiet(cfg, &interval);

        deltas_add(&state->window, &d);
        if (reached(state->window.duration_usec, d.duration_usec, cfg->window_usec)) {
                StormFigures f;

                figures_from_deltas(&state->window, &f);
                state->window = (StormDeltas) {};
                state->latest = f;
                state->has_latest = true;
                c.window_completed = true;

                for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                        int r = advance_kind(cfg, &state->kinds[k], kind_is_hot(cfg, k, &f), &f, now);

                        if (r > 0)
                                c.detected |= 1u << k;
                        else if (r < 0)
                                c.cleared |= 1u << k;
                }
        }

        c.mitigation_changed = update_mitigation(cfg, state, now);

        calm = all_calm(state);
        if (quiet && calm)
                state->quiet_usec += d.duration_usec;
        else
                state->quiet_usec = 0;

        /* A run ends soon after a wake-up that came to nothing: the trigger fires at a tiny
         * stall share (a storm hardly shows as pressure), so ordinary pressure wakes thpd often,
         * and a run that outlasts it would make every blip cost a minute of sampling. A kind
         * that is suspect or cooling is not calm, so StormAfter= and CoolAfter= keep their
         * meaning; a storm that goes on keeps the trigger firing anyway. */
        if (!quiet || !calm)
                state->active = true;
        else if (state->mitigation_level == 0 && state->quiet_usec >= storm_config_idle_after_usec(cfg))
                state->active = false;

        return c;
}

uint64_t storm_config_idle_after_usec(const StormConfig *cfg) {
        return cfg->storm_after_usec + cfg->window_usec;
}

bool storm_state_is_idle(const StormState *s) {
        return !s->active;
}

char *storm_figures_describe(StormKind kind, const StormFigures *f) {
        g_autofree char *psi = NULL;
        double secs = (double) f->window_usec / (double) USEC_PER_SEC;

        psi = f->has_psi_memory ? g_strdup_printf("memory pressure %.1f%%", f->psi_memory_some_percent)
                                : g_strdup("memory pressure unknown (no PSI)");

        switch (kind) {
        case STORM_KIND_DIRECT_COMPACTION:
                if (f->mthp_size_kb > 0) {
                        char size[24];

                        format_page_size(f->mthp_size_kb, size);
                        return g_strdup_printf("%.1f direct compaction stalls/s, %.0f%% failed, %.0f pages scanned/s, "
                                               "%.1f THP fault fallbacks/s, %.1f mTHP fault fallbacks/s (%.1f/s at %s), "
                                               "%s, over %.1fs",
                                               f->compact_stalls_per_sec, 100.0 * f->compact_fail_ratio,
                                               f->compact_scanned_per_sec, f->thp_fault_fallback_per_sec,
                                               f->mthp_fault_fallback_per_sec, f->mthp_size_fault_fallback_per_sec, size,
                                               psi, secs);
                }
                return g_strdup_printf("%.1f direct compaction stalls/s, %.0f%% failed, %.0f pages scanned/s, "
                                       "%.1f THP fault fallbacks/s, %s, over %.1fs",
                                       f->compact_stalls_per_sec, 100.0 * f->compact_fail_ratio,
                                       f->compact_scanned_per_sec, f->thp_fault_fallback_per_sec, psi, secs);
        case STORM_KIND_KHUGEPAGED:
                return g_strdup_printf("khugepaged at %.0f%% of a CPU, %.1f failed collapse allocations/s, %s, over %.1fs",
                                       f->khugepaged_cpu_percent, f->thp_collapse_failed_per_sec, psi, secs);
        case STORM_KIND_KCOMPACTD:
                return g_strdup_printf("kcompactd at %.0f%% of a CPU, %.1f wake-ups/s, %s, over %.1fs",
                                       f->kcompactd_cpu_percent, f->compact_daemon_wakes_per_sec, psi, secs);
        default:
                return NULL;
        }
}

int storm_mitigation_votes(const StormConfig *cfg, unsigned level, KnobValue ret[_KNOB_MAX]) {
        /* kernel-facts §2: the khugepaged values are Huawei Cloud HCE's tuning for THP storms.
         * Storms come from anonymous faults and collapses: shmem (global and per size) is left to
         * the policies, and so are shrink_underused (it gives memory back under the very pressure
         * a storm brings) and use_zero_page (read faults that map it allocate nothing). */
        static const struct {
                unsigned level;
                Knob knob;
                const char *value;
        } steps[] = {
                { 2, KNOB_KHUGEPAGED_DEFRAG,                "0" },
                { 2, KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS,  "30000" },
                { 2, KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS, "120000" },
                { 2, KNOB_KHUGEPAGED_PAGES_TO_SCAN,         "2048" },
                { 3, KNOB_ENABLED,                          "madvise" },
        };
        KnobValue votes[_KNOB_MAX];
        int r;

        assert(cfg);
        assert(level <= STORM_MITIGATION_LEVEL_MAX);

        FOREACH_KNOB(k)
                votes[k] = KNOB_VALUE_UNSET;

        if (level >= 1)
                votes[KNOB_DEFRAG] = cfg->mitigation_defrag;

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                if (level < steps[i].level)
                        continue;
                r = knob_value_from_string(steps[i].knob, steps[i].value, &votes[steps[i].knob]);
                if (r < 0)
                        return r;
        }

        memcpy(ret, votes, sizeof(votes));
        return 0;
}

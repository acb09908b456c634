/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <linux/magic.h>
#include <sys/epoll.h>
#include <sys/statfs.h>
#include <sys/uio.h>
#include <systemd/sd-journal.h>

#include "log.h"
#include "procfs.h"
#include "storm.h"
#include "thp-stats-read.h"
#include "util.h"

struct StormWatcher {
        sd_event *event;
        char *procfs_root;
        char *sysfs_root;              /* NULL: no per-size counters */
        uint64_t pmd_size_kb;          /* 0: unknown */
        StormConfig config;
        StormCallback callback;
        void *userdata;

        sd_event_source *psi_source;   /* NULL: no trigger, the timer polls while idle */
        sd_event_source *timer_source;
        bool sampling;

        StormState state;
        StormSample prev;
        bool has_prev;

        ProcfsKthreads kthreads;
        unsigned kthreads_generation;
        uint64_t clock_ticks_per_sec;
        bool read_failed;              /* logged once until a sample succeeds again */
};

static char *format_usec(uint64_t usec) {
        if (usec < USEC_PER_SEC)
                return g_strdup_printf("%" PRIu64 "ms", usec / 1000);
        return g_strdup_printf("%" PRIu64 "s", (usec + USEC_PER_SEC / 2) / USEC_PER_SEC);
}

static void rediscover_kthreads(StormWatcher *w) {
        ProcfsKthreads k;
        int r;

        r = procfs_find_kthreads(w->procfs_root, &k);
        if (r < 0) {
                /* Without them only the kthread kinds go blind; compaction stalls are still seen. */
                log_debug_errno(r, "Cannot scan %s for khugepaged and kcompactd: %m", w->procfs_root);
                k = (ProcfsKthreads) {};
        }

        procfs_kthreads_done(&w->kthreads);
        w->kthreads = k;
        w->kthreads_generation++;
}

static uint64_t ticks_to_usec(const StormWatcher *w, uint64_t ticks) {
        return ticks * USEC_PER_SEC / w->clock_ticks_per_sec;
}

static bool read_kthread(const StormWatcher *w, pid_t pid, bool (*is_comm)(const char *), uint64_t *cpu_usec) {
        ProcStat st;

        /* The pid may have been reused since the scan; only the same kernel thread counts. */
        if (procfs_read_pid_stat(w->procfs_root, pid, &st) < 0 ||
            !(st.flags & PROC_FLAG_KTHREAD) || !is_comm(st.comm))
                return false;

        *cpu_usec += ticks_to_usec(w, st.utime_ticks + st.stime_ticks);
        return true;
}

static void sample_kthreads(StormWatcher *w, StormSample *s) {
        /* khugepaged exits when THP is set to never everywhere and comes back with a new pid, so
         * a thread that vanished means scanning again; twice at most, not racing forever. */
        for (unsigned attempt = 0; attempt < 2; attempt++) {
                uint64_t khugepaged = 0, kcompactd = 0;
                bool ok = true;

                if (w->kthreads.khugepaged > 0)
                        ok = read_kthread(w, w->kthreads.khugepaged, procfs_is_khugepaged_comm, &khugepaged);
                for (size_t i = 0; ok && i < w->kthreads.n_kcompactd; i++)
                        ok = read_kthread(w, w->kthreads.kcompactd[i], procfs_is_kcompactd_comm, &kcompactd);

                if (ok) {
                        s->has_khugepaged = w->kthreads.khugepaged > 0;
                        s->khugepaged_cpu_usec = khugepaged;
                        s->has_kcompactd = w->kthreads.n_kcompactd > 0;
                        s->kcompactd_cpu_usec = kcompactd;
                        break;
                }

                if (attempt == 0)
                        rediscover_kthreads(w);
        }

        s->kthreads_generation = w->kthreads_generation;
}

/* The per-size counters are optional (before 6.10 there are none): a size or counter that
 * cannot be read is only missing from this sample, and the classifier skips an interval of a
 * size it does not have at both ends. */
static void sample_sizes(const StormWatcher *w, StormSample *s) {
        const uint32_t mask = (1u << THP_STAT_ANON_FAULT_ALLOC) | (1u << THP_STAT_ANON_FAULT_FALLBACK) |
                              (1u << THP_STAT_SPLIT);
        g_autofree ThpSizeStats *sizes = NULL;
        size_t n = 0, used = 0;

        if (!w->sysfs_root || thp_stats_read_some(w->sysfs_root, mask, &sizes, &n) < 0)
                return;

        s->pmd_size_kb = w->pmd_size_kb;
        for (size_t i = 0; i < n && used < STORM_SIZES_MAX; i++) {
                if ((sizes[i].present & mask) != mask)
                        continue;
                s->sizes[used++] = (StormSizeCounters) {
                        .size_kb = sizes[i].size_kb,
                        .fault_alloc = sizes[i].value[THP_STAT_ANON_FAULT_ALLOC],
                        .fault_fallback = sizes[i].value[THP_STAT_ANON_FAULT_FALLBACK],
                        .split = sizes[i].value[THP_STAT_SPLIT],
                };
        }
}

static int take_sample(StormWatcher *w, StormSample *ret) {
        StormSample s = {};
        Pressure p;
        int r;

        r = procfs_read_vmstat(w->procfs_root, &s.vmstat);
        if (r < 0)
                return r;

        /* PSI is optional (psi=0, old kernels): the classifier copes without it. */
        if (procfs_read_pressure(w->procfs_root, "memory", &p) >= 0) {
                s.has_psi_memory = true;
                s.psi_memory_some_usec = p.some.total_usec;
                s.psi_memory_full_usec = p.full.total_usec;
        }
        if (procfs_read_pressure(w->procfs_root, "cpu", &p) >= 0) {
                s.has_psi_cpu = true;
                s.psi_cpu_some_usec = p.some.total_usec;
        }

        sample_kthreads(w, &s);
        sample_sizes(w, &s);

        r = sd_event_now(w->event, CLOCK_MONOTONIC, &s.timestamp_usec);
        if (r < 0)
                return r;

        *ret = s;
        return 0;
}

static int take_sample_logged(StormWatcher *w, StormSample *ret) {
        int r;

        r = take_sample(w, ret);
        if (r < 0) {
                if (!w->read_failed)
                        log_warning_errno(r, "Cannot read storm counters under %s, storm detection paused: %m",
                                          w->procfs_root);
                w->read_failed = true;
                return r;
        }

        if (w->read_failed)
                log_info("Storm counters under %s readable again, storm detection resumed.", w->procfs_root);
        w->read_failed = false;
        return 0;
}

static const char *kind_title(StormKind k) {
        switch (k) {
        case STORM_KIND_DIRECT_COMPACTION:
                return "Direct compaction";
        case STORM_KIND_KHUGEPAGED:
                return "khugepaged";
        case STORM_KIND_KCOMPACTD:
                return "kcompactd";
        default:
                return "Unknown";
        }
}

char **storm_watcher_journal_fields(const StormWatcher *w, StormEvent event, StormKind kind) {
        g_autoptr(GPtrArray) fields = NULL;
        g_autofree char *summary = NULL, *message = NULL;
        const StormKindState *ks;
        const StormFigures *f;
        bool detected;
        uint64_t duration;

        if (!w || kind < 0 || kind >= _STORM_KIND_MAX)
                return NULL;
        if (event != STORM_EVENT_DETECTED && event != STORM_EVENT_CLEARED)
                return NULL;

        ks = &w->state.kinds[kind];
        detected = event == STORM_EVENT_DETECTED;
        if (detected ? !ks->has_trip : !w->state.has_latest)
                return NULL;
        f = detected ? &ks->trip : &w->state.latest;
        duration = detected ? 0 : ks->phase_since_usec - ks->storm_since_usec;

        summary = storm_figures_describe(kind, f);
        if (detected)
                message = g_strdup_printf("%s storm detected: %s", kind_title(kind), summary);
        else {
                g_autofree char *d = format_usec(duration);

                message = g_strdup_printf("%s storm cleared after %s: %s", kind_title(kind), d, summary);
        }

        fields = g_ptr_array_new_with_free_func(g_free);
#define ADD(...) g_ptr_array_add(fields, g_strdup_printf(__VA_ARGS__))
        ADD("MESSAGE=%s", message);
        ADD("MESSAGE_ID=%s", detected ? STORM_MESSAGE_ID_DETECTED : STORM_MESSAGE_ID_CLEARED);
        ADD("PRIORITY=%d", detected ? LOG_WARNING : LOG_NOTICE);
        ADD("SYSLOG_IDENTIFIER=%s", program_invocation_short_name);
        ADD("THPD_STORM_KIND=%s", storm_kind_to_string(kind));
        ADD("THPD_STORM_EVENT=%s", detected ? "detected" : "cleared");
        if (!detected)
                ADD("THPD_STORM_DURATION_USEC=%" PRIu64, duration);
        ADD("THPD_STORM_WINDOW_USEC=%" PRIu64, f->window_usec);
        ADD("THPD_COMPACT_STALLS_PER_SEC=%.2f", f->compact_stalls_per_sec);
        ADD("THPD_COMPACT_FAIL_RATIO=%.3f", f->compact_fail_ratio);
        ADD("THPD_COMPACT_SCANNED_PER_SEC=%.0f", f->compact_scanned_per_sec);
        ADD("THPD_THP_FAULT_FALLBACK_PER_SEC=%.2f", f->thp_fault_fallback_per_sec);
        ADD("THPD_THP_FAULT_FALLBACK_RATIO=%.3f", f->thp_fault_fallback_ratio);
        ADD("THPD_THP_COLLAPSE_FAILED_PER_SEC=%.2f", f->thp_collapse_failed_per_sec);
        ADD("THPD_THP_SPLIT_PER_SEC=%.2f", f->thp_split_per_sec);
        ADD("THPD_MTHP_FAULT_FALLBACK_PER_SEC=%.2f", f->mthp_fault_fallback_per_sec);
        ADD("THPD_MTHP_SPLIT_PER_SEC=%.2f", f->mthp_split_per_sec);
        if (f->mthp_size_kb > 0)
                ADD("THPD_MTHP_SIZE_KB=%" PRIu64, f->mthp_size_kb);
        ADD("THPD_ALLOCSTALLS_PER_SEC=%.2f", f->allocstalls_per_sec);
        ADD("THPD_COMPACT_DAEMON_WAKES_PER_SEC=%.2f", f->compact_daemon_wakes_per_sec);
        ADD("THPD_KHUGEPAGED_CPU_PERCENT=%.1f", f->khugepaged_cpu_percent);
        ADD("THPD_KCOMPACTD_CPU_PERCENT=%.1f", f->kcompactd_cpu_percent);
        if (f->has_psi_memory) {
                ADD("THPD_PSI_MEMORY_SOME_PERCENT=%.1f", f->psi_memory_some_percent);
                ADD("THPD_PSI_MEMORY_FULL_PERCENT=%.1f", f->psi_memory_full_percent);
        }
        if (f->has_psi_cpu)
                ADD("THPD_PSI_CPU_SOME_PERCENT=%.1f", f->psi_cpu_some_percent);
        ADD("THPD_STORM_ACTION=%s", storm_action_to_string(w->config.action));
        ADD("THPD_MITIGATION_LEVEL=%u", w->state.mitigation_level);
#undef ADD
        g_ptr_array_add(fields, NULL);

        return (char **) g_ptr_array_free(g_steal_pointer(&fields), false);
}

static void journal_storm(const StormWatcher *w, StormEvent event, StormKind kind) {
        g_auto(GStrv) fields = storm_watcher_journal_fields(w, event, kind);
        g_autofree struct iovec *iov = NULL;
        int priority = event == STORM_EVENT_DETECTED ? LOG_WARNING : LOG_NOTICE;
        guint n;
        int r;

        if (!fields)
                return;

        n = g_strv_length(fields);
        iov = g_new(struct iovec, n);
        for (guint i = 0; i < n; i++)
                iov[i] = (struct iovec) { .iov_base = fields[i], .iov_len = strlen(fields[i]) };

        r = sd_journal_sendv(iov, (int) n);

        /* Under systemd stderr already goes to the journal, where the structured entry is the one
         * to keep; elsewhere (a terminal, a test, no journald) the plain line is all there is.
         * fields[0] is MESSAGE=. */
        if (r < 0 || !getenv("JOURNAL_STREAM"))
                log_full(priority, "%s", fields[0] + strlen("MESSAGE="));
}

static void report(StormWatcher *w, const StormChanges *c) {
        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                if (!(c->detected & (1u << k)))
                        continue;
                journal_storm(w, STORM_EVENT_DETECTED, k);
                if (w->callback)
                        w->callback(w, STORM_EVENT_DETECTED, k, &w->state.kinds[k].trip, w->userdata);
        }

        for (StormKind k = 0; k < _STORM_KIND_MAX; k++) {
                if (!(c->cleared & (1u << k)))
                        continue;
                journal_storm(w, STORM_EVENT_CLEARED, k);
                if (w->callback)
                        w->callback(w, STORM_EVENT_CLEARED, k, &w->state.latest, w->userdata);
        }

        if (c->mitigation_changed) {
                if (w->state.mitigation_level > 0)
                        log_notice("Storm mitigation at step %u of %u.", w->state.mitigation_level,
                                   STORM_MITIGATION_LEVEL_MAX);
                else
                        log_notice("Storm mitigation lifted: calm for the hold-down time.");
                if (w->callback)
                        w->callback(w, STORM_EVENT_MITIGATION_CHANGED, _STORM_KIND_INVALID, NULL, w->userdata);
        }
}

static int arm_timer(StormWatcher *w, uint64_t base_usec, uint64_t interval_usec) {
        uint64_t now, next;
        int r;

        r = sd_event_now(w->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;

        /* Fixed rate, not fixed delay; after falling behind, start over from now. */
        next = base_usec + interval_usec;
        if (next <= now)
                next = now + interval_usec;

        r = sd_event_source_set_time(w->timer_source, next);
        if (r < 0)
                return r;
        r = sd_event_source_set_time_accuracy(w->timer_source, MAX(interval_usec / 20, UINT64_C(1)));
        if (r < 0)
                return r;
        return sd_event_source_set_enabled(w->timer_source, SD_EVENT_ONESHOT);
}

static int schedule(StormWatcher *w, uint64_t base_usec) {
        if (!storm_state_is_idle(&w->state)) {
                w->sampling = true;
                return arm_timer(w, base_usec, w->config.sample_interval_usec);
        }

        if (w->sampling)
                log_debug("Storm watcher idle again.");
        w->sampling = false;

        if (w->psi_source) {
                /* The trigger wakes us; the next run starts from a fresh sample. */
                w->has_prev = false;
                return sd_event_source_set_enabled(w->timer_source, SD_EVENT_OFF);
        }
        return arm_timer(w, base_usec, w->config.idle_poll_interval_usec);
}

/* Whether the interval since the last poll was quiet: classified on a copy of the state, which
 * the caller keeps only when it was. */
static bool quiet_poll(const StormWatcher *w, const StormSample *cur) {
        StormState probe = w->state;

        (void) storm_classify(&w->config, &probe, &w->prev, cur);
        return storm_state_is_idle(&probe);
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        StormWatcher *w = userdata;
        StormChanges changes;
        StormSample cur;
        bool was_idle = storm_state_is_idle(&w->state);
        int r;

        if (take_sample_logged(w, &cur) < 0) {
                /* Keep the phases: a storm in progress stays reported until counters are back
                 * and show it over. The next good sample only starts a new interval. */
                w->has_prev = false;
                r = schedule(w, usec);
                if (r < 0)
                        log_error_errno(r, "Cannot re-arm the storm watcher timer: %m");
                return 0;
        }

        if (w->has_prev && was_idle && !w->psi_source && !quiet_poll(w, &cur)) {
                /* Without a PSI trigger, a poll that was not quiet stands in for the trigger: it
                 * starts a sampling run, and only StormAfter= of heat sampled from here on is a
                 * storm. Classifying the whole poll interval would make one short burst inside
                 * it a storm "over" the interval. */
                (void) storm_classify(&w->config, &w->state, NULL, &cur);
                log_debug("Storm counters not quiet over the last poll: sampling them.");
        } else if (w->has_prev) {
                changes = storm_classify(&w->config, &w->state, &w->prev, &cur);
                report(w, &changes);
        }
        w->prev = cur;
        w->has_prev = true;

        /* A polled run starts here: look for kthreads that started since the last scan (not
         * done while idle, where it would mean reading every /proc/PID/stat each poll), and
         * re-read the new set so the next interval compares like with like. */
        if (was_idle && !storm_state_is_idle(&w->state)) {
                rediscover_kthreads(w);
                sample_kthreads(w, &w->prev);
        }

        r = schedule(w, usec);
        if (r < 0)
                log_error_errno(r, "Cannot re-arm the storm watcher timer: %m");
        return 0;
}

static int fall_back_to_polling(StormWatcher *w, const char *why) {
        g_autofree char *interval = format_usec(w->config.idle_poll_interval_usec);
        uint64_t now;
        int r;

        log_notice("No PSI trigger on %s/pressure/memory (%s): checking for storms every %s instead of waiting "
                   "for the kernel to signal memory pressure.",
                   w->procfs_root, why, interval);

        w->psi_source = sd_event_source_disable_unref(w->psi_source);
        if (w->sampling)
                return 0; /* the run in progress will idle on the poll timer */

        r = sd_event_now(w->event, CLOCK_MONOTONIC, &now);
        if (r < 0)
                return r;
        return arm_timer(w, now, w->config.idle_poll_interval_usec);
}

static int on_psi(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        StormWatcher *w = userdata;
        StormSample cur;
        int r;

        if (revents & (EPOLLERR | EPOLLHUP)) {
                r = fall_back_to_polling(w, "the trigger was removed");
                if (r < 0)
                        log_error_errno(r, "Cannot arm the storm watcher timer: %m");
                return 0;
        }

        /* During a run the timer samples anyway; the trigger fires at most once per window. */
        if (w->sampling)
                return 0;

        rediscover_kthreads(w);
        if (take_sample_logged(w, &cur) < 0)
                return 0;

        (void) storm_classify(&w->config, &w->state, NULL, &cur);
        w->prev = cur;
        w->has_prev = true;
        log_debug("Memory pressure above %.1f%%: sampling storm counters.", storm_config_wake_percent(&w->config));

        r = schedule(w, cur.timestamp_usec);
        if (r < 0)
                log_error_errno(r, "Cannot arm the storm watcher timer: %m");
        return 0;
}

static int psi_trigger_open(const char *procfs_root, double percent, int *ret_fd) {
        g_autofree char *path = g_build_filename(procfs_root, "pressure", "memory", NULL);
        _cleanup_close_ int fd = -1;
        struct statfs sfs;
        uint64_t stall;
        char buf[64];

        /* A trigger is a write the kernel interprets; written to a plain file in a scratch tree
         * it would only clobber the file. */
        if (statfs(path, &sfs) < 0)
                return -errno;
        if (sfs.f_type != PROC_SUPER_MAGIC)
                return -EOPNOTSUPP;

        fd = open(path, O_RDWR | O_NONBLOCK | O_CLOEXEC);
        if (fd < 0)
                return -errno;

        stall = (uint64_t) (percent / 100.0 * (double) STORM_PSI_TRIGGER_WINDOW_USEC);
        stall = CLAMP(stall, UINT64_C(1), STORM_PSI_TRIGGER_WINDOW_USEC);
        snprintf(buf, sizeof buf, "some %" PRIu64 " %" PRIu64, stall, STORM_PSI_TRIGGER_WINDOW_USEC);

        /* psi_write() turns the last byte written into the terminator: without the NUL the
         * window would lose its last digit (and fail the 2 s multiple rule). */
        if (write(fd, buf, strlen(buf) + 1) < 0)
                return -errno;

        *ret_fd = TAKE_FD(fd);
        return 0;
}

static int setup_psi_trigger(StormWatcher *w) {
        _cleanup_close_ int fd = -1;
        int r;

        r = psi_trigger_open(w->procfs_root, storm_config_wake_percent(&w->config), &fd);
        if (r < 0)
                return r;

        r = sd_event_add_io(w->event, &w->psi_source, fd, EPOLLPRI, on_psi, w);
        if (r < 0)
                return r;
        r = sd_event_source_set_io_fd_own(w->psi_source, true);
        if (r < 0) {
                w->psi_source = sd_event_source_disable_unref(w->psi_source);
                return r;
        }
        TAKE_FD(fd);

        (void) sd_event_source_set_description(w->psi_source, "storm-psi-trigger");
        return 0;
}

int storm_watcher_new(sd_event *e, const char *procfs_root, const char *sysfs_root, const StormConfig *cfg, StormCallback cb,
                      void *userdata, StormWatcher **ret) {
        _cleanup_storm_watcher_ StormWatcher *w = NULL;
        long tck;
        int r;

        if (!e || !procfs_root || !cfg || !ret)
                return -EINVAL;
        if (cfg->sample_interval_usec == 0 || cfg->idle_poll_interval_usec == 0 || cfg->window_usec == 0)
                return -EINVAL;

        tck = sysconf(_SC_CLK_TCK);
        if (tck <= 0)
                return -EINVAL;

        w = g_new0(StormWatcher, 1);
        w->event = sd_event_ref(e);
        w->procfs_root = g_strdup(procfs_root);
        w->sysfs_root = g_strdup(sysfs_root);
        /* Without the PMD size no per-size counter is taken for vmstat's: on x86-64 it is 2 MiB,
         * and a kernel with per-size counters has the file. */
        if (sysfs_root && thp_stats_read_pmd_size_kb(sysfs_root, &w->pmd_size_kb) < 0)
                w->pmd_size_kb = 0;
        w->config = *cfg;
        w->callback = cb;
        w->userdata = userdata;
        w->clock_ticks_per_sec = (uint64_t) tck;
        storm_state_init(&w->state);

        rediscover_kthreads(w);
        r = take_sample(w, &w->prev);
        if (r < 0)
                return r;
        w->has_prev = true;

        r = sd_event_add_time(e, &w->timer_source, CLOCK_MONOTONIC, 0, 0, on_timer, w);
        if (r < 0)
                return r;
        r = sd_event_source_set_enabled(w->timer_source, SD_EVENT_OFF);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(w->timer_source, "storm-sample");

        r = setup_psi_trigger(w);
        if (r >= 0) {
                /* Idle until the kernel reports pressure; the baseline will be taken then. */
                w->has_prev = false;
                log_debug("Storm watcher waiting on a PSI trigger (memory some %.1f%% of %" PRIu64 "s).",
                          storm_config_wake_percent(&w->config), STORM_PSI_TRIGGER_WINDOW_USEC / USEC_PER_SEC);
        } else {
                r = fall_back_to_polling(w, strerror(-r));
                if (r < 0)
                        return r;
        }

        *ret = TAKE_PTR(w);
        return 0;
}

StormWatcher *storm_watcher_free(StormWatcher *w) {
        if (!w)
                return NULL;

        sd_event_source_disable_unref(w->psi_source);
        sd_event_source_disable_unref(w->timer_source);
        sd_event_unref(w->event);
        procfs_kthreads_done(&w->kthreads);
        g_free(w->procfs_root);
        g_free(w->sysfs_root);
        g_free(w);
        return NULL;
}

const StormState *storm_watcher_get_state(const StormWatcher *w) {
        return &w->state;
}

StormPhase storm_watcher_get_phase(const StormWatcher *w, StormKind kind) {
        if (kind < 0 || kind >= _STORM_KIND_MAX)
                return _STORM_PHASE_INVALID;
        return w->state.kinds[kind].phase;
}

const StormFigures *storm_watcher_get_latest(const StormWatcher *w) {
        return w->state.has_latest ? &w->state.latest : NULL;
}

const StormFigures *storm_watcher_get_trip(const StormWatcher *w, StormKind kind) {
        if (kind < 0 || kind >= _STORM_KIND_MAX || !w->state.kinds[kind].has_trip)
                return NULL;
        return &w->state.kinds[kind].trip;
}

unsigned storm_watcher_get_mitigation_level(const StormWatcher *w) {
        return w->state.mitigation_level;
}

bool storm_watcher_is_sampling(const StormWatcher *w) {
        return w->sampling;
}

bool storm_watcher_has_psi_trigger(const StormWatcher *w) {
        return w->psi_source != NULL;
}

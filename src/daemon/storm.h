/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-event.h>

#include "storm-classify.h"

/* The storm watcher: reads <procfs>/vmstat, pressure/{memory,cpu} and the khugepaged/kcompactd
 * stat files, feeds them to storm_classify() and reports phase changes.
 *
 * Idle costs nothing: a PSI trigger on <procfs>/pressure/memory ("some" stall of PressurePercent=
 * of a 2 s window) wakes it, and only then does it sample every SampleInterval=, until the run
 * ends (see StormState.active). Where no trigger can be set up (no PSI, psi=0, or a procfs root
 * that is a scratch directory of plain files) it says so once and looks every
 * IdlePollInterval= instead; that same path is what tests drive. */

/* MESSAGE_ID= of the journal entries, for journalctl MESSAGE_ID=... and a message catalog. */
#define STORM_MESSAGE_ID_DETECTED "6d9646b4df384cb5938916b6147970d4"
#define STORM_MESSAGE_ID_CLEARED "1cf284611b324b1ab1f605a087418a73"

/* PSI trigger window. Without CAP_SYS_RESOURCE the kernel only takes multiples of 2 s, and a
 * shorter window would only make the wake-up more eager. */
#define STORM_PSI_TRIGGER_WINDOW_USEC (2 * USEC_PER_SEC)

typedef struct StormWatcher StormWatcher;

typedef enum StormEvent {
        STORM_EVENT_DETECTED,           /* kind entered STORM; figures: what tripped it */
        STORM_EVENT_CLEARED,            /* kind went back to CALM; figures: the last window */
        STORM_EVENT_MITIGATION_CHANGED, /* see storm_watcher_get_mitigation_level(); no kind, no figures */
        _STORM_EVENT_MAX,
        _STORM_EVENT_INVALID = -EINVAL,
} StormEvent;

/* kind is _STORM_KIND_INVALID and figures NULL for STORM_EVENT_MITIGATION_CHANGED. The callback
 * must not free the watcher. */
typedef void (*StormCallback)(StormWatcher *w, StormEvent event, StormKind kind, const StormFigures *figures,
                              void *userdata);

/* Fails (-ENOENT, -EACCES, -EBADMSG) when <procfs_root>/vmstat cannot be read: without it there
 * is nothing to watch. The per-size THP counters are read under sysfs_root (NULL: not at all);
 * a kernel without them is watched through vmstat alone. cfg is copied. */
int storm_watcher_new(sd_event *e, const char *procfs_root, const char *sysfs_root, const StormConfig *cfg, StormCallback cb,
                      void *userdata, StormWatcher **ret);
StormWatcher *storm_watcher_free(StormWatcher *w);

static inline void storm_watcher_freep(StormWatcher **w) {
        storm_watcher_free(*w);
}
#define _cleanup_storm_watcher_ _cleanup_(storm_watcher_freep)

const StormState *storm_watcher_get_state(const StormWatcher *w);
StormPhase storm_watcher_get_phase(const StormWatcher *w, StormKind kind);
/* The last complete window, or NULL before the first one. */
const StormFigures *storm_watcher_get_latest(const StormWatcher *w);
/* What declared the current (or last) storm of this kind, or NULL if there never was one. */
const StormFigures *storm_watcher_get_trip(const StormWatcher *w, StormKind kind);
unsigned storm_watcher_get_mitigation_level(const StormWatcher *w);
/* The fields of the journal entry sent when kind's storm was detected or cleared, from the
 * current state: "MESSAGE=...", "MESSAGE_ID=...", "THPD_STORM_KIND=...", the figures as THPD_*
 * fields. NULL-terminated, free with g_strfreev(); NULL when there is no such storm to report. */
char **storm_watcher_journal_fields(const StormWatcher *w, StormEvent event, StormKind kind);
/* True while a sampling run is under way (timer at SampleInterval=). */
bool storm_watcher_is_sampling(const StormWatcher *w);
/* True when a PSI trigger wakes the watcher, false when it polls every IdlePollInterval=. */
bool storm_watcher_has_psi_trigger(const StormWatcher *w);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Knobs written behind thpd's back. No timer: an inotify watch on every knob file and pool
 * counter tells thpd of each write as it happens; a unit's job end (for a file that could not be
 * watched) and a status or Explain call look too. What it reads is compared with what thpd
 * applied, and drift.c decides: restore, adopt, or yield to a writer that keeps rewriting. The
 * writer is named from the job running when the write came, a job that just ended, or TuneD's
 * own profile_changed signal. */

/* MESSAGE_ID= of the journal entry for each knob found changed. */
#define DRIFT_MESSAGE_ID "4469ac6123a745948c4584f1302f5e7d"

/* Starts watching (after the unit tracker exists): job signals, TuneD's signal; the files are
 * watched from the first apply on. */
int manager_drift_start(Manager *m);
void manager_drift_stop(Manager *m);

/* After each apply, before it is published: arms watches for pools new to the baseline, and
 * notes how long each item restored since the last look was wrong. */
void manager_drift_applied(Manager *m);

/* Whether the knob's file is watched and nobody wrote it since thpd last read or wrote it: then
 * m->applied[k] is what the kernel has, and an apply need not read it. */
bool manager_drift_knob_unchanged(const Manager *m, Knob k);

/* A status or Explain call is about to be answered: reads every item, records and reports what
 * changed, and queues the apply that acts on it. Writes nothing itself. */
void manager_drift_look(Manager *m);

/* The conflicts changed (one ended, or a reload ended them all): each item's owner follows. */
void manager_drift_conflicts_changed(Manager *m);

/* An item found at start written while thpd was not running (ownership.h), as the first apply
 * judged it (restored or adopted): logged, counted and reported like any drift. */
void manager_drift_found_while_down(Manager *m, const char *item, DriftAction action, const char *expected,
                                    const char *found);

/* How often each (knob, writer) was found changed, for the metrics; sorted. */
GArray *manager_drift_counts(const Manager *m);

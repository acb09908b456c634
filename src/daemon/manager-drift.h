/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"

/* Knobs written behind thpd's back. No timer: thpd looks when a unit's job ends (the unit
 * tracker sees every job end) and before it answers a status or Explain call, compares what it
 * reads with what it applied, and leaves the decision to drift.c: restore, adopt, or yield to a
 * writer that keeps rewriting. */

/* MESSAGE_ID= of the journal entry for each knob found changed. */
#define DRIFT_MESSAGE_ID "4469ac6123a745948c4584f1302f5e7d"

/* Starts following job ends (after the unit tracker exists). */
void manager_drift_start(Manager *m);

/* Reads the knobs and acts on those that changed since the last apply. job: the job that just
 * ended, credited with the change; NULL at a status call: then a job end still waiting for its
 * look is credited, and without one the writer is unknown. */
void manager_check_drift(Manager *m, const DriftJob *job);

/* How often each (knob, writer) was found changed, for the metrics; sorted. */
GArray *manager_drift_counts(const Manager *m);

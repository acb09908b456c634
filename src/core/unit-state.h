/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

/* What a unit's state means to thpd, from what the systemd manager says of it: its ActiveState
 * and SubState, and the type of its job. The unit tracker (daemon/units.c) holds these as the
 * signals bring them; the rules that read them are here. */

/* What the tracker holds of a unit. */
typedef struct UnitFacts {
        const char *active_state; /* ActiveState; NULL until known */
        const char *sub_state;    /* SubState; NULL until known */
        bool start_job;           /* a job of a type unit_job_type_is_start() accepts is queued */
        /* "exited" with processes left in its control group (the tracker asks when it exits). */
        bool exited_with_processes;
} UnitFacts;

/* A start job queued, activating, reloading, or active: a policy is for it now. A service that
 * has exited but stays active (RemainAfterExit=yes) counts only while it left processes behind. */
bool unit_state_wanted(const UnitFacts *u);
/* Running already (active or reloading, with the same exception) with no start job: a policy
 * applied now comes too late for the memory it has mapped. */
bool unit_state_running(const UnitFacts *u);

/* SubState "exited": the main process ended, whatever ActiveState says. */
bool unit_sub_state_exited(const char *sub_state);
/* Whether a change of ActiveState from before (NULL: not known yet) to after is a stop: from
 * any other state into deactivating, inactive or failed. A unit that restarts between two
 * applies is told from one that ran on by these, although both look the same at the second. */
bool unit_state_stopped(const char *before, const char *after);

/* The JobType values that bring a unit up: a restart's stop half must not release its policy. */
bool unit_job_type_is_start(const char *type);
/* The JobType values of a restart: thpd's own unit with one hands over to the next instance. */
bool unit_job_type_is_restart(const char *type);

/* A unit's ActiveState when no job of it runs, as the drift watch follows a writer in conflict. */
typedef enum UnitSettled {
        UNIT_SETTLED_NO,      /* on the way: activating, deactivating, or a state thpd does not know */
        UNIT_SETTLED_RUNNING, /* active or reloading */
        UNIT_SETTLED_STOPPED, /* inactive or failed */
} UnitSettled;

UnitSettled unit_state_settled(const char *active_state);

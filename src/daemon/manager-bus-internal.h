/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager.h"
#include "polkit.h"

/* What manager-bus.c and manager-bus-await.c share: the bus listener's state. */

/* Await() callers held at once. Each costs a message and a bus match; beyond this a caller gets
 * LimitsExceeded instead of our memory. */
#define AWAITERS_MAX 1024U
/* Await() calls one user (but root) may have waiting: another user's still find a slot. */
#define AWAITERS_PER_UID_MAX 64U

/* Caller-supplied strings are cut to this many characters in error messages and logs. */
#define QUOTE_MAX 64

/* Matches the limit systemd puts on unit names. */
#define UNIT_NAME_MAX 256

typedef struct BusData BusData;

typedef struct Awaiter {
        BusData *d;
        sd_bus_message *call;
        sd_bus_track *track; /* drops the awaiter when its caller leaves the bus */
        uid_t uid;           /* the caller's effective uid */
        uint64_t deadline;   /* CLOCK_MONOTONIC µs: answered with THPD_ERROR_TIMEOUT then */
} Awaiter;

/* PropertiesChanged goes out at most this often while things change (emit_changed_properties()). */
#define ANNOUNCE_INTERVAL_USEC (100 * UINT64_C(1000))

/* Properties that send PropertiesChanged; see tracked_properties[]. */
enum {
        TRACKED_KNOBS,
        TRACKED_ACTIVE_POLICIES,
        TRACKED_POOLS,
        TRACKED_NEEDS_RESTART,
        TRACKED_ISOLATED_SERVICES,
        TRACKED_OVERRIDE,
        TRACKED_OVERRIDE_EXPIRES_AT,
        TRACKED_STORM_STATE,
        TRACKED_STORM_ACTION,
        TRACKED_STATUS,
        TRACKED_POLICY_DIAGNOSTICS,
        TRACKED_DRIFT_CONFLICTS,
        TRACKED_RECENT_DRIFT,
        _TRACKED_MAX,
};

/* The bus listener's userdata, and that of the object's vtable, the exit hook and the timers. */
struct BusData {
        Manager *m;
        sd_bus_slot *vtable_slot;
        sd_bus_slot *status_filter_slot;
        sd_event_source *exit_source;
        PolkitRegistry *polkit;
        GPtrArray *awaiters;               /* Awaiter*, in the order they came */
        GPtrArray *usage_requests;         /* UsageRequest*: GetUnitUsage calls waiting (manager-usage.c) */
        sd_event_source *await_timer;      /* the earliest awaiter's deadline */
        /* A digest of each tracked property's value as last announced: PropertiesChanged goes out
         * only for what really changed, so an idle daemon is silent. A digest, not the value:
         * Knobs alone is 4 kB as text, which the daemon would hold for good and rebuild at every
         * apply. */
        uint64_t announced[_TRACKED_MAX];
        bool announced_valid[_TRACKED_MAX];
        /* Changes the plan flagged since the last PropertiesChanged, and when that went out
         * (emit_changed_properties()). */
        bool pending_active_policies;
        bool pending_needs_restart;
        uint64_t last_announced_usec;
        sd_event_source *announce_timer;
};

/* The Manager whose state the object shows; userdata: the BusData the vtable was registered with. */
static inline Manager *bus_manager(void *userdata) {
        return ((BusData *) userdata)->m;
}

/* A caller's string for a message: quoted and cut, so a megabyte of junk does not echo back. */
char *bus_quote(const char *s);

/* Await(): the method, the answers after each apply, and an error for each caller still waiting
 * when thpd stops. */
int method_await(sd_bus_message *msg, void *userdata, sd_bus_error *error);
void bus_answer_awaiters(BusData *d);
void bus_fail_awaiters(BusData *d);
void bus_awaiter_free(gpointer p);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include "manager-bus-properties.h"
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

/* Properties that send PropertiesChanged, in MANAGER_PROPERTIES() order. */
#define TRACKED_ENUM(id, name, signature, get, digest) TRACKED_##id,
enum {
        MANAGER_PROPERTIES(TRACKED_ENUM, PROPERTY_IGNORE)
        _TRACKED_MAX,
};
#undef TRACKED_ENUM

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
        /* The digest of each tracked property's value as last announced (once announced_once):
         * PropertiesChanged goes out only for what really changed, so an idle daemon is silent. A
         * digest, not the value: Knobs alone is 4 kB as text, which the daemon would hold for good
         * and rebuild at every apply. */
        uint64_t announced[_TRACKED_MAX];
        bool announced_once;
        /* How many applies the plan said changed ActivePolicies or NeedsRestart: their digests.
         * Each has an entry per active policy or unit, the costly ones to go through at every
         * apply, and the plan knows exactly when they change. */
        uint64_t active_policies_changes;
        uint64_t needs_restart_changes;
        /* When the last PropertiesChanged went out (emit_changed_properties()). */
        uint64_t last_announced_usec;
        sd_event_source *announce_timer;
};

/* The Manager whose state the object shows; userdata: the BusData the vtable was registered with. */
static inline Manager *bus_manager(void *userdata) {
        return ((BusData *) userdata)->m;
}

/* The object's vtable: the properties of MANAGER_PROPERTIES(), the methods and the signals.
 * Not static for test-bus-properties, which checks that every property in it that emits
 * PropertiesChanged has a digest. */
extern const sd_bus_vtable bus_manager_vtable[];

/* A caller's string for a message: quoted and cut, so a megabyte of junk does not echo back. */
char *bus_quote(const char *s);

/* Await(): the method, the answers after each apply, and an error for each caller still waiting
 * when thpd stops. */
int method_await(sd_bus_message *msg, void *userdata, sd_bus_error *error);
void bus_answer_awaiters(BusData *d);
void bus_fail_awaiters(BusData *d);
void bus_awaiter_free(gpointer p);

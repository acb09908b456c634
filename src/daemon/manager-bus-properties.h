/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* The properties of org.thpd1.Manager: the getters its vtable names (userdata: the bus
 * listener's BusData; they read its Manager, bus_manager()), the digests that tell whether one
 * changed, and the helpers its methods and signals share with them. */

typedef struct BusData BusData;

/* Every property of the object, in the vtable's order; the one list the vtable, the TRACKED_
 * enum and the announcing table are made from (manager-bus.c), so that a property cannot emit
 * PropertiesChanged without a digest. TRACKED(ID, name, signature, getter, digest): emits
 * PropertiesChanged; its digest is computed from the state the getter shows, equal while the
 * value is (a change of the digest without one of the value only costs a spurious signal).
 * PLAIN(name, signature, getter, flags): never emits (CONST or 0; a static assertion refuses
 * EMITS_CHANGE and EMITS_INVALIDATION). test-bus-properties checks the vtable and
 * data/org.thpd1.Manager.xml against this list. */
#define MANAGER_PROPERTIES(TRACKED, PLAIN)                                                                          \
        PLAIN("Version", "s", property_get_version, SD_BUS_VTABLE_PROPERTY_CONST)                                   \
        TRACKED(KNOBS, "Knobs", "a(sssssss)", property_get_knobs, property_digest_knobs)                            \
        TRACKED(ACTIVE_POLICIES, "ActivePolicies", "a(sas)", property_get_active_policies,                          \
                property_digest_active_policies)                                                                    \
        TRACKED(POOLS, "HugeTLBPools", "a(tittts)", property_get_pools, property_digest_pools)                      \
        TRACKED(NEEDS_RESTART, "NeedsRestart", "a(ss)", property_get_needs_restart, property_digest_needs_restart)  \
        TRACKED(ISOLATED_SERVICES, "IsolatedServices", "a(sssssssb)", property_get_isolated_services,               \
                property_digest_isolated_services)                                                                  \
        TRACKED(BLANKET_SINCE, "BlanketSince", "t", property_get_blanket_since, property_digest_blanket_since)      \
        TRACKED(BLANKET_SERVICES, "BlanketServices", "a(ss)", property_get_blanket_services,                        \
                property_digest_blanket_services)                                                                   \
        TRACKED(OVERRIDE, "Override", "a{ss}", property_get_override, property_digest_override)                     \
        TRACKED(OVERRIDE_EXPIRES_AT, "OverrideExpiresAt", "t", property_get_override_expires_at,                    \
                property_digest_override_expires_at)                                                                \
        TRACKED(STORM_STATE, "StormState", "s", property_get_storm_state, property_digest_storm_state)              \
        PLAIN("Storms", "a(ssa{sd})", property_get_storms, 0)                                                       \
        PLAIN("SizeStats", "a(tsa{st})", property_get_size_stats, 0)                                                \
        TRACKED(STORM_ACTION, "StormAction", "s", property_get_storm_action, property_digest_storm_action)          \
        TRACKED(STATUS, "Status", "s", property_get_status, property_digest_status)                                 \
        TRACKED(POLICY_DIAGNOSTICS, "PolicyDiagnostics", "a(ssuss)", property_get_policy_diagnostics,               \
                property_digest_policy_diagnostics)                                                                 \
        TRACKED(DRIFT_CONFLICTS, "DriftConflicts", "a(sssts)", property_get_drift_conflicts,                        \
                property_digest_drift_conflicts)                                                                    \
        TRACKED(RECENT_DRIFT, "RecentDrift", "a(sssssttts)", property_get_recent_drift, property_digest_recent_drift)  \
        TRACKED(OWNERSHIP, "Ownership", "a(sss)", property_get_ownership, property_digest_ownership)                \
        TRACKED(KNOB_NOTES, "KnobNotes", "a(sss)", property_get_knob_notes, property_digest_knob_notes)

/* For the rows of MANAGER_PROPERTIES() a use of it leaves out. */
#define PROPERTY_IGNORE(...)

/* "" for a value the kernel did not give. */
const char *bus_knob_value(Knob k, KnobValue v, char buf[static 24]);
PolicyRuntime *bus_policy_runtime(const Manager *m, const char *policy_name);
bool bus_policy_is_active(const Manager *m, const char *policy_name);
int bus_append_strings(sd_bus_message *reply, GPtrArray *strings);
/* The figures that tell a storm of this kind, as a{sd}. */
int bus_append_storm_figures(sd_bus_message *msg, StormKind kind, const StormFigures *f);

/* The getter of every property and the digest of every tracked one, declared from
 * MANAGER_PROPERTIES(). A digest is equal while its property's value is. */
#define PROPERTY_DECLARE_GETTER(getter)                                                                             \
        int getter(sd_bus *bus, const char *path, const char *interface, const char *property,                     \
                   sd_bus_message *reply, void *userdata, sd_bus_error *error);
#define PROPERTY_DECLARE_TRACKED(id, name, signature, getter, digest)                                               \
        PROPERTY_DECLARE_GETTER(getter)                                                                             \
        uint64_t digest(const BusData *d);
#define PROPERTY_DECLARE_PLAIN(name, signature, getter, flags) PROPERTY_DECLARE_GETTER(getter)
MANAGER_PROPERTIES(PROPERTY_DECLARE_TRACKED, PROPERTY_DECLARE_PLAIN)
#undef PROPERTY_DECLARE_PLAIN
#undef PROPERTY_DECLARE_TRACKED
#undef PROPERTY_DECLARE_GETTER

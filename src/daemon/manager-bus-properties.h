/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

#include "manager.h"

/* The properties of org.thpd1.Manager: the getters its vtable names (userdata: the bus
 * listener's BusData; they read its Manager, bus_manager()), and the helpers its methods and
 * signals share with them. */

/* "" for a value the kernel did not give. */
const char *bus_knob_value(Knob k, KnobValue v, char buf[static 24]);
PolicyRuntime *bus_policy_runtime(const Manager *m, const char *policy_name);
bool bus_policy_is_active(const Manager *m, const char *policy_name);
int bus_append_strings(sd_bus_message *reply, GPtrArray *strings);
/* The figures that tell a storm of this kind, as a{sd}. */
int bus_append_storm_figures(sd_bus_message *msg, StormKind kind, const StormFigures *f);
int property_get_version(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_knobs(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
/* A digest of the Knobs value, for telling whether it changed. */
uint64_t property_digest_knobs(const Manager *m);
int property_get_active_policies(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_pools(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_isolated_services(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_needs_restart(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_override(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_override_expires_at(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_storm_state(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_storms(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_storm_action(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_status(sd_bus *bus, const char *path, const char *interface, const char *property,
                       sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_drift_conflicts(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_recent_drift(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);
int property_get_policy_diagnostics(sd_bus *bus, const char *path, const char *interface,
                       const char *property, sd_bus_message *reply, void *userdata, sd_bus_error *error);

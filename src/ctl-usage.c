/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "ctl-bus.h"
#include "log.h"
#include "util.h"

/* Reading smaps_rollup of many processes, and the manager's answers, can take a while on a big
 * host; a hung manager must not hang status for long. */
#define USAGE_TIMEOUT_USEC (10 * UINT64_C(1000000))

static void unit_usage_clear(gpointer p) {
        CtlUnitUsage *u = p;

        g_free(u->unit);
        g_free(u->policy);
        g_free(u->source);
}

static int read_usage(sd_bus_message *reply, GArray *usage) {
        const char *unit, *policy, *source;
        uint64_t anon, shmem;
        int r;

        r = sd_bus_message_enter_container(reply, 'a', "(sstts)");
        while (r >= 0 && (r = sd_bus_message_read(reply, "(sstts)", &unit, &policy, &anon, &shmem, &source)) > 0) {
                CtlUnitUsage u = {
                        .unit = g_strdup(unit),
                        .policy = g_strdup(policy),
                        .anon_thp_bytes = anon,
                        .shmem_thp_bytes = shmem,
                        .source = g_strdup(source),
                };

                g_array_append_val(usage, u);
        }
        return r;
}

void ctl_get_unit_usage(sd_bus *bus, GArray **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL, *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GArray) usage = NULL;
        int r;

        *ret = NULL;
        r = sd_bus_message_new_method_call(bus, &call, THPD_BUS_NAME, THPD_BUS_PATH, THPD_BUS_INTERFACE, "GetUnitUsage");
        if (r >= 0)
                r = sd_bus_call(bus, call, USAGE_TIMEOUT_USEC, &error, &reply);
        if (r < 0) {
                /* A thpd from before the method: say nothing, as about any property it lacks. */
                if (!sd_bus_error_has_name(&error, SD_BUS_ERROR_UNKNOWN_METHOD))
                        log_warning("Cannot read how much THP the units hold: %s",
                                    error.message ?: strerror(-r));
                return;
        }
        usage = g_array_new(FALSE, TRUE, sizeof(CtlUnitUsage));
        g_array_set_clear_func(usage, unit_usage_clear);
        r = read_usage(reply, usage);
        if (r < 0) {
                log_warning("Cannot read thpd's answer about THP usage: %s", strerror(-r));
                return;
        }
        *ret = TAKE_PTR(usage);
}

const CtlUnitUsage *ctl_unit_usage_find(GArray *usage, const char *unit) {
        for (guint i = 0; usage && i < usage->len; i++) {
                const CtlUnitUsage *u = &g_array_index(usage, CtlUnitUsage, i);

                if (streq(u->unit, unit))
                        return u;
        }
        return NULL;
}

uint64_t ctl_unit_usage_total(const CtlUnitUsage *u) {
        if (u->anon_thp_bytes == UINT64_MAX)
                return u->shmem_thp_bytes;
        if (u->shmem_thp_bytes == UINT64_MAX)
                return u->anon_thp_bytes;
        return u->anon_thp_bytes + MIN(u->shmem_thp_bytes, UINT64_MAX - 1 - u->anon_thp_bytes);
}

static void json_bytes(Json *j, const char *key, uint64_t value) {
        if (value == UINT64_MAX)
                json_null(j, key);
        else
                json_uint(j, key, value);
}

void ctl_unit_usage_to_json(GArray *usage, Json *j) {
        if (!usage) {
                json_null(j, "unit_usage");
                return;
        }
        json_begin_array(j, "unit_usage");
        for (guint i = 0; i < usage->len; i++) {
                const CtlUnitUsage *u = &g_array_index(usage, CtlUnitUsage, i);

                json_begin_object(j, NULL);
                json_string(j, "unit", u->unit);
                json_string(j, "policy", u->policy);
                json_bytes(j, "anon_thp_bytes", u->anon_thp_bytes);
                json_bytes(j, "shmem_thp_bytes", u->shmem_thp_bytes);
                json_string(j, "source", u->source[0] ? u->source : NULL);
                json_end_object(j);
        }
        json_end_array(j);
}

char *ctl_format_bytes(uint64_t bytes) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        double value = (double) bytes;
        size_t i = 0;

        while (value >= 1024 && i + 1 < ELEMENTSOF(units)) {
                value /= 1024;
                i++;
        }
        if (i == 0)
                return g_strdup_printf("%" PRIu64 " B", bytes);
        return value < 10 ? g_strdup_printf("%.1f %s", value, units[i]) : g_strdup_printf("%.0f %s", value, units[i]);
}

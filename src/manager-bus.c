/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "log.h"
#include "manager-bus.h"
#include "util.h"

#include <config.h>

typedef struct BusData {
        sd_bus_slot *vtable_slot;
} BusData;

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Version", "s", NULL, 0, SD_BUS_VTABLE_PROPERTY_CONST),
        SD_BUS_VTABLE_END
};

static int on_name_acquired(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        if (sd_bus_message_is_method_error(m, NULL)) {
                log_error("Cannot own the bus name %s: %s", THPD_BUS_NAME, sd_bus_message_get_error(m)->message);
                return sd_event_exit(sd_bus_get_event(sd_bus_message_get_bus(m)), 1);
        }
        log_debug("Owning %s.", THPD_BUS_NAME);
        return 0;
}

int manager_bus_register(Manager *m) {
        BusData *d = g_new0(BusData, 1);
        int r;

        m->bus_data = d;
        r = sd_bus_add_object_vtable(m->bus, &d->vtable_slot, THPD_BUS_PATH, THPD_BUS_INTERFACE, manager_vtable, m);
        if (r < 0)
                return log_error_errno(r, "Cannot register %s: %s", THPD_BUS_PATH, strerror(-r));
        r = sd_bus_request_name_async(m->bus, NULL, THPD_BUS_NAME, 0, on_name_acquired, m);
        if (r < 0)
                return log_error_errno(r, "Cannot request %s: %s", THPD_BUS_NAME, strerror(-r));
        return 0;
}

void manager_bus_free(Manager *m) {
        BusData *d = m->bus_data;

        if (!d)
                return;
        sd_bus_slot_unref(d->vtable_slot);
        g_free(d);
        m->bus_data = NULL;
}

void manager_bus_after_apply(Manager *m, const KnobChange *changes, size_t n_changes) {
}

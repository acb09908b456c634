/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "systemd-call.h"
#include "thpd-bus.h"

int systemd_call_async(sd_bus *bus, const char *path, const char *interface, const char *member,
                       sd_bus_message_handler_t callback, void *userdata, sd_bus_destroy_t destroy,
                       const char *types, ...) {
        sd_bus_slot *slot = NULL;
        va_list ap;
        int r;

        va_start(ap, types);
        r = sd_bus_call_method_asyncv(bus, &slot, SYSTEMD_SERVICE, path, interface, member, callback, userdata,
                                      types, ap);
        va_end(ap);
        if (r < 0) {
                destroy(userdata);
                return r;
        }
        /* Floating: the bus keeps the slot until the reply comes, or until the bus goes. */
        sd_bus_slot_set_destroy_callback(slot, destroy);
        sd_bus_slot_set_floating(slot, 1);
        sd_bus_slot_unref(slot);
        return 0;
}

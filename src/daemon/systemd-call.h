/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <systemd/sd-bus.h>

/* Calls a method of the service manager without waiting for it. The call owns userdata: destroy
 * frees it once the reply is handled, or at exit while the call is still in flight, or at once
 * when the call cannot be made (then the negative errno is returned). thpd never waits on PID 1:
 * a synchronous call from the event loop would stall every other event behind it. */
int systemd_call_async(sd_bus *bus, const char *path, const char *interface, const char *member,
                       sd_bus_message_handler_t callback, void *userdata, sd_bus_destroy_t destroy,
                       const char *types, ...);

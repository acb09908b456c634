/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <sys/types.h>
#include <systemd/sd-bus.h>

/* Authorization of privileged method calls without blocking the event loop.
 *
 * The first time a handler asks about a message, the verdict is not known: polkit_verify_async()
 * asks the bus daemon for the caller's uid and, if that is not privileged, polkit's
 * CheckAuthorization, and returns 0; the handler then returns 1 without replying. When the
 * answer arrives the message is put back into the bus's read queue, its handler runs again,
 * and the same call now returns the verdict. */

#define POLKIT_MAX_PENDING 256U

typedef struct PolkitRegistry PolkitRegistry;

typedef struct PolkitPolicy {
        const char *action;   /* polkit action id, e.g. "org.thpd1.manage" */
        uid_t trusted_uid;    /* besides root; (uid_t) -1 for none */
        /* Where polkit lives: the system bus the calls arrive on. NULL when the calls come from
         * another bus (a session bus), where polkit cannot identify the caller by its bus name:
         * then only root and trusted_uid pass. */
        sd_bus *polkit_bus;
} PolkitPolicy;

PolkitRegistry *polkit_registry_new(void);
/* Forgets pending checks: their calls get no reply from us (the caller sees its timeout or
 * our disconnect). */
PolkitRegistry *polkit_registry_free(PolkitRegistry *reg);

/* Returns 1 when the caller of call may go ahead, 0 while the answer is pending, or a negative
 * errno with error set: org.freedesktop.DBus.Error.AccessDenied,
 * org.freedesktop.DBus.Error.InteractiveAuthorizationRequired or LimitsExceeded. On success
 * ret_uid (if not NULL) is the caller's uid. */
int polkit_verify_async(PolkitRegistry *reg, const PolkitPolicy *policy, sd_bus_message *call, uid_t *ret_uid,
                        sd_bus_error *error);

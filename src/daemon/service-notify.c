/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <systemd/sd-daemon.h>

#include <glib.h>

#include "service-notify.h"

struct ServiceNotifier {
        int fd; /* -1: nobody listens, or an address form only sd_notify() knows */
        bool via_sd_notify;
        struct sockaddr_un address;
        socklen_t address_len;
};

int service_notifier_new(ServiceNotifier **ret) {
        g_autofree ServiceNotifier *n = g_new0(ServiceNotifier, 1);
        const char *path = getenv("NOTIFY_SOCKET");
        size_t len;

        n->fd = -1;
        if (!path || !*path) {
                *ret = g_steal_pointer(&n);
                return 0;
        }
        len = strlen(path);
        /* A path or an abstract name ("@..."); anything else (vsock: on newer systemd) is left to
         * sd_notify(). */
        if ((path[0] != '/' && path[0] != '@') || len >= sizeof n->address.sun_path) {
                n->via_sd_notify = true;
                *ret = g_steal_pointer(&n);
                return 0;
        }
        n->address.sun_family = AF_UNIX;
        memcpy(n->address.sun_path, path, len);
        if (path[0] == '@')
                n->address.sun_path[0] = '\0';
        n->address_len = offsetof(struct sockaddr_un, sun_path) + len + (path[0] == '/');
        n->fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
        if (n->fd < 0)
                return -errno;
        *ret = g_steal_pointer(&n);
        return 0;
}

ServiceNotifier *service_notifier_free(ServiceNotifier *n) {
        if (!n)
                return NULL;
        if (n->fd >= 0)
                (void) close(n->fd);
        g_free(n);
        return NULL;
}

int service_notify(ServiceNotifier *n, const char *state) {
        int r;

        if (n->via_sd_notify) {
                r = sd_notify(false, state);
                return r < 0 ? r : 0;
        }
        if (n->fd < 0)
                return 0;
        if (sendto(n->fd, state, strlen(state), MSG_NOSIGNAL, (const struct sockaddr *) &n->address,
                   n->address_len) < 0)
                return -errno;
        return 0;
}

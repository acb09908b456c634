/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* One client of the D-Bus API benchmark (bench-api.py): connects to the bus at ADDRESS, prints
 * "ready", waits for a line on stdin so that all clients start together, then makes COUNT calls
 * to org.thpd1 one after the other and prints the round trip of each in nanoseconds, one per
 * line, after the last.
 *
 *   bench-api-client ADDRESS getall|ping COUNT
 *
 * With COUNT 0 it exits right after connecting and one Ping.
 *
 * getall: org.freedesktop.DBus.Properties.GetAll("org.thpd1.Manager"), what thpd-ctl status
 * asks for; ping: org.freedesktop.DBus.Peer.Ping, answered by sd-bus inside thpd without any
 * work of thpd's own, so it is the floor of a round trip to the daemon on the same bus. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <time.h>

#define _cleanup_(f) __attribute__((cleanup(f)))

static void freep(void *p) {
        free(*(void **) p);
}

static uint64_t now_ns(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000000u + (uint64_t) ts.tv_nsec;
}

static int call(sd_bus *bus, int getall) {
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        int r;

        if (getall)
                r = sd_bus_call_method(bus, "org.thpd1", "/org/thpd1", "org.freedesktop.DBus.Properties", "GetAll", &error,
                                       &reply, "s", "org.thpd1.Manager");
        else
                r = sd_bus_call_method(bus, "org.thpd1", "/org/thpd1", "org.freedesktop.DBus.Peer", "Ping", &error, &reply,
                                       NULL);
        if (r < 0)
                fprintf(stderr, "bench-api-client: call failed: %s\n", error.message ?: strerror(-r));
        return r;
}

int main(int argc, char *argv[]) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;
        _cleanup_(freep) uint64_t *samples = NULL;
        unsigned long count;
        char line[16];
        int getall, r;

        if (argc != 4 || (strcmp(argv[2], "getall") != 0 && strcmp(argv[2], "ping") != 0)) {
                fprintf(stderr, "Usage: %s ADDRESS getall|ping COUNT\n", argv[0]);
                return 2;
        }
        getall = strcmp(argv[2], "getall") == 0;
        count = strtoul(argv[3], NULL, 10);
        samples = calloc(count ? count : 1, sizeof(uint64_t));
        if (!samples)
                return 1;

        r = sd_bus_new(&bus);
        if (r >= 0)
                r = sd_bus_set_address(bus, argv[1]);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, 1);
        if (r >= 0)
                r = sd_bus_start(bus);
        /* The first call also waits for Hello, so it is made before the clock starts. */
        if (r >= 0)
                r = call(bus, 0);
        if (r < 0) {
                fprintf(stderr, "bench-api-client: cannot connect to %s: %s\n", argv[1], strerror(-r));
                return 1;
        }

        /* COUNT 0: a process that connects and pings once, the floor of a thpd-ctl run. */
        if (count == 0)
                return 0;

        printf("ready\n");
        fflush(stdout);
        if (!fgets(line, sizeof line, stdin))
                return 1;

        for (unsigned long i = 0; i < count; i++) {
                uint64_t start = now_ns();

                if (call(bus, getall) < 0)
                        return 1;
                samples[i] = now_ns() - start;
        }
        for (unsigned long i = 0; i < count; i++)
                printf("%" PRIu64 "\n", samples[i]);
        return fflush(stdout) == 0 ? 0 : 1;
}

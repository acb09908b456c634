/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/socket.h>

#include "test-util.h"
#include "unit-processes.h"
#include "util.h"

/* A bus object is all sd-bus needs to build a message: one end of a socket pair nobody answers
 * on, never connected to a bus daemon. */
static sd_bus *bus;
static int peer = -1;

static void setup(void) {
        int fds[2];

        ck_assert_int_eq(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0, fds), 0);
        peer = fds[1];
        ck_assert_int_ge(sd_bus_new(&bus), 0);
        ck_assert_int_ge(sd_bus_set_fd(bus, fds[0], fds[0]), 0);
        ck_assert_int_ge(sd_bus_start(bus), 0);
}

static void teardown(void) {
        bus = sd_bus_close_unref(bus);
        peer = safe_close(peer);
}

/* A message with the body appended by the caller, sealed and rewound as a received one is. */
static sd_bus_message *new_message(void) {
        sd_bus_message *m = NULL;

        ck_assert_int_ge(sd_bus_message_new_method_call(bus, &m, "org.example.Test", "/", "org.example.Test", "Test"), 0);
        return m;
}

static sd_bus_message *seal(sd_bus_message *m) {
        ck_assert_int_ge(sd_bus_message_seal(m, 1, 0), 0);
        ck_assert_int_ge(sd_bus_message_rewind(m, 1), 0);
        return m;
}

START_TEST(test_read) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();
        g_autoptr(GArray) processes = NULL;
        const UnitProcess *p;

        ck_assert_int_ge(sd_bus_message_append(m, "a(sus)", 2, "/system.slice/redis-server.service", 4242,
                                               "/usr/bin/redis-server 127.0.0.1:6379", "/system.slice/redis-server.service/sub",
                                               INT32_MAX, ""), 0);
        ck_assert_int_eq(unit_processes_read(seal(m), &processes), 0);
        ck_assert_uint_eq(processes->len, 2);
        p = &g_array_index(processes, UnitProcess, 0);
        ck_assert_int_eq(p->pid, 4242);
        ck_assert_str_eq(p->cgroup, "/system.slice/redis-server.service");
        ck_assert_str_eq(p->cmdline, "/usr/bin/redis-server 127.0.0.1:6379");
        p = &g_array_index(processes, UnitProcess, 1);
        ck_assert_int_eq(p->pid, INT32_MAX);
        ck_assert_str_eq(p->cgroup, "/system.slice/redis-server.service/sub");
        ck_assert_str_eq(p->cmdline, "");
}
END_TEST

START_TEST(test_read_none) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();
        g_autoptr(GArray) processes = NULL;

        ck_assert_int_ge(sd_bus_message_append(m, "a(sus)", 0), 0);
        ck_assert_int_eq(unit_processes_read(seal(m), &processes), 0);
        ck_assert_ptr_nonnull(processes);
        ck_assert_uint_eq(processes->len, 0);
}
END_TEST

/* What the manager answers is input: an answer of another shape or with a PID no process has is
 * refused, and ret is left alone. */
START_TEST(test_read_bad) {
        static const uint32_t bad_pids[] = { 0, (uint32_t) INT32_MAX + 1, UINT32_MAX };
        GArray *processes = NULL;

        for (size_t i = 0; i < ELEMENTSOF(bad_pids); i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();

                ck_assert_int_ge(sd_bus_message_append(m, "a(sus)", 2, "/a.service", 1, "a", "/a.service", bad_pids[i], "b"), 0);
                ck_assert_int_eq(unit_processes_read(seal(m), &processes), -EBADMSG);
                ck_assert_ptr_null(processes);
        }

        /* No body at all, as a method return of another method has. */
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();

                ck_assert_int_lt(unit_processes_read(seal(m), &processes), 0);
                ck_assert_ptr_null(processes);
        }

        /* The text of an error, or processes without their command line. */
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();

                ck_assert_int_ge(sd_bus_message_append(m, "s", "Unit redis-server.service not loaded."), 0);
                ck_assert_int_lt(unit_processes_read(seal(m), &processes), 0);
                ck_assert_ptr_null(processes);
        }
        {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = new_message();

                ck_assert_int_ge(sd_bus_message_append(m, "a(su)", 1, "/a.service", 1), 0);
                ck_assert_int_lt(unit_processes_read(seal(m), &processes), 0);
                ck_assert_ptr_null(processes);
        }
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("unit-processes", "read", setup, teardown,
                                         test_read,
                                         test_read_none,
                                         test_read_bad));
}

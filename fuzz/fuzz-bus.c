/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The D-Bus method handlers of org.thpd1.Manager (src/daemon/manager-bus.c), as a local user reaches
 * them: each input becomes one D-Bus message, in wire format, that a stand-in bus daemon writes
 * to the socket of a real, running thpd Manager.
 *
 * The whole daemon runs in this process: manager_start() on a scratch sysfs/procfs tree with two
 * policies, connected (--user) to a socket this program listens on. A thread plays the bus
 * daemon with a server-mode sd-bus on the other end: it answers Hello, RequestName, AddMatch,
 * GetConnectionUnixUser (the uid the input chooses, so both the root and the refused paths of
 * Reload/SetOverride/ClearOverride run) and GetNameOwner; a call to any other service (systemd,
 * polkit) gets ServiceUnknown, as on a bus without them. The main thread runs the Manager's
 * event loop until the message has been handled: after the input, the stand-in sends a Ping
 * and waits for its answer, and repeats that until thpd made no call of its own (a polkit
 * check, a match for an Await caller) during a round trip.
 *
 * Input layout (missing bytes read as 0):
 *   [0] method (index into methods[] below)   [1] message flags (low 3 bits)
 *   [2] the caller's uid (0, thpd's own uid, 65534, 1000)
 *   [3] bit 0: the caller leaves the bus afterwards (NameOwnerChanged; drops its Await calls);
 *       bits 1-7: which unique name it has
 *   [4] signature length N, then N bytes of signature, then the body (any bytes).
 * The header is always well-formed, so sd-bus frames the stream; signature and body are the
 * fuzzer's, as a malicious client's would be. */
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <glib.h>
#include <glib/gstdio.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-event.h>
#include <time.h>
#include <unistd.h>

#include "fuzz.h"
#include "daemon-listeners.h"
#include "manager.h"
#include "thpd-bus.h"
#include "util.h"

#define HANDLED_TIMEOUT_SEC 20
#define PING_ROUNDS_MAX 50

static const struct {
        const char *path, *interface, *member;
} methods[] = {
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "ListPolicies" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "Explain" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "Reload" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "SetOverride" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "ClearOverride" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "Await" },
        { THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "Get" },
        { THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll" },
        { THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "Set" },
        { THPD_BUS_PATH, "org.freedesktop.DBus.Introspectable", "Introspect" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "NoSuchMethod" },
        { THPD_BUS_PATH "/x", THPD_BUS_INTERFACE, "Explain" },
        { "/", "org.freedesktop.DBus.ObjectManager", "GetManagedObjects" },
        { THPD_BUS_PATH, NULL, "Await" },
        { THPD_BUS_PATH, THPD_BUS_INTERFACE, "GetUnitUsage" },
};

static const uint32_t caller_uids[] = { 0, (uint32_t) -1 /* thpd's own */, 65534, 1000 };

static struct {
        char *root;
        int listen_fd;
        int request_pipe[2], done_pipe[2];
        sd_event *event;
        Manager *manager;

        /* The input being handled; set by the main thread before it writes request_pipe. */
        const uint8_t *data;
        size_t size;
        _Atomic bool done;

        /* The stand-in bus daemon's thread only. */
        sd_bus *server;
        uint32_t next_serial;
        uint32_t ping_serial;
        unsigned calls, calls_at_ping, ping_rounds;
        uint32_t caller_uid;
        char sender[32];
        bool leave;
} F;

/* ---- a D-Bus message in wire format (little endian) ---- */

static void put(GByteArray *a, const void *p, size_t n) {
        g_byte_array_append(a, p, (guint) n);
}

static void put_u8(GByteArray *a, uint8_t v) {
        put(a, &v, 1);
}

static void put_u32(GByteArray *a, uint32_t v) {
        put(a, &v, 4); /* x86 and every fuzzing host here are little endian, as 'l' says */
}

static void pad(GByteArray *a, size_t n) {
        while (a->len % n)
                put_u8(a, 0);
}

static void field_string(GByteArray *a, uint8_t code, char type, const char *s) {
        pad(a, 8);
        put_u8(a, code);
        put_u8(a, 1);
        put_u8(a, (uint8_t) type);
        put_u8(a, 0);
        put_u32(a, (uint32_t) strlen(s));
        put(a, s, strlen(s) + 1);
}

static void field_signature(GByteArray *a, const uint8_t *sig, size_t n) {
        pad(a, 8);
        put_u8(a, 8);
        put_u8(a, 1);
        put_u8(a, 'g');
        put_u8(a, 0);
        put_u8(a, (uint8_t) n);
        put(a, sig, n);
        put_u8(a, 0);
}

static GByteArray *method_call(uint32_t serial, uint8_t flags, const char *path, const char *interface,
                               const char *member, const char *sender, const uint8_t *sig, size_t sig_len,
                               const uint8_t *body, size_t body_len) {
        GByteArray *a = g_byte_array_new();
        uint32_t fields_len;

        put_u8(a, 'l');
        put_u8(a, 1); /* METHOD_CALL */
        put_u8(a, flags);
        put_u8(a, 1); /* protocol version */
        put_u32(a, (uint32_t) body_len);
        put_u32(a, serial);
        put_u32(a, 0); /* header fields length, below */
        field_string(a, 1, 'o', path);
        if (interface)
                field_string(a, 2, 's', interface);
        field_string(a, 3, 's', member);
        field_string(a, 6, 's', "org.thpd1");
        field_string(a, 7, 's', sender);
        if (sig_len > 0)
                field_signature(a, sig, sig_len);
        fields_len = a->len - 16;
        memcpy(a->data + 12, &fields_len, 4);
        pad(a, 8);
        if (body_len > 0)
                put(a, body, body_len);
        return a;
}

static void write_all(int fd, const uint8_t *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0 && errno == EAGAIN) {
                        struct pollfd pfd = { .fd = fd, .events = POLLOUT };

                        (void) poll(&pfd, 1, 1000);
                        continue;
                }
                if (k < 0 && errno == EINTR)
                        continue;
                if (k <= 0) {
                        fprintf(stderr, "fuzz-bus: writing to thpd's socket: %s\n", strerror(errno));
                        abort();
                }
                p += k;
                n -= (size_t) k;
        }
}

/* Writes a message past sd-bus: flushes what sd-bus queued first, so the stream stays framed. */
static void send_raw(GByteArray *a) {
        if (sd_bus_flush(F.server) < 0)
                abort();
        write_all(sd_bus_get_fd(F.server), a->data, a->len);
        g_byte_array_unref(a);
}

/* ---- the stand-in bus daemon ---- */

static void send_ping(void) {
        F.ping_serial = F.next_serial++;
        F.calls_at_ping = F.calls;
        F.ping_rounds++;
        send_raw(method_call(F.ping_serial, 0, THPD_BUS_PATH, "org.freedesktop.DBus.Peer", "Ping", F.sender,
                             NULL, 0, NULL, 0));
}

static void finish_input(void) {
        atomic_store(&F.done, true);
        write_all(F.done_pipe[1], (const uint8_t *) "x", 1);
}

static void on_ping_answered(void) {
        if (F.calls != F.calls_at_ping) {
                /* thpd asked us something while handling the input: wait for it to settle. */
                if (F.ping_rounds >= PING_ROUNDS_MAX) {
                        fprintf(stderr, "fuzz-bus: thpd keeps calling the bus after %u round trips\n", F.ping_rounds);
                        abort();
                }
                send_ping();
                return;
        }
        if (F.leave) {
                F.leave = false;
                if (sd_bus_emit_signal(F.server, "/org/freedesktop/DBus", "org.freedesktop.DBus", "NameOwnerChanged",
                                       "sss", F.sender, F.sender, "") < 0)
                        abort();
                send_ping();
                return;
        }
        finish_input();
}

static int reply(sd_bus_message *call, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        if (!sd_bus_message_get_expect_reply(call))
                return 0;
        r = sd_bus_message_new_method_return(call, &m);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_send(NULL, m, NULL);
}

static int reply_error(sd_bus_message *call, const char *name, const char *text) {
        if (!sd_bus_message_get_expect_reply(call))
                return 0;
        return sd_bus_reply_method_errorf(call, name, "%s", text);
}

static int daemon_method(sd_bus_message *call) {
        const char *destination = sd_bus_message_get_destination(call);
        const char *member = sd_bus_message_get_member(call);
        const char *name;

        if (!destination || strcmp(destination, "org.freedesktop.DBus") != 0)
                return reply_error(call, "org.freedesktop.DBus.Error.ServiceUnknown",
                                   "The name is not activatable (the fuzzing bus has only thpd)");
        if (streq(member, "Hello"))
                return reply(call, "s", ":1.1");
        if (streq(member, "RequestName") || streq(member, "ReleaseName"))
                return reply(call, "u", (uint32_t) 1);
        if (streq(member, "AddMatch") || streq(member, "RemoveMatch"))
                return reply(call, NULL);
        if (streq(member, "GetConnectionUnixUser"))
                return reply(call, "u", F.caller_uid);
        if (streq(member, "GetConnectionUnixProcessID"))
                return reply(call, "u", (uint32_t) getpid());
        if (streq(member, "GetNameOwner") && sd_bus_message_read(call, "s", &name) >= 0 && name[0] == ':')
                return reply(call, "s", name);
        if (streq(member, "GetNameOwner"))
                return reply_error(call, "org.freedesktop.DBus.Error.NameHasNoOwner", "No such name");
        return reply_error(call, "org.freedesktop.DBus.Error.UnknownMethod", "Not in the fuzzing bus");
}

static int on_server_message(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        uint64_t cookie;
        uint8_t type;

        if (sd_bus_message_get_type(m, &type) < 0)
                return 1;
        if (type == SD_BUS_MESSAGE_METHOD_CALL) {
                F.calls++;
                if (daemon_method(m) < 0)
                        abort();
        } else if ((type == SD_BUS_MESSAGE_METHOD_RETURN || type == SD_BUS_MESSAGE_METHOD_ERROR) &&
                   F.ping_serial != 0 && sd_bus_message_get_reply_cookie(m, &cookie) >= 0 && cookie == F.ping_serial) {
                F.ping_serial = 0;
                on_ping_answered();
        }
        return 1;
}

static uint8_t byte_at(size_t i) {
        return i < F.size ? F.data[i] : 0;
}

static int on_request(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        size_t sig_len, offset;
        uint8_t c, choice;

        if (read(fd, &c, 1) != 1)
                return 0;

        choice = byte_at(0) % G_N_ELEMENTS(methods);
        F.caller_uid = caller_uids[byte_at(2) % G_N_ELEMENTS(caller_uids)];
        if (F.caller_uid == (uint32_t) -1)
                F.caller_uid = (uint32_t) geteuid();
        F.leave = byte_at(3) & 1;
        snprintf(F.sender, sizeof F.sender, ":1.%u", 100U + (byte_at(3) >> 1));
        sig_len = byte_at(4);
        offset = 5;
        if (offset + sig_len > F.size)
                sig_len = F.size > offset ? F.size - offset : 0;

        F.ping_rounds = 0;
        send_raw(method_call(F.next_serial++, byte_at(1) & 7, methods[choice].path, methods[choice].interface,
                             methods[choice].member, F.sender, F.data + offset, sig_len,
                             F.size > offset + sig_len ? F.data + offset + sig_len : NULL,
                             F.size > offset + sig_len ? F.size - offset - sig_len : 0));
        send_ping();
        return 0;
}

static void *bus_daemon(void *arg) {
        _cleanup_(sd_event_unrefp) sd_event *e = NULL;
        sd_id128_t id;
        int fd;

        fd = accept4(F.listen_fd, NULL, NULL, SOCK_CLOEXEC);
        if (fd < 0 || sd_event_new(&e) < 0 || sd_bus_new(&F.server) < 0 || sd_bus_set_fd(F.server, fd, fd) < 0 ||
            sd_id128_randomize(&id) < 0 || sd_bus_set_server(F.server, 1, id) < 0 ||
            sd_bus_set_sender(F.server, "org.freedesktop.DBus") < 0 ||
            sd_bus_add_filter(F.server, NULL, on_server_message, NULL) < 0 || sd_bus_start(F.server) < 0 ||
            sd_bus_attach_event(F.server, e, 0) < 0 ||
            sd_event_add_io(e, NULL, F.request_pipe[0], EPOLLIN, on_request, NULL) < 0) {
                fprintf(stderr, "fuzz-bus: cannot set up the stand-in bus daemon\n");
                abort();
        }
        F.next_serial = 1000;
        (void) sd_event_loop(e);
        return NULL;
}

/* ---- the scratch tree and the Manager ---- */

static void write_file(const char *relative, const char *content) {
        g_autofree char *path = g_build_filename(F.root, relative, NULL);
        g_autofree char *dir = g_path_get_dirname(path);

        if (g_mkdir_with_parents(dir, 0755) < 0 || !g_file_set_contents(path, content, -1, NULL) || chmod(path, 0644) < 0)
                abort();
}

static void make_tree(void) {
        static const char *const knobs[][2] = {
                { "enabled", "always [madvise] never\n" },
                { "defrag", "always defer defer+madvise [madvise] never\n" },
                { "shmem_enabled", "always within_size advise [never] deny force\n" },
                { "khugepaged/defrag", "1\n" },
                { "khugepaged/pages_to_scan", "4096\n" },
                { "khugepaged/scan_sleep_millisecs", "10000\n" },
                { "khugepaged/alloc_sleep_millisecs", "60000\n" },
                { "khugepaged/max_ptes_none", "511\n" },
                { "khugepaged/max_ptes_swap", "64\n" },
                { "khugepaged/max_ptes_shared", "256\n" },
                { "hugepages-64kB/enabled", "always inherit madvise [never]\n" },
                { "hugepages-2048kB/enabled", "always [inherit] madvise never\n" },
                { "shrink_underused", "1\n" },
                { "use_zero_page", "1\n" },
                { "hugepages-64kB/shmem_enabled", "always inherit within_size advise [never]\n" },
                { "hugepages-2048kB/shmem_enabled", "always [inherit] within_size advise never\n" },
        };
        static const char *const pool_files[] = {
                "nr_hugepages", "free_hugepages", "surplus_hugepages", "resv_hugepages", "nr_overcommit_hugepages",
        };

        for (size_t i = 0; i < G_N_ELEMENTS(knobs); i++) {
                g_autofree char *rel = g_build_filename("sys/kernel/mm/transparent_hugepage", knobs[i][0], NULL);
                write_file(rel, knobs[i][1]);
        }
        for (size_t i = 0; i < G_N_ELEMENTS(pool_files); i++) {
                g_autofree char *rel = g_build_filename("sys/kernel/mm/hugepages/hugepages-2048kB", pool_files[i], NULL);
                write_file(rel, "0\n");
        }
        write_file("proc/sys/vm/compact_memory", "");
        write_file("proc/vmstat", "compact_stall 0\ncompact_fail 0\nthp_fault_alloc 0\n");
        write_file("policy.d/fuzz.conf",
                   "[Policy]\nDescription=fuzz\nUnits=fuzz-*.service\n[TransparentHugePages]\nEnabled=never\n"
                   "[HugeTLB]\nPages=2\n");
        write_file("policy.d/tmpl.conf", "[Policy]\nUnits=tmpl@.service\n[Khugepaged]\nDefrag=0\nPagesToScan=512\n");
        write_file("thpd.conf", "[Daemon]\nPoolGracePeriod=0\n");
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        (void) remove(path);
        return 0;
}

/* libFuzzer ends with exit(): the scratch tree goes then. The Manager is left running, as a
 * crash would leave it; it writes nothing once the event loop stops. */
static void remove_tree(void) {
        if (F.root)
                (void) nftw(F.root, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

static int on_done(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        char buf[64];

        (void) read(fd, buf, sizeof buf);
        return 0;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        static char *policy_dirs[2];
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        g_autofree char *socket_path = NULL, *address = NULL, *sysfs = NULL, *procfs = NULL, *cgroupfs = NULL, *runtime = NULL,
                        *config = NULL;
        ManagerOptions options;
        pthread_t thread;
        sigset_t mask;

        fuzz_quiet_log();
        F.root = g_dir_make_tmp("thpd-fuzz-bus-XXXXXX", NULL);
        if (!F.root)
                abort();
        make_tree();
        atexit(remove_tree);

        socket_path = g_build_filename(F.root, "bus", NULL);
        if (strlen(socket_path) >= sizeof sa.sun_path)
                abort();
        strcpy(sa.sun_path, socket_path);
        F.listen_fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (F.listen_fd < 0 || bind(F.listen_fd, (struct sockaddr *) &sa, sizeof sa) < 0 || listen(F.listen_fd, 1) < 0 ||
            pipe2(F.request_pipe, O_CLOEXEC) < 0 || pipe2(F.done_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
                abort();
        address = g_strdup_printf("unix:path=%s", socket_path);
        setenv("DBUS_SESSION_BUS_ADDRESS", address, 1);
        unsetenv("NOTIFY_SOCKET");

        /* As thpd.c does: the Manager takes these signals through its event loop. The stand-in
         * daemon's thread inherits the mask. */
        sigemptyset(&mask);
        sigaddset(&mask, SIGTERM);
        sigaddset(&mask, SIGINT);
        sigaddset(&mask, SIGHUP);
        pthread_sigmask(SIG_BLOCK, &mask, NULL);

        if (pthread_create(&thread, NULL, bus_daemon, NULL) != 0)
                abort();

        sysfs = g_build_filename(F.root, "sys", NULL);
        procfs = g_build_filename(F.root, "proc", NULL);
        cgroupfs = g_build_filename(F.root, "cgroup", NULL);
        runtime = g_build_filename(F.root, "run", NULL);
        config = g_build_filename(F.root, "thpd.conf", NULL);
        policy_dirs[0] = g_build_filename(F.root, "policy.d", NULL);
        options = (ManagerOptions) {
                .sysfs_root = sysfs,
                .procfs_root = procfs,
                .cgroupfs_root = cgroupfs,
                .runtime_dir = runtime,
                .policy_dirs = policy_dirs,
                .config_path = config,
                .user = true,
        };
        if (sd_event_new(&F.event) < 0 || manager_new(F.event, &options, &F.manager) < 0) {
                fprintf(stderr, "fuzz-bus: thpd's Manager could not be created\n");
                abort();
        }
        daemon_listeners_attach(F.manager);
        if (manager_start(F.manager) < 0 ||
            sd_event_add_io(F.event, NULL, F.done_pipe[0], EPOLLIN, on_done, NULL) < 0) {
                fprintf(stderr, "fuzz-bus: thpd's Manager did not start (THPD_FUZZ_LOG=1 shows its log)\n");
                abort();
        }
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct timespec start, now;

        F.data = data;
        F.size = size;
        atomic_store(&F.done, false);
        write_all(F.request_pipe[1], (const uint8_t *) "x", 1);

        clock_gettime(CLOCK_MONOTONIC, &start);
        while (!atomic_load(&F.done)) {
                int state;

                if (sd_event_run(F.event, 100 * 1000) < 0)
                        abort();
                state = sd_event_get_state(F.event);
                if (state == SD_EVENT_FINISHED || state == SD_EVENT_EXITING) {
                        fprintf(stderr, "fuzz-bus: thpd's event loop exited while handling the input\n");
                        abort();
                }
                clock_gettime(CLOCK_MONOTONIC, &now);
                if (now.tv_sec - start.tv_sec > HANDLED_TIMEOUT_SEC) {
                        fprintf(stderr, "fuzz-bus: thpd did not answer a Ping within %d s of the input\n",
                                HANDLED_TIMEOUT_SEC);
                        abort();
                }
        }
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <inttypes.h>
#include <sys/stat.h>

#include "procfs.h"
#include "test-util.h"
#include "util.h"

/* Real files captured on this project's test machine (Linux 6.18): tests/data/procfs/. */
static char *read_fixture(const char *name) {
        const char *root = g_getenv("THPD_SOURCE_ROOT");
        g_autofree char *dir = NULL;

        ck_assert_ptr_nonnull(root);
        dir = g_build_filename(root, "tests", "data", "procfs", NULL);
        return test_read_file(dir, name);
}

/* The value of one "name value" line, found without the parser under test. */
static uint64_t fixture_counter(const char *content, const char *name, unsigned *ret_lines) {
        g_auto(GStrv) lines = g_strsplit(content, "\n", -1);
        uint64_t sum = 0;
        unsigned n = 0;

        for (char **l = lines; *l; l++) {
                char key[64];
                uint64_t v;

                if (sscanf(*l, "%63s %" SCNu64, key, &v) != 2)
                        continue;
                if (streq(name, "allocstall") ? g_str_has_prefix(key, "allocstall") : streq(key, name)) {
                        sum += v;
                        n++;
                }
        }
        if (ret_lines)
                *ret_lines = n;
        return sum;
}

START_TEST(test_vmstat_fixture) {
        g_autofree char *content = read_fixture("vmstat-6.18");
        unsigned n_allocstall;
        VmStat v;

        ck_assert_int_eq(procfs_parse_vmstat(content, &v), 0);
        ck_assert_uint_eq(v.compact_stall, fixture_counter(content, "compact_stall", NULL));
        ck_assert_uint_eq(v.compact_migrate_scanned, fixture_counter(content, "compact_migrate_scanned", NULL));
        ck_assert_uint_gt(v.compact_migrate_scanned, 0);
        ck_assert_uint_eq(v.compact_free_scanned, fixture_counter(content, "compact_free_scanned", NULL));
        ck_assert_uint_eq(v.thp_fault_fallback, fixture_counter(content, "thp_fault_fallback", NULL));
        /* thp_fault_fallback_charge is a different counter: a prefix must not match. */
        ck_assert_ptr_nonnull(strstr(content, "\nthp_fault_fallback_charge "));
        ck_assert_uint_eq(v.allocstall, fixture_counter(content, "allocstall", &n_allocstall));
        ck_assert_uint_eq(n_allocstall, 5); /* dma, dma32, normal, movable, device */
}
END_TEST

START_TEST(test_vmstat_fields) {
        /* Distinct values, so a field read into the wrong slot shows. */
        const char *content =
                "nr_free_pages 1049017\n"
                "allocstall_dma 1\n"
                "allocstall_normal 20\n"
                "allocstall_movable 300\n"
                "compact_migrate_scanned 4000\n"
                "compact_free_scanned 50000\n"
                "compact_isolated 7\n"
                "compact_stall 600000\n"
                "compact_fail 7000000\n"
                "compact_success 80000000\n"
                "compact_daemon_wake 900000000\n"
                "thp_fault_alloc 11\n"
                "thp_fault_fallback 12\n"
                "thp_fault_fallback_charge 99\n"
                "thp_collapse_alloc 13\n"
                "thp_collapse_alloc_failed 14\n"
                "a_counter_from_the_future 18446744073709551615\n";
        VmStat v;

        ck_assert_int_eq(procfs_parse_vmstat(content, &v), 0);
        ck_assert_uint_eq(v.allocstall, 321);
        ck_assert_uint_eq(v.compact_migrate_scanned, 4000);
        ck_assert_uint_eq(v.compact_free_scanned, 50000);
        ck_assert_uint_eq(v.compact_stall, 600000);
        ck_assert_uint_eq(v.compact_fail, 7000000);
        ck_assert_uint_eq(v.compact_success, 80000000);
        ck_assert_uint_eq(v.compact_daemon_wake, 900000000);
        ck_assert_uint_eq(v.thp_fault_alloc, 11);
        ck_assert_uint_eq(v.thp_fault_fallback, 12);
        ck_assert_uint_eq(v.thp_collapse_alloc, 13);
        ck_assert_uint_eq(v.thp_collapse_alloc_failed, 14);

        /* Kernels before 4.10 had one "allocstall"; a kernel without compaction has no compact_*. */
        ck_assert_int_eq(procfs_parse_vmstat("nr_free_pages 5\nallocstall 17\n", &v), 0);
        ck_assert_uint_eq(v.allocstall, 17);
        ck_assert_uint_eq(v.compact_stall, 0);

        v.compact_stall = 4242;
        ck_assert_int_eq(procfs_parse_vmstat("", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat("compact_stall\n", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat("compact_stall x\n", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat("compact_stall -1\n", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat("compact_stall 99999999999999999999\n", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat(" 5\n", &v), -EBADMSG);
        ck_assert_int_eq(procfs_parse_vmstat("some avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &v), -EBADMSG);
        ck_assert_uint_eq(v.compact_stall, 4242);
}
END_TEST

START_TEST(test_pressure) {
        g_autofree char *fixture = read_fixture("pressure-cpu-6.18");
        Pressure p;

        ck_assert_int_eq(procfs_parse_pressure(fixture, &p), 0);
        ck_assert(p.some.present);
        ck_assert(p.full.present);
        {
                double avg10, avg60, avg300;
                uint64_t total;

                ck_assert_int_eq(sscanf(fixture, "some avg10=%lf avg60=%lf avg300=%lf total=%" SCNu64,
                                        &avg10, &avg60, &avg300, &total), 4);
                ck_assert_double_eq_tol(p.some.avg10, avg10, 0.001);
                ck_assert_double_eq_tol(p.some.avg60, avg60, 0.001);
                ck_assert_double_eq_tol(p.some.avg300, avg300, 0.001);
                ck_assert_uint_eq(p.some.total_usec, total);
                ck_assert_uint_gt(total, 0);
        }

        ck_assert_int_eq(procfs_parse_pressure("some avg10=1.26 avg60=0.58 avg300=0.50 total=3804175\n"
                                               "full avg10=99.99 avg60=0.01 avg300=0.00 total=12\n", &p), 0);
        ck_assert_double_eq_tol(p.some.avg10, 1.26, 0.0001);
        ck_assert_double_eq_tol(p.some.avg300, 0.50, 0.0001);
        ck_assert_uint_eq(p.some.total_usec, 3804175);
        ck_assert_double_eq_tol(p.full.avg10, 99.99, 0.0001);
        ck_assert_uint_eq(p.full.total_usec, 12);

        /* cpu before 5.13 had no "full" line. */
        ck_assert_int_eq(procfs_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=7\n", &p), 0);
        ck_assert(!p.full.present);
        ck_assert_uint_eq(p.some.total_usec, 7);

        p.some.total_usec = 4242;
        ck_assert_int_eq(procfs_parse_pressure("", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("some avg10=x avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("some avg10=-1 avg60=0.00 avg300=0.00 total=0\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=-5\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("some avg10=0.00 avg60=0.00 avg300=0.00 total=1\n"
                                               "some avg10=0.00 avg60=0.00 avg300=0.00 total=2\n", &p), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pressure("nr_free_pages 5\n", &p), -EBADMSG);
        ck_assert_uint_eq(p.some.total_usec, 4242);
}
END_TEST

START_TEST(test_pid_stat) {
        g_autofree char *kcompactd = read_fixture("stat-kcompactd-6.18");
        g_autofree char *khugepaged = read_fixture("stat-khugepaged-6.18");
        g_autofree char *user = read_fixture("stat-cat-6.18");
        ProcStat s;

        ck_assert_int_eq(procfs_parse_pid_stat(kcompactd, &s), 0);
        ck_assert_str_eq(s.comm, "kcompactd0");
        ck_assert_int_eq(s.ppid, 2);
        ck_assert(s.flags & PROC_FLAG_KTHREAD);
        ck_assert(procfs_is_kcompactd_comm(s.comm));
        ck_assert_int_eq(s.pid, (pid_t) strtol(kcompactd, NULL, 10));

        ck_assert_int_eq(procfs_parse_pid_stat(khugepaged, &s), 0);
        ck_assert_str_eq(s.comm, "khugepaged");
        ck_assert(s.flags & PROC_FLAG_KTHREAD);
        ck_assert(procfs_is_khugepaged_comm(s.comm));

        ck_assert_int_eq(procfs_parse_pid_stat(user, &s), 0);
        ck_assert_str_eq(s.comm, "cat");
        ck_assert_int_eq(s.state, 'R');
        ck_assert(!(s.flags & PROC_FLAG_KTHREAD));

        /* comm can hold spaces and parentheses; utime/stime are fields 14 and 15. */
        ck_assert_int_eq(procfs_parse_pid_stat("4242 (a) (b c) S 1 4242 4242 0 -1 4194560 1 2 3 4 1234 5678 0 0 "
                                               "20 0 1 0 99 0 0\n", &s), 0);
        ck_assert_int_eq(s.pid, 4242);
        ck_assert_str_eq(s.comm, "a) (b c");
        ck_assert_int_eq(s.state, 'S');
        ck_assert_int_eq(s.ppid, 1);
        ck_assert_uint_eq(s.flags, 4194560);
        ck_assert_uint_eq(s.utime_ticks, 1234);
        ck_assert_uint_eq(s.stime_ticks, 5678);

        /* Exactly up to stime. */
        ck_assert_int_eq(procfs_parse_pid_stat("7 (x) S 2 0 0 0 -1 2097216 0 0 0 0 3 4\n", &s), 0);
        ck_assert_uint_eq(s.utime_ticks, 3);
        ck_assert_uint_eq(s.stime_ticks, 4);

        s.pid = 99;
        ck_assert_int_eq(procfs_parse_pid_stat("", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("7 x S 2 0 0 0 -1 0 0 0 0 0 3 4\n", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("(x) S 2 0 0 0 -1 0 0 0 0 0 3 4\n", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("7 (x) S 2 0 0 0 -1 0 0 0 0 0 3\n", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("7 (x) S 2 0 0 0 -1 0 0 0 0 0 3 y 0\n", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("0 (x) S 2 0 0 0 -1 0 0 0 0 0 3 4\n", &s), -EBADMSG);
        ck_assert_int_eq(procfs_parse_pid_stat("7 (x)S 2 0 0 0 -1 0 0 0 0 0 3 4\n", &s), -EBADMSG);
        ck_assert_int_eq(s.pid, 99);

        ck_assert(procfs_is_kcompactd_comm("kcompactd12"));
        ck_assert(!procfs_is_kcompactd_comm("kcompactd"));
        ck_assert(!procfs_is_kcompactd_comm("kcompactd0x"));
        ck_assert(!procfs_is_khugepaged_comm("khugepaged2"));
        ck_assert(!procfs_is_khugepaged_comm(NULL));
}
END_TEST

static void write_stat(const char *root, int pid, const char *comm, unsigned flags, unsigned utime, unsigned stime) {
        g_autofree char *rel = g_strdup_printf("%d/stat", pid);
        g_autofree char *line = g_strdup_printf("%d (%s) S 2 0 0 0 -1 %u 0 0 0 0 %u %u 0 0 20 0 1 0 27 0 0 "
                                                "18446744073709551615 0 0 0 0 0 0 0 2147483647 0 1 0 0 17 1 0 0 0\n",
                                                pid, comm, flags, utime, stime);

        test_write_file(root, rel, line);
}

START_TEST(test_readers) {
        g_autofree char *root = test_mkdtemp();
        g_autofree char *vmstat = read_fixture("vmstat-6.18");
        VmStat v;
        Pressure p;
        ProcStat s;

        ck_assert_int_eq(procfs_read_vmstat(root, &v), -ENOENT);
        ck_assert_int_eq(procfs_read_pressure(root, "memory", &p), -ENOENT);
        ck_assert_int_eq(procfs_read_pid_stat(root, 36, &s), -ENOENT);

        test_write_file(root, "vmstat", vmstat);
        ck_assert_int_eq(procfs_read_vmstat(root, &v), 0);
        ck_assert_uint_eq(v.compact_migrate_scanned, fixture_counter(vmstat, "compact_migrate_scanned", NULL));

        test_write_file(root, "pressure/memory", "some avg10=3.00 avg60=2.00 avg300=1.00 total=555\n"
                                                 "full avg10=1.00 avg60=0.50 avg300=0.25 total=111\n");
        ck_assert_int_eq(procfs_read_pressure(root, "memory", &p), 0);
        ck_assert_uint_eq(p.some.total_usec, 555);
        ck_assert_uint_eq(p.full.total_usec, 111);
        ck_assert_int_eq(procfs_read_pressure(root, "../vmstat", &p), -EINVAL);

        write_stat(root, 36, "kcompactd0", PROC_FLAG_KTHREAD | 0x40, 7, 9);
        ck_assert_int_eq(procfs_read_pid_stat(root, 36, &s), 0);
        ck_assert_uint_eq(s.utime_ticks, 7);
        ck_assert_uint_eq(s.stime_ticks, 9);
        /* A stat file that names another pid is not that task. */
        write_stat(root, 37, "kcompactd1", PROC_FLAG_KTHREAD, 1, 1);
        {
                g_autofree char *other = test_read_file(root, "37/stat");

                test_write_file(root, "38/stat", other);
                ck_assert_int_eq(procfs_read_pid_stat(root, 38, &s), -EBADMSG);
        }
        /* /proc/<pid>/ by number, never "0/" or "-1/". */
        {
                _cleanup_free_ char *content = NULL;

                ck_assert_int_eq(procfs_read_pid_file(root, 37, "stat", &content), 0);
                ck_assert_ptr_nonnull(strstr(content, "(kcompactd1)"));
                test_write_file(root, "0/stat", content);
                ck_assert_int_eq(procfs_read_pid_stat(root, 0, &s), -EINVAL);
                ck_assert_int_eq(procfs_read_pid_file(root, -1, "stat", &content), -EINVAL);
        }

        /* A file far larger than any procfs file we read is refused, not slurped. */
        {
                g_autofree char *big = g_strnfill(200 * 1024, 'x');

                test_write_file(root, "vmstat", big);
                ck_assert_int_eq(procfs_read_vmstat(root, &v), -EFBIG);
        }

        /* A FIFO in a broken --procfs tree reads as empty at once instead of hanging in open(). */
        {
                g_autofree char *fifo = g_build_filename(root, "vmstat", NULL);

                ck_assert_int_eq(unlink(fifo), 0);
                ck_assert_int_eq(mkfifo(fifo, 0600), 0);
                ck_assert_int_eq(procfs_read_vmstat(root, &v), -EBADMSG);
        }

        test_rm_rf(root);
}
END_TEST

START_TEST(test_find_kthreads) {
        g_autofree char *root = test_mkdtemp();
        g_autofree char *gone = g_build_filename(root, "6000", NULL);
        g_autofree char *khugepaged = g_build_filename(root, "38", NULL);
        ProcfsKthreads k = {};

        write_stat(root, 1, "systemd", 0x400100, 0, 0);
        write_stat(root, 38, "khugepaged", PROC_FLAG_KTHREAD | 0x40, 5, 5);
        write_stat(root, 120, "kcompactd1", PROC_FLAG_KTHREAD | 0x40, 1, 1);
        write_stat(root, 36, "kcompactd0", PROC_FLAG_KTHREAD | 0x40, 1, 1);
        /* Any process can call itself khugepaged; only kernel threads count. */
        write_stat(root, 5000, "khugepaged", 0x400000, 900, 900);
        write_stat(root, 5001, "kcompactd2", 0x400000, 900, 900);
        write_stat(root, 37, "kcompactdX", PROC_FLAG_KTHREAD, 1, 1);
        /* A process that exited between readdir() and the read, and non-pid entries. */
        ck_assert_int_eq(g_mkdir_with_parents(gone, 0755), 0);
        test_write_file(root, "self/stat", "1 (systemd) S 0 1 1 0 -1 4194560 0 0 0 0 0 0\n");
        test_write_file(root, "vmstat", "compact_stall 0\n");

        ck_assert_int_eq(procfs_find_kthreads(root, &k), 0);
        ck_assert_int_eq(k.khugepaged, 38);
        ck_assert_uint_eq(k.n_kcompactd, 2);
        ck_assert_int_eq(k.kcompactd[0], 36);
        ck_assert_int_eq(k.kcompactd[1], 120);
        procfs_kthreads_done(&k);
        ck_assert_ptr_null(k.kcompactd);
        procfs_kthreads_done(NULL);

        /* THP off: khugepaged is gone, which is not an error. */
        test_rm_rf(khugepaged);
        ck_assert_int_eq(procfs_find_kthreads(root, &k), 0);
        ck_assert_int_eq(k.khugepaged, 0);
        ck_assert_uint_eq(k.n_kcompactd, 2);
        procfs_kthreads_done(&k);

        test_rm_rf(root);
        ck_assert_int_eq(procfs_find_kthreads(root, &k), -ENOENT);
}
END_TEST

START_TEST(test_real_proc) {
        ProcfsKthreads k = {};
        VmStat v;
        ProcStat s;

        ck_assert_int_eq(procfs_read_vmstat("/proc", &v), 0);

        /* Whatever this kernel runs, each thread found is the kernel thread it claims to be. */
        ck_assert_int_eq(procfs_find_kthreads("/proc", &k), 0);
        if (k.khugepaged > 0 && procfs_read_pid_stat("/proc", k.khugepaged, &s) == 0) {
                ck_assert_str_eq(s.comm, "khugepaged");
                ck_assert(s.flags & PROC_FLAG_KTHREAD);
        }
        for (size_t i = 0; i < k.n_kcompactd; i++)
                if (procfs_read_pid_stat("/proc", k.kcompactd[i], &s) == 0)
                        ck_assert(procfs_is_kcompactd_comm(s.comm));
        procfs_kthreads_done(&k);

        if (access("/proc/pressure/memory", R_OK) == 0) {
                Pressure p;

                ck_assert_int_eq(procfs_read_pressure("/proc", "memory", &p), 0);
                ck_assert(p.some.present);
                ck_assert(p.full.present);
        }
}
END_TEST

START_TEST(test_thp_status) {
        ProcThpStatus st = {};

        ck_assert_int_eq(procfs_parse_thp_status("Name:\tredis-server\nUmask:\t0022\nTHP_enabled:\t1\nuntag_mask:\t0\n",
                                                 &st), 0);
        ck_assert(st.thp_enabled);
        ck_assert_str_eq(st.name, "redis-server");
        ck_assert_int_eq(procfs_parse_thp_status("Name:\tthpd-exec\nTHP_enabled:\t0", &st), 0);
        ck_assert(!st.thp_enabled);
        ck_assert_str_eq(st.name, "thpd-exec");
        /* Before Linux 5.0 there is no such line. */
        ck_assert_int_eq(procfs_parse_thp_status("Name:\tx\nVmRSS:\t1 kB\n", &st), -ENODATA);
        ck_assert_int_eq(procfs_parse_thp_status("Name:\tx\nTHP_enabled:\t2\n", &st), -EBADMSG);
        ck_assert_int_eq(procfs_parse_thp_status("Name:\tx\nTHP_enabled:\n", &st), -EBADMSG);
        ck_assert_int_eq(procfs_parse_thp_status("THP_enabled:\t1\n", &st), -EBADMSG);
        ck_assert_int_eq(procfs_parse_thp_status("Name:\t0123456789abcdef\nTHP_enabled:\t1\n", &st), -EBADMSG);
        ck_assert_str_eq(st.name, "thpd-exec");
        /* This process, as the kernel shows it. */
        ck_assert_int_ne(procfs_read_thp_status("/proc", getpid(), &st), -EBADMSG);
        ck_assert_int_eq(procfs_read_thp_status("/proc", 0, &st), -EINVAL);
}
END_TEST

/* The unit a writer runs in: the deepest service or scope of its v2 cgroup. */
START_TEST(test_cgroup_unit) {
        g_autofree char *session = NULL, *nested = NULL, *service = NULL;
        char *none = NULL;

        ck_assert_int_eq(procfs_parse_cgroup_unit("0::/user.slice/user-0.slice/session-4.scope\n", &session), 0);
        ck_assert_str_eq(session, "session-4.scope");
        ck_assert_int_eq(procfs_parse_cgroup_unit("0::/user.slice/user-0.slice/user@0.service/app.slice/"
                                                  "thpd-test-writer.service\n", &nested), 0);
        ck_assert_str_eq(nested, "thpd-test-writer.service");
        ck_assert_int_eq(procfs_parse_cgroup_unit("12:pids:/x\n0::/system.slice/tuned.service/payload\n", &service), 0);
        ck_assert_str_eq(service, "tuned.service");
        ck_assert_int_eq(procfs_parse_cgroup_unit("0::/\n", &none), -ENOENT);
        ck_assert_int_eq(procfs_parse_cgroup_unit("1:name=systemd:/x\n", &none), -EBADMSG);
        ck_assert_ptr_null(none);
}
END_TEST

/* The mount holding a path is the deepest above it, and the last of those; "ro" is a whole
 * option. The case that matters: a service whose /sys is read-only but whose knob directory is a
 * read-write bind (ReadWritePaths=) on top. */
START_TEST(test_path_read_only) {
        static const char mountinfo[] =
                "22 1 0:21 / / rw,relatime - ext4 /dev/vda1 rw\n"
                "23 22 0:22 / /sys rw,nosuid,nodev - sysfs sysfs rw\n"
                "24 22 0:23 / /proc rw - proc proc rw\n"
                "25 23 0:22 / /sys ro,nosuid,nodev,noexec - sysfs sysfs rw\n"
                "26 25 0:22 /kernel/mm/transparent_hugepage /sys/kernel/mm/transparent_hugepage rw,nosuid - sysfs sysfs rw\n"
                "27 22 0:24 / /sysroot rw,relatime,rootcontext=x - tmpfs tmpfs rw\n";
        bool ro;

        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/sys/kernel/mm/transparent_hugepage", &ro), 0);
        ck_assert(!ro);
        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/sys/kernel/mm/transparent_hugepage/enabled", &ro), 0);
        ck_assert(!ro);
        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/sys/kernel/mm/hugepages", &ro), 0);
        ck_assert(ro);
        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/sys", &ro), 0);
        ck_assert(ro);
        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/sysroot/x", &ro), 0);
        ck_assert(!ro);
        ck_assert_int_eq(procfs_parse_path_read_only(mountinfo, "/srv", &ro), 0);
        ck_assert(!ro);
        ck_assert_int_eq(procfs_parse_path_read_only("", "/srv", &ro), -ENOENT);
        ck_assert_int_eq(procfs_parse_path_read_only("garbage\n", "/sys", &ro), -EBADMSG);
        ck_assert_int_eq(procfs_parse_path_read_only(NULL, "/sys", &ro), -EINVAL);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("procfs", "core", NULL, NULL,
                                         test_vmstat_fixture,
                                         test_vmstat_fields,
                                         test_pressure,
                                         test_pid_stat,
                                         test_readers,
                                         test_find_kthreads,
                                         test_real_proc,
                                         test_thp_status,
                                         test_cgroup_unit,
                                         test_path_read_only));
}

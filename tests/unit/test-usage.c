/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <sys/mman.h>

#include "test-util.h"
#include "usage-read.h"
#include "usage.h"
#include "util.h"

#define MIB (UINT64_C(1) << 20)

/* Files captured on this project's test machine (Linux 6.18, a hybrid cgroup host, from a process
 * holding 64 MiB of THP), and a cgroup v2 memory.stat composed after
 * Documentation/admin-guide/cgroup-v2.rst (this host's v2 hierarchy has no memory controller):
 * tests/data/usage/. */
static char *read_fixture(const char *name) {
        const char *root = g_getenv("THPD_SOURCE_ROOT");
        g_autofree char *dir = NULL;

        ck_assert_ptr_nonnull(root);
        dir = g_build_filename(root, "tests", "data", "usage", NULL);
        return test_read_file(dir, name);
}

START_TEST(test_memory_stat_v2) {
        g_autofree char *content = read_fixture("memory.stat-v2-composed");
        UnitUsage u;

        ck_assert_int_eq(usage_parse_memory_stat_v2(content, &u), 0);
        ck_assert_uint_eq(u.anon_thp_bytes, 256 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, 2 * MIB);
        ck_assert_int_eq(u.source, USAGE_SOURCE_CGROUP_V2);
        ck_assert_str_eq(usage_source_to_string(u.source), "cgroup-v2");

        /* Before 5.4 there is no shmem_thp: unknown, not 0. */
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon 4096\nanon_thp 2097152\nfile_thp 0\n", &u), 0);
        ck_assert_uint_eq(u.anon_thp_bytes, 2 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, USAGE_UNKNOWN);

        /* A prefix is not the field; a kernel without THP has no anon_thp. */
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon_thp_x 5\nanon 1\n", &u), -ENODATA);
        ck_assert_int_eq(usage_parse_memory_stat_v2("", &u), -ENODATA);
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon_thp -1\n", &u), -EBADMSG);
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon_thp 12 kB\n", &u), -EBADMSG);
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon_thp\n", &u), -EBADMSG);
        ck_assert_int_eq(usage_parse_memory_stat_v2("anon_thp 99999999999999999999\n", &u), -EBADMSG);
}
END_TEST

START_TEST(test_memory_stat_v1) {
        g_autofree char *content = read_fixture("memory.stat-v1-6.18");
        UnitUsage u;

        ck_assert_int_eq(usage_parse_memory_stat_v1(content, &u), 0);
        ck_assert_uint_eq(u.anon_thp_bytes, 64 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, USAGE_UNKNOWN);
        ck_assert_str_eq(usage_source_to_string(u.source), "cgroup-v1");

        /* rss_huge is the cgroup's own; total_rss_huge adds its children. */
        ck_assert_int_eq(usage_parse_memory_stat_v1("rss_huge 0\ntotal_rss_huge 4194304\n", &u), 0);
        ck_assert_uint_eq(u.anon_thp_bytes, 4 * MIB);
        ck_assert_int_eq(usage_parse_memory_stat_v1("rss_huge 4194304\n", &u), -ENODATA);
        /* A v2 file is not a v1 one, and the other way round. */
        g_autofree char *v2 = read_fixture("memory.stat-v2-composed");
        ck_assert_int_eq(usage_parse_memory_stat_v1(v2, &u), -ENODATA);
        ck_assert_int_eq(usage_parse_memory_stat_v2(content, &u), -ENODATA);
}
END_TEST

START_TEST(test_smaps_rollup) {
        g_autofree char *content = read_fixture("smaps_rollup-thp-6.18");
        uint64_t anon = 1, shmem = 1;

        ck_assert_int_eq(usage_parse_smaps_rollup(content, &anon, &shmem), 0);
        ck_assert_uint_eq(anon, 64 * MIB);
        ck_assert_uint_eq(shmem, 0);

        ck_assert_int_eq(usage_parse_smaps_rollup("", &anon, &shmem), 0);
        ck_assert_uint_eq(anon, 0);
        ck_assert_uint_eq(shmem, 0);

        ck_assert_int_eq(usage_parse_smaps_rollup("00400000-7ffc0000 ---p 00000000 00:00 0 [rollup]\n"
                                                  "AnonHugePages:    4096 kB\n", &anon, &shmem), 0);
        ck_assert_uint_eq(anon, 4 * MIB);
        ck_assert_uint_eq(shmem, USAGE_UNKNOWN);

        ck_assert_int_eq(usage_parse_smaps_rollup("Rss: 4 kB\n", &anon, &shmem), -ENODATA);
        ck_assert_int_eq(usage_parse_smaps_rollup("AnonHugePages: 4 MB\n", &anon, &shmem), -EBADMSG);
        ck_assert_int_eq(usage_parse_smaps_rollup("AnonHugePages: kB\n", &anon, &shmem), -EBADMSG);
        ck_assert_int_eq(usage_parse_smaps_rollup("AnonHugePages: 18014398509481984 kB\n", &anon, &shmem), -EBADMSG);
}
END_TEST

START_TEST(test_pid_cgroup) {
        g_autofree char *hybrid = read_fixture("pid-cgroup-hybrid-6.18");
        g_autofree char *memory = NULL, *unified = NULL, *cpu = NULL, *colon = NULL;
        char *unused = NULL;

        ck_assert_int_eq(usage_parse_pid_cgroup(hybrid, "memory", &memory), 0);
        ck_assert_str_eq(memory, "/process_api/c1ba59e55e55e0725c3dd348f6c4a3d4");
        ck_assert_int_eq(usage_parse_pid_cgroup(hybrid, NULL, &unified), 0);
        ck_assert_str_eq(unified, "/");
        /* Co-mounted controllers: "2:cpu,cpuacct:/x". */
        ck_assert_int_eq(usage_parse_pid_cgroup("2:cpu,cpuacct:/x\n", "cpuacct", &cpu), 0);
        ck_assert_str_eq(cpu, "/x");
        ck_assert_int_eq(usage_parse_pid_cgroup("0::/a:b.service\n", NULL, &colon), 0);
        ck_assert_str_eq(colon, "/a:b.service");

        ck_assert_int_eq(usage_parse_pid_cgroup("0::/\n", "memory", &unused), -ENOENT);
        ck_assert_int_eq(usage_parse_pid_cgroup("4:memory\n", "memory", &unused), -EBADMSG);
        ck_assert_int_eq(usage_parse_pid_cgroup("4:memory:relative\n", "memory", &unused), -EBADMSG);
        ck_assert_ptr_null(unused);
}
END_TEST

static char *common(const char *a, const char *b, const char *c) {
        char *paths[] = { (char *) a, (char *) b, (char *) c };

        return usage_common_cgroup(paths, c ? 3 : b ? 2 : a ? 1 : 0);
}

#define ASSERT_COMMON(expected, a, b, c)                        \
        do {                                                    \
                g_autofree char *_c = common(a, b, c);          \
                ck_assert_pstr_eq(_c, expected);                \
        } while (0)

START_TEST(test_common_cgroup) {
        ASSERT_COMMON("/a/b.service", "/a/b.service", NULL, NULL);
        ASSERT_COMMON("/a/b.service", "/a/b.service", "/a/b.service/worker", NULL);
        ASSERT_COMMON("/a/b.service", "/a/b.service/x", "/a/b.service/y", "/a/b.service/x/z");
        /* Component-wise, not character-wise. */
        ASSERT_COMMON("/a", "/a/b.service", "/a/bc.service", NULL);
        ASSERT_COMMON("/", "/a", "/b", NULL);
        ASSERT_COMMON("/", "/", "/a", NULL);
        ASSERT_COMMON(NULL, NULL, NULL, NULL);
        ASSERT_COMMON(NULL, "/a/../..", NULL, NULL);
        ASSERT_COMMON(NULL, "/a", "relative", NULL);
        ASSERT_COMMON(NULL, "/a/./b", NULL, NULL);

        ck_assert(usage_cgroup_contains("/", "/x"));
        ck_assert(usage_cgroup_contains("/a/b", "/a/b"));
        ck_assert(usage_cgroup_contains("/a/b", "/a/b/c"));
        ck_assert(!usage_cgroup_contains("/a/b", "/a/bc"));
        ck_assert(!usage_cgroup_contains("/a/b/c", "/a/b"));
}
END_TEST

START_TEST(test_add) {
        ck_assert_uint_eq(usage_add(1, 2), 3);
        ck_assert_uint_eq(usage_add(USAGE_UNKNOWN, 2), USAGE_UNKNOWN);
        ck_assert_uint_eq(usage_add(2, USAGE_UNKNOWN), USAGE_UNKNOWN);
        ck_assert_uint_eq(usage_add(USAGE_UNKNOWN - 2, 5), USAGE_UNKNOWN - 1);
}
END_TEST

/* ---- the reader, against scratch cgroupfs and procfs trees ---- */

static char *root;

static void setup(void) {
        root = test_mkdtemp();
}

static void teardown(void) {
        test_rm_rf(root);
        g_clear_pointer(&root, g_free);
}

static char *subdir(const char *name) {
        return g_build_filename(root, name, NULL);
}

static const char SMAPS_2M[] = "00400000-7ffc0000 ---p 00000000 00:00 0 [rollup]\nAnonHugePages:  2048 kB\n"
                               "ShmemPmdMapped:  0 kB\n";
#define UNIT "/system.slice/redis-server.service"

static void write_process(const char *proc, pid_t pid, const char *cgroup_lines, const char *smaps) {
        g_autofree char *cg = g_strdup_printf("%d/cgroup", (int) pid);
        g_autofree char *sm = g_strdup_printf("%d/smaps_rollup", (int) pid);

        test_write_file(proc, cg, cgroup_lines);
        test_write_file(proc, sm, smaps);
}

START_TEST(test_read_unified) {
        g_autofree char *cg = subdir("cgroup"), *proc = subdir("proc");
        g_autofree char *stat = g_build_filename(UNIT + 1, "memory.stat", NULL);
        g_autofree char *v2 = read_fixture("memory.stat-v2-composed");
        const UnitProcess ps[] = { { .pid = 10, .cgroup = UNIT }, { .pid = 11, .cgroup = "/system.slice/redis-server.service/sub" } };
        UnitUsage u;

        test_write_file(cg, "cgroup.controllers", "cpu io memory pids\n");
        test_write_file(cg, stat, v2);
        write_process(proc, 10, "0::/system.slice/redis-server.service\n", SMAPS_2M);
        ck_assert_int_eq(usage_read_unit(cg, proc, ps, ELEMENTSOF(ps), &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_CGROUP_V2);
        ck_assert_uint_eq(u.anon_thp_bytes, 256 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, 2 * MIB);
}
END_TEST

START_TEST(test_read_hybrid) {
        g_autofree char *cg = subdir("cgroup"), *proc = subdir("proc");
        g_autofree char *v1_stat = g_build_filename("memory", UNIT, "memory.stat", NULL);
        g_autofree char *v1 = read_fixture("memory.stat-v1-6.18");
        const UnitProcess ps[] = { { .pid = 10, .cgroup = UNIT }, { .pid = 11, .cgroup = UNIT } };
        UnitUsage u;

        /* The v2 hierarchy of a hybrid host has no memory controller: no memory.stat there. */
        test_write_file(cg, "unified/cgroup.controllers", "");
        test_write_file(cg, "unified/system.slice/redis-server.service/cgroup.procs", "10\n11\n");
        test_write_file(cg, v1_stat, v1);
        write_process(proc, 10, "4:memory:/system.slice/redis-server.service\n0::/system.slice/redis-server.service\n",
                      SMAPS_2M);
        write_process(proc, 11, "4:memory:/system.slice/redis-server.service\n", SMAPS_2M);
        ck_assert_int_eq(usage_read_unit(cg, proc, ps, ELEMENTSOF(ps), &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_CGROUP_V1);
        ck_assert_uint_eq(u.anon_thp_bytes, 64 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, USAGE_UNKNOWN);

        /* The same path in the memory hierarchy, but the processes are elsewhere in it (a user
         * manager cannot realise v1 controllers): their own smaps_rollup then. */
        write_process(proc, 10, "4:memory:/process_api/x\n0::/system.slice/redis-server.service\n", SMAPS_2M);
        ck_assert_int_eq(usage_read_unit(cg, proc, ps, ELEMENTSOF(ps), &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_SMAPS);
        ck_assert_uint_eq(u.anon_thp_bytes, 4 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, 0);
}
END_TEST

START_TEST(test_read_smaps) {
        g_autofree char *cg = subdir("cgroup"), *proc = subdir("proc");
        /* Beyond any pid_max (2^22): a process that exited after the manager listed it. */
        const pid_t gone = INT32_MAX - 1;
        const UnitProcess ps[] = { { .pid = 10, .cgroup = UNIT }, { .pid = gone, .cgroup = UNIT }, { .pid = 11, .cgroup = UNIT } };
        const UnitProcess hidden[] = { { .pid = 10, .cgroup = UNIT }, { .pid = getpid(), .cgroup = UNIT } };
        UnitUsage u;

        /* No cgroup file system at all, and one process has exited. */
        write_process(proc, 10, "0::/\n", SMAPS_2M);
        write_process(proc, 11, "0::/\n", "AnonHugePages: 4096 kB\nShmemPmdMapped: 2048 kB\n");
        ck_assert_int_eq(usage_read_unit(cg, proc, ps, ELEMENTSOF(ps), &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_SMAPS);
        ck_assert_uint_eq(u.anon_thp_bytes, 6 * MIB);
        ck_assert_uint_eq(u.shmem_thp_bytes, 2 * MIB);

        /* No processes: nothing held. */
        ck_assert_int_eq(usage_read_unit(cg, proc, NULL, 0, &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_SMAPS);
        ck_assert_uint_eq(u.anon_thp_bytes, 0);

        /* A process that runs but has no directory (procfs mounted with hidepid=, or
         * ProtectProc=invisible) is not known, not 0. */
        ck_assert_int_eq(usage_read_unit(cg, proc, hidden, ELEMENTSOF(hidden), &u), -EACCES);

        /* A file that is not smaps_rollup fails the unit rather than count wrong. */
        write_process(proc, 11, "0::/\n", "garbage\n");
        u.source = USAGE_SOURCE_NONE;
        ck_assert_int_eq(usage_read_unit(cg, proc, ps, ELEMENTSOF(ps), &u), -ENODATA);
        ck_assert_int_eq(u.source, USAGE_SOURCE_NONE);
}
END_TEST

/* This process, read from the real /proc by the smaps source, holds the THP it just touched. */
START_TEST(test_read_real_proc) {
        const size_t size = 32 * MIB;
        const UnitProcess ps[] = { { .pid = getpid(), .cgroup = "/" } };
        uint64_t before, after;
        UnitUsage u;
        char *p;

        ck_assert_int_eq(usage_read_unit(root, "/proc", ps, 1, &u), 0);
        ck_assert_int_eq(u.source, USAGE_SOURCE_SMAPS);
        before = u.anon_thp_bytes;

        p = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        ck_assert_ptr_ne(p, MAP_FAILED);
        if (madvise(p, size, MADV_HUGEPAGE) < 0) {
                munmap(p, size);
                return; /* a kernel without THP: nothing to see */
        }
        for (size_t i = 0; i < size; i += 4096)
                p[i] = 1;
        ck_assert_int_eq(usage_read_unit(root, "/proc", ps, 1, &u), 0);
        after = u.anon_thp_bytes;
        munmap(p, size);
        /* THP "never", or no free 2 MiB block: nothing to compare with. */
        if (after == before)
                return;
        ck_assert_uint_ge(after, before);
        ck_assert_uint_le(after - before, size);
}
END_TEST

int main(void) {
        Suite *s = suite_create("usage");
        TCase *parse = tcase_create("parse"), *read = tcase_create("read");

        tcase_add_test(parse, test_memory_stat_v2);
        tcase_add_test(parse, test_memory_stat_v1);
        tcase_add_test(parse, test_smaps_rollup);
        tcase_add_test(parse, test_pid_cgroup);
        tcase_add_test(parse, test_common_cgroup);
        tcase_add_test(parse, test_add);
        suite_add_tcase(s, parse);

        tcase_add_checked_fixture(read, setup, teardown);
        tcase_add_test(read, test_read_unified);
        tcase_add_test(read, test_read_hybrid);
        tcase_add_test(read, test_read_smaps);
        tcase_add_test(read, test_read_real_proc);
        suite_add_tcase(s, read);
        return test_run_suite(s);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <glib.h>
#include <grp.h>
#include <sched.h>
#include <signal.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>

#include "runtime-file.h"
#include "sysfs.h"
#include "test-util.h"
#include "util.h"

#define THP "kernel/mm/transparent_hugepage/"
#define POOL_2M "kernel/mm/hugepages/hugepages-2048kB/"
#define NODE_POOL_2M(n) "devices/system/node/node" #n "/hugepages/hugepages-2048kB/"

static char *root;

static void setup(void) {
        root = test_mkdtemp();
}

static void teardown(void) {
        test_rm_rf(root);
        g_free(root);
}

static KnobValue value_of(Knob k, const char *s) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, s, &v), 0);
        return v;
}

static char *root_path(const char *relpath) {
        return g_build_filename(root, relpath, NULL);
}

static bool exists(const char *relpath) {
        g_autofree char *path = root_path(relpath);

        return access(path, F_OK) >= 0;
}

static void assert_knob(Knob k, const char *expected) {
        KnobValue v;
        char buf[24];

        ck_assert_int_eq(sysfs_read_knob(root, k, &v), 0);
        ck_assert_str_eq(knob_value_to_string(k, v, buf), expected);
}

static void assert_file(const char *relpath, const char *expected) {
        g_autofree char *content = test_read_file(root, relpath);

        ck_assert_str_eq(content, expected);
}

/* Runs fn in a forked child, because it changes namespaces or credentials that must not leak into
 * the test process. Check's asserts cannot report from a grandchild, so fn returns 0 or a negative
 * errno through the exit code. */
static int run_in_child(int (*fn)(void *), void *userdata) {
        int status;
        pid_t pid;

        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0)
                _exit(-fn(userdata));
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status));
        return -WEXITSTATUS(status);
}

/* A stand-in for a kernel attribute whose store handler accepts a write but then shows a value of
 * its own choosing, as sysfs does for a silently partial hugetlb allocation: the attribute is a
 * symlink to the slave side of a pseudo-terminal in raw mode. What the code under test writes
 * goes to the master, where fake_attribute_finish() picks it up; what it reads is `shows`, queued
 * on the master beforehand. The two directions are separate queues and the kernel hands queued
 * input to a reader before it reports "nothing to read", so no process has to run between the
 * write and the read-back and nothing depends on timing. (A FIFO served by a child did: once
 * read_small_file() opened it O_NONBLOCK, it could read back its own write before the child took
 * it.) Returns the master. */
static int fake_attribute_start(const char *relpath, const char *shows) {
        g_autofree char *path = root_path(relpath);
        g_autofree char *parent = g_path_get_dirname(path);
        size_t len = strlen(shows);
        struct termios t;
        int master;

        master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC | O_NONBLOCK);
        ck_assert_msg(master >= 0, "posix_openpt: %s", strerror(errno));
        ck_assert_int_eq(grantpt(master), 0);
        ck_assert_int_eq(unlockpt(master), 0);
        /* No echo, no line editing, no newline translation. Set before `shows` is queued, or it
         * would be echoed back into what the test reads as written. Through the master, this
         * sets the slave's modes. */
        ck_assert_int_eq(tcgetattr(master, &t), 0);
        cfmakeraw(&t);
        ck_assert_int_eq(tcsetattr(master, TCSANOW, &t), 0);

        ck_assert_int_eq(g_mkdir_with_parents(parent, 0755), 0);
        ck_assert_int_eq(symlink(ptsname(master), path), 0);
        ck_assert_int_eq(write(master, shows, len), (ssize_t) len);
        return master;
}

/* Returns what the code under test wrote to the attribute, and closes the master. */
static char *fake_attribute_finish(int master) {
        char buf[256];
        size_t n = 0;
        ssize_t k;

        /* The slave is closed by now, so the master reads what is queued, then EIO (or EAGAIN):
         * it never waits. */
        while (n < sizeof buf - 1 && (k = read(master, buf + n, sizeof buf - 1 - n)) > 0)
                n += (size_t) k;
        ck_assert_int_eq(close(master), 0);
        return g_strndup(buf, n);
}

START_TEST(test_knob_path) {
        g_autofree char *path = sysfs_knob_path(root, KNOB_KHUGEPAGED_DEFRAG);
        g_autofree char *expected = root_path(THP "khugepaged/defrag");

        ck_assert_str_eq(path, expected);
        ck_assert_ptr_null(sysfs_knob_path(root, _KNOB_MAX));
}
END_TEST

START_TEST(test_read_kinds) {
        test_write_file(root, THP "enabled", "always [madvise] never\n");
        test_write_file(root, THP "defrag", "defer+madvise\n");
        test_write_file(root, THP "shmem_enabled", "always within_size advise [never] deny force\n");
        test_write_file(root, THP "hugepages-64kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "khugepaged/max_ptes_none", "511\n");
        test_write_file(root, THP "khugepaged/pages_to_scan", "4096");

        assert_knob(KNOB_ENABLED, "madvise");
        assert_knob(KNOB_DEFRAG, "defer+madvise");
        assert_knob(KNOB_SHMEM_ENABLED, "never");
        assert_knob(KNOB_MTHP_FIRST + 3, "never");
        assert_knob(KNOB_KHUGEPAGED_MAX_PTES_NONE, "511");
        assert_knob(KNOB_KHUGEPAGED_PAGES_TO_SCAN, "4096");
}
END_TEST

START_TEST(test_write_read_back) {
        test_write_file(root, THP "enabled", "always [madvise] never\n");
        test_write_file(root, THP "hugepages-2048kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "khugepaged/scan_sleep_millisecs", "10000\n");

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, value_of(KNOB_ENABLED, "never")), 0);
        /* The bare word in one write, nothing of the old content left behind. */
        assert_file(THP "enabled", "never");
        assert_knob(KNOB_ENABLED, "never");

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_MTHP_FIRST + 8, KNOB_MTHP_INHERIT), 0);
        assert_file(THP "hugepages-2048kB/enabled", "inherit");

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, 30000), 0);
        assert_file(THP "khugepaged/scan_sleep_millisecs", "30000");
        assert_knob(KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS, "30000");
}
END_TEST

START_TEST(test_write_rejects_invalid_value) {
        test_write_file(root, THP "enabled", "always [madvise] never\n");
        test_write_file(root, THP "khugepaged/max_ptes_none", "511\n");

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, 3), -EINVAL);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, KNOB_VALUE_UNSET), -EINVAL);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_KHUGEPAGED_MAX_PTES_NONE, 512), -EINVAL);
        ck_assert_int_eq(sysfs_write_knob(root, _KNOB_MAX, 0), -EINVAL);
        assert_file(THP "enabled", "always [madvise] never\n");
        assert_file(THP "khugepaged/max_ptes_none", "511\n");
}
END_TEST

START_TEST(test_missing_stays_missing) {
        KnobValue v;

        test_write_file(root, THP "enabled", "always [madvise] never\n");

        ck_assert_int_eq(sysfs_read_knob(root, KNOB_SHMEM_ENABLED, &v), -ENOENT);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_SHMEM_ENABLED, value_of(KNOB_SHMEM_ENABLED, "never")), -ENOENT);
        ck_assert(!exists(THP "shmem_enabled"));

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_MTHP_FIRST + 2, KNOB_MTHP_INHERIT), -ENOENT);
        ck_assert(!exists(THP "hugepages-32kB"));

        ck_assert_int_eq(sysfs_write_knob(root, KNOB_KHUGEPAGED_DEFRAG, 0), -ENOENT);
        ck_assert(!exists(THP "khugepaged"));
}
END_TEST

START_TEST(test_garbage) {
        KnobValue v = 42;

        test_write_file(root, THP "enabled", "sometimes\n");
        test_write_file(root, THP "defrag", "[always] [never]\n");
        test_write_file(root, THP "shmem_enabled", "");
        test_write_file(root, THP "khugepaged/max_ptes_none", "600\n");
        test_write_file(root, THP "khugepaged/max_ptes_swap", "sixty-four\n");

        ck_assert_int_eq(sysfs_read_knob(root, KNOB_ENABLED, &v), -EBADMSG);
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_DEFRAG, &v), -EBADMSG);
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_SHMEM_ENABLED, &v), -EBADMSG);
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_KHUGEPAGED_MAX_PTES_NONE, &v), -EBADMSG);
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_KHUGEPAGED_MAX_PTES_SWAP, &v), -EBADMSG);
        /* Out-parameters are left alone on failure. */
        ck_assert_int_eq(v, 42);
}
END_TEST

START_TEST(test_read_back_empty) {
        g_autofree char *dir = root_path(THP);
        g_autofree char *path = root_path(THP "enabled");

        /* Writes vanish and reads give nothing: the kernel did not refuse, but what it shows is
         * not a value at all, so the honest answer is "cannot parse", not "wrong value". */
        ck_assert_int_eq(g_mkdir_with_parents(dir, 0755), 0);
        ck_assert_int_eq(symlink("/dev/null", path), 0);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, value_of(KNOB_ENABLED, "never")), -EBADMSG);
}
END_TEST

START_TEST(test_read_back_mismatch) {
        g_autofree char *written = NULL;
        int master;

        master = fake_attribute_start(THP "enabled", "always madvise [never]\n");
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, value_of(KNOB_ENABLED, "madvise")), -EIO);
        written = fake_attribute_finish(master);
        ck_assert_str_eq(written, "madvise");
}
END_TEST

START_TEST(test_read_back_rerendered) {
        g_autofree char *written = NULL;
        int master;

        /* Real sysfs answers a write of "defer" with the whole list, the new value bracketed. */
        master = fake_attribute_start(THP "defrag", "always [defer] defer+madvise madvise never\n");
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_DEFRAG, value_of(KNOB_DEFRAG, "defer")), 0);
        written = fake_attribute_finish(master);
        ck_assert_str_eq(written, "defer");
}
END_TEST

START_TEST(test_write_errno_comes_from_write) {
        g_autofree char *dir = root_path(THP);
        g_autofree char *path = root_path(THP "enabled");
        _cleanup_free_ char *before = NULL, *after = NULL;

        /* /dev/full opens fine and fails the write() itself, as a sysfs store handler does. */
        ck_assert_int_eq(g_mkdir_with_parents(dir, 0755), 0);
        ck_assert_int_eq(symlink("/dev/full", path), 0);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_ENABLED, value_of(KNOB_ENABLED, "never")), -ENOSPC);

        /* A real kernel store handler rejecting a value; this only concerns the forked test
         * process, and the rejected write changes nothing. */
        ck_assert_int_eq(read_small_file("/proc/self/oom_score_adj", &before), 0);
        ck_assert_int_eq(write_small_file("/proc/self/oom_score_adj", "not-a-number"), -EINVAL);
        ck_assert_int_eq(read_small_file("/proc/self/oom_score_adj", &after), 0);
        ck_assert_str_eq(before, after);
}
END_TEST

/* A FIFO where a knob should be (a broken or hostile --sysfs tree) must never hang the daemon,
 * neither in open() nor in read(). */
START_TEST(test_fifo_never_blocks) {
        g_autofree char *dir = root_path(THP);
        g_autofree char *path = root_path(THP "defrag");
        KnobValue v = 42;
        char *content = NULL;
        char buf[16] = {};
        gint64 start, waited;
        int fd;

        ck_assert_int_eq(g_mkdir_with_parents(dir, 0755), 0);
        ck_assert_int_eq(mkfifo(path, 0600), 0);

        /* Nobody at the other end: a write fails at once, a read sees EOF, which no knob parses. */
        ck_assert_int_eq(write_small_file(path, "never"), -ENXIO);
        ck_assert_int_eq(sysfs_write_knob(root, KNOB_DEFRAG, value_of(KNOB_DEFRAG, "never")), -ENXIO);
        ck_assert_int_eq(read_small_file(path, &content), 0);
        ck_assert_str_eq(content, "");
        free(content);
        content = NULL;
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_DEFRAG, &v), -EBADMSG);

        /* With the test at the other end (O_RDWR: both a reader and a writer, which never closes): a
         * write goes through, and a read takes what is queued and stops when nothing more is. */
        fd = open(path, O_RDWR | O_CLOEXEC | O_NONBLOCK);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write_small_file(path, "never"), 0);
        ck_assert_int_eq(read(fd, buf, sizeof buf - 1), 5);
        ck_assert_str_eq(buf, "never");
        ck_assert_int_eq(write(fd, "always [never]\n", 15), 15);
        ck_assert_int_eq(sysfs_read_knob(root, KNOB_DEFRAG, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_DEFRAG, "never"));

        /* A writer that never writes: the read gives up after its bounded wait (1 s). */
        start = g_get_monotonic_time();
        ck_assert_int_eq(read_small_file(path, &content), -ETIMEDOUT);
        waited = g_get_monotonic_time() - start;
        ck_assert_ptr_null(content);
        ck_assert_msg(waited >= G_USEC_PER_SEC && waited < 10 * G_USEC_PER_SEC, "waited %" G_GINT64_FORMAT " us", waited);
        ck_assert_int_eq(close(fd), 0);
}
END_TEST

/* Kept open between reads, a knob's file still shows what was written since, and a file removed
 * or replaced (another renamed over it, a FIFO in its place) is not read through the old one. */
START_TEST(test_knob_files_kept) {
        g_autofree char *path = root_path(THP "defrag");
        g_autofree char *tmp = root_path(THP "defrag.new");
        KnobFiles f;
        KnobValue v;
        int kept;

        test_write_file(root, THP "defrag", "always [madvise] never\n");
        test_write_file(root, THP "enabled", "always [madvise] never\n");
        knob_files_init(&f);
        knob_files_open(&f, root);
        ck_assert_int_ge(f.dir_fd, 0);

        ck_assert_int_eq(knob_files_read(&f, root, KNOB_DEFRAG, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_DEFRAG, "madvise"));
        kept = f.fd[KNOB_DEFRAG];
        ck_assert_int_ge(kept, 0);

        /* Rewritten in place, as the kernel's store handler does (test_write_file() renames) */
        ck_assert_int_eq(write_small_file(path, "always [defer] madvise never\n"), 0);
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_DEFRAG, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_DEFRAG, "defer"));
        ck_assert_int_eq(f.fd[KNOB_DEFRAG], kept);

        /* Replaced by another file renamed over it */
        test_write_file(root, THP "defrag.new", "always madvise [never]\n");
        ck_assert_int_eq(rename(tmp, path), 0);
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_DEFRAG, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_DEFRAG, "never"));

        /* Removed */
        ck_assert_int_eq(unlink(path), 0);
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_DEFRAG, &v), -ENOENT);
        ck_assert_int_eq(f.fd[KNOB_DEFRAG], -1);

        /* A FIFO in its place: read once (EOF, nothing a knob parses) and not kept */
        ck_assert_int_eq(mkfifo(path, 0600), 0);
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_DEFRAG, &v), -EBADMSG);
        ck_assert_int_eq(f.fd[KNOB_DEFRAG], -1);

        /* Text no knob parses: an error, and the file is opened afresh next time */
        test_write_file(root, THP "enabled", "garbage\n");
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_ENABLED, &v), -EBADMSG);
        ck_assert_int_eq(f.fd[KNOB_ENABLED], -1);
        test_write_file(root, THP "enabled", "[always] madvise never\n");
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_ENABLED, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_ENABLED, "always"));

        knob_files_close(&f);
        ck_assert_int_eq(f.dir_fd, -1);
        ck_assert_int_eq(f.fd[KNOB_ENABLED], -1);
        /* Without the directory, reads go by path */
        knob_files_open(&f, "/nonexistent");
        ck_assert_int_eq(f.dir_fd, -1);
        ck_assert_int_eq(knob_files_read(&f, root, KNOB_ENABLED, &v), 0);
        ck_assert_int_eq(v, value_of(KNOB_ENABLED, "always"));
        knob_files_close(&f);
}
END_TEST

/* The pools' counters kept open: a rewrite shows, a removed file is not read through the old
 * descriptor, and pools beyond those kept are read by path. */
START_TEST(test_pool_files_kept) {
        g_autofree char *nr = root_path(POOL_2M "nr_hugepages");
        PoolFiles f;
        PoolState s;
        uint64_t pages;

        test_write_file(root, POOL_2M "nr_hugepages", "8\n");
        test_write_file(root, POOL_2M "free_hugepages", "6\n");
        test_write_file(root, POOL_2M "surplus_hugepages", "1\n");
        pool_files_init(&f);
        ck_assert_int_eq(pool_files_read(&f, root, 2048, POOL_NODE_ANY, &s), 0);
        ck_assert_uint_eq(s.nr, 8);
        ck_assert_uint_eq(s.free, 6);
        ck_assert_uint_eq(s.surplus, 1);
        ck_assert_uint_eq(f.n, 1);
        ck_assert_int_ge(f.kept[0].fd[POOL_COUNTER_NR], 0);

        ck_assert_int_eq(write_small_file(nr, "12\n"), 0);
        ck_assert_int_eq(pool_files_read_pages(&f, root, 2048, POOL_NODE_ANY, &pages), 0);
        ck_assert_uint_eq(pages, 12);

        ck_assert_int_eq(unlink(nr), 0);
        ck_assert_int_eq(pool_files_read_pages(&f, root, 2048, POOL_NODE_ANY, &pages), -ENOENT);
        test_write_file(root, POOL_2M "nr_hugepages", "garbage\n");
        ck_assert_int_eq(pool_files_read(&f, root, 2048, POOL_NODE_ANY, &s), -EBADMSG);
        ck_assert_int_eq(f.kept[0].fd[POOL_COUNTER_NR], -1);
        test_write_file(root, POOL_2M "nr_hugepages", "4\n");
        ck_assert_int_eq(pool_files_read(&f, root, 2048, POOL_NODE_ANY, &s), 0);
        ck_assert_uint_eq(s.nr, 4);

        /* More pools than kept: read by path, still right */
        for (int node = 0; node < POOL_FILES_MAX; node++) {
                g_autofree char *dir = g_strdup_printf("devices/system/node/node%d/hugepages/hugepages-2048kB/", node);
                g_autofree char *n = g_strconcat(dir, "nr_hugepages", NULL);
                g_autofree char *fr = g_strconcat(dir, "free_hugepages", NULL);
                g_autofree char *su = g_strconcat(dir, "surplus_hugepages", NULL);
                g_autofree char *value = g_strdup_printf("%d\n", node + 100);

                test_write_file(root, n, value);
                test_write_file(root, fr, "0\n");
                test_write_file(root, su, "0\n");
                ck_assert_int_eq(pool_files_read(&f, root, 2048, node, &s), 0);
                ck_assert_uint_eq(s.nr, (uint64_t) node + 100);
        }
        ck_assert_uint_eq(f.n, POOL_FILES_MAX);
        pool_files_close(&f);
        ck_assert_uint_eq(f.n, 0);
}
END_TEST

START_TEST(test_small_file_limits) {
        g_autofree char *big = g_malloc(64 * 1024 + 1);
        g_autofree char *path = root_path("big");
        g_autofree char *nul = root_path("nul");
        char *content = NULL;

        memset(big, 'x', 64 * 1024 + 1);
        ck_assert(g_file_set_contents(path, big, 64 * 1024, NULL));
        ck_assert_int_eq(read_small_file(path, &content), 0);
        ck_assert_uint_eq(strlen(content), 64 * 1024);
        free(content);
        content = NULL;

        ck_assert(g_file_set_contents(path, big, 64 * 1024 + 1, NULL));
        ck_assert_int_eq(read_small_file(path, &content), -EFBIG);
        ck_assert_ptr_null(content);

        ck_assert(g_file_set_contents(nul, "never\0always", 12, NULL));
        ck_assert_int_eq(read_small_file(nul, &content), -EBADMSG);
        ck_assert_int_eq(read_small_file(root, &content), -EISDIR);
        ck_assert_ptr_null(content);
}
END_TEST

START_TEST(test_probe_partial_tree) {
        bool present[_KNOB_MAX];
        bool expected[_KNOB_MAX] = {
                [KNOB_ENABLED] = true,
                [KNOB_DEFRAG] = true,
                [KNOB_KHUGEPAGED_DEFRAG] = true,
                [KNOB_KHUGEPAGED_MAX_PTES_NONE] = true,
                [KNOB_MTHP_FIRST + 3] = true,
                [KNOB_MTHP_SHMEM_FIRST + 8] = true,
                [KNOB_SHRINK_UNDERUSED] = true,
        };
        g_autofree char *dir = root_path(THP "khugepaged/pages_to_scan");

        test_write_file(root, THP "enabled", "always [madvise] never\n");
        test_write_file(root, THP "defrag", "[madvise]\n");
        test_write_file(root, THP "hpage_pmd_size", "2097152\n");
        test_write_file(root, THP "khugepaged/defrag", "1\n");
        test_write_file(root, THP "khugepaged/max_ptes_none", "511\n");
        test_write_file(root, THP "khugepaged/full_scans", "3\n");
        test_write_file(root, THP "hugepages-64kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "shrink_underused", "1\n");
        /* A size directory with shmem_enabled only has that knob; a knob name that is a directory
         * does not count. */
        test_write_file(root, THP "hugepages-2048kB/shmem_enabled", "always [inherit] never\n");
        ck_assert_int_eq(g_mkdir_with_parents(dir, 0755), 0);

        sysfs_probe_knobs(root, present);
        FOREACH_KNOB(k)
                ck_assert_msg(present[k] == expected[k], "%s: probed %s", knob_name(k),
                              present[k] ? "present" : "absent");
}
END_TEST

START_TEST(test_hugetlb_sizes) {
        g_autofree uint64_t *sizes = NULL;
        size_t n = 42;

        ck_assert_int_eq(sysfs_list_hugetlb_sizes(root, &sizes, &n), -ENOENT);
        ck_assert_uint_eq(n, 42);

        test_write_file(root, "kernel/mm/hugepages/other", "");
        ck_assert_int_eq(sysfs_list_hugetlb_sizes(root, &sizes, &n), 0);
        ck_assert_uint_eq(n, 0);

        test_write_file(root, POOL_2M "nr_hugepages", "0\n");
        test_write_file(root, "kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages", "0\n");
        test_write_file(root, "kernel/mm/hugepages/hugepages-64kB/nr_hugepages", "0\n");
        /* Junk: none of these is a pool directory of the kernel's naming. */
        test_write_file(root, "kernel/mm/hugepages/hugepages-4096kB", "a file, not a directory");
        test_write_file(root, "kernel/mm/hugepages/hugepages-kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-8KB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-16kB~/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-032kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-0kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-+128kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages- 256kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/hugepages-99999999999999999999kB/x", "");
        test_write_file(root, "kernel/mm/hugepages/xhugepages-512kB/x", "");

        ck_assert_int_eq(sysfs_list_hugetlb_sizes(root, &sizes, &n), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_uint_eq(sizes[0], 64);
        ck_assert_uint_eq(sizes[1], 2048);
        ck_assert_uint_eq(sizes[2], 1048576);
}
END_TEST

START_TEST(test_pool_nodes) {
        g_autofree int *nodes = NULL;
        size_t n;

        ck_assert_int_eq(sysfs_list_pool_nodes(root, 2048, &nodes, &n), -ENOENT);

        test_write_file(root, NODE_POOL_2M(0) "nr_hugepages", "0\n");
        test_write_file(root, NODE_POOL_2M(2) "nr_hugepages", "0\n");
        test_write_file(root, NODE_POOL_2M(10) "nr_hugepages", "0\n");
        /* Node 3 has only 1 GiB pages, node 4 no hugepages at all. */
        test_write_file(root, "devices/system/node/node3/hugepages/hugepages-1048576kB/nr_hugepages", "0\n");
        test_write_file(root, "devices/system/node/node4/cpulist", "0-3\n");
        /* Junk next to the node directories. */
        test_write_file(root, "devices/system/node/possible", "0-10\n");
        test_write_file(root, "devices/system/node/has_memory", "0,2,10\n");
        test_write_file(root, "devices/system/node/node/" "hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        test_write_file(root, "devices/system/node/node05/" "hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        test_write_file(root, "devices/system/node/node6a/" "hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        test_write_file(root, "devices/system/node/node-7/" "hugepages/hugepages-2048kB/nr_hugepages", "0\n");
        test_write_file(root, "devices/system/node/node99999999999/" "hugepages/hugepages-2048kB/nr_hugepages", "0\n");

        ck_assert_int_eq(sysfs_list_pool_nodes(root, 2048, &nodes, &n), 0);
        ck_assert_uint_eq(n, 3);
        ck_assert_int_eq(nodes[0], 0);
        ck_assert_int_eq(nodes[1], 2);
        ck_assert_int_eq(nodes[2], 10);
        g_clear_pointer(&nodes, g_free);

        ck_assert_int_eq(sysfs_list_pool_nodes(root, 1048576, &nodes, &n), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_int_eq(nodes[0], 3);
        g_clear_pointer(&nodes, g_free);

        ck_assert_int_eq(sysfs_list_pool_nodes(root, 64, &nodes, &n), 0);
        ck_assert_uint_eq(n, 0);
}
END_TEST

static void write_pool(const char *dir, const char *nr, const char *free_pages, const char *surplus) {
        g_autofree char *nr_path = g_strconcat(dir, "nr_hugepages", NULL);
        g_autofree char *free_path = g_strconcat(dir, "free_hugepages", NULL);
        g_autofree char *surplus_path = g_strconcat(dir, "surplus_hugepages", NULL);

        test_write_file(root, nr_path, nr);
        test_write_file(root, free_path, free_pages);
        test_write_file(root, surplus_path, surplus);
}

START_TEST(test_pool_read_write) {
        PoolState s;
        uint64_t got = 0;

        write_pool(POOL_2M, "12\n", "5\n", "1\n");
        write_pool(NODE_POOL_2M(1), "4\n", "4\n", "0\n");

        ck_assert_int_eq(sysfs_read_pool(root, 2048, POOL_NODE_ANY, &s), 0);
        ck_assert_uint_eq(s.nr, 12);
        ck_assert_uint_eq(s.free, 5);
        ck_assert_uint_eq(s.surplus, 1);

        ck_assert_int_eq(sysfs_read_pool(root, 2048, 1, &s), 0);
        ck_assert_uint_eq(s.nr, 4);
        ck_assert_uint_eq(s.free, 4);
        ck_assert_uint_eq(s.surplus, 0);

        ck_assert_int_eq(sysfs_write_pool(root, 2048, POOL_NODE_ANY, 4103, &got), 0);
        ck_assert_uint_eq(got, 4103);
        assert_file(POOL_2M "nr_hugepages", "4103");

        ck_assert_int_eq(sysfs_write_pool(root, 2048, 1, 0, &got), 0);
        ck_assert_uint_eq(got, 0);
        assert_file(NODE_POOL_2M(1) "nr_hugepages", "0");
        /* The per-node write did not touch the global pool. */
        assert_file(POOL_2M "nr_hugepages", "4103");

        ck_assert_int_eq(sysfs_read_pool(root, 1048576, POOL_NODE_ANY, &s), -ENOENT);
        ck_assert_int_eq(sysfs_write_pool(root, 1048576, POOL_NODE_ANY, 1, &got), -ENOENT);
        ck_assert(!exists("kernel/mm/hugepages/hugepages-1048576kB"));
        ck_assert_int_eq(sysfs_write_pool(root, 2048, 0, 1, &got), -ENOENT);
        ck_assert(!exists("devices/system/node/node0"));
        ck_assert_int_eq(sysfs_read_pool(root, 2048, -2, &s), -EINVAL);
        ck_assert_int_eq(sysfs_write_pool(root, 0, POOL_NODE_ANY, 1, &got), -EINVAL);
}
END_TEST

START_TEST(test_pool_garbage) {
        PoolState s = { .nr = 77 };

        write_pool(POOL_2M, "12\n", "-1\n", "0\n");
        ck_assert_int_eq(sysfs_read_pool(root, 2048, POOL_NODE_ANY, &s), -EBADMSG);
        write_pool(POOL_2M, "12 pages\n", "0\n", "0\n");
        ck_assert_int_eq(sysfs_read_pool(root, 2048, POOL_NODE_ANY, &s), -EBADMSG);
        write_pool(POOL_2M, "\n", "0\n", "0\n");
        ck_assert_int_eq(sysfs_read_pool(root, 2048, POOL_NODE_ANY, &s), -EBADMSG);
        ck_assert_uint_eq(s.nr, 77);
}
END_TEST

/* The pure parser sysfs_read_pool() uses: a number and at most one trailing newline. */
START_TEST(test_pool_parse) {
        uint64_t n = 77;

        ck_assert_int_eq(sysfs_parse_pool_number("12\n", &n), 0);
        ck_assert_uint_eq(n, 12);
        ck_assert_int_eq(sysfs_parse_pool_number("0", &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(sysfs_parse_pool_number("18446744073709551615\n", &n), 0);
        ck_assert_uint_eq(n, UINT64_MAX);
        n = 77;
        ck_assert_int_eq(sysfs_parse_pool_number("18446744073709551616\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("12\n\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number(" 12\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("-1\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("+1\n", &n), -EBADMSG);
        ck_assert_int_eq(sysfs_parse_pool_number("12 pages\n", &n), -EBADMSG);
        ck_assert_uint_eq(n, 77);
        ck_assert_int_eq(sysfs_parse_pool_number(NULL, &n), -EINVAL);
        ck_assert_int_eq(sysfs_parse_pool_number("1", NULL), -EINVAL);
}
END_TEST

START_TEST(test_pool_partial_allocation) {
        g_autofree char *written = NULL;
        uint64_t got = 0;
        int master;

        /* The kernel found only 7 of 10 pages and still reported success to write(). */
        master = fake_attribute_start(NODE_POOL_2M(1) "nr_hugepages", "7\n");
        ck_assert_int_eq(sysfs_write_pool(root, 2048, 1, 10, &got), 0);
        written = fake_attribute_finish(master);
        ck_assert_str_eq(written, "10");
        ck_assert_uint_eq(got, 7);
}
END_TEST

START_TEST(test_compact_memory) {
        ck_assert_int_eq(procfs_compact_memory(root), -ENOENT);
        ck_assert(!exists("sys/vm/compact_memory"));

        test_write_file(root, "sys/vm/compact_memory", "");
        ck_assert_int_eq(procfs_compact_memory(root), 0);
        assert_file("sys/vm/compact_memory", "1");
}
END_TEST

static int write_on_readonly_mount(void *userdata) {
        const char *dir = userdata;
        g_autofree char *thp = g_build_filename(dir, THP, NULL);
        g_autofree char *enabled = g_build_filename(dir, THP "enabled", NULL);
        KnobValue never;

        if (unshare(CLONE_NEWNS) < 0)
                return -errno;
        /* Keep the scratch mount out of the parent namespace. */
        if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
                return -errno;
        if (mount("thpd-test", dir, "tmpfs", 0, "mode=0755,size=1m") < 0)
                return -errno;
        if (g_mkdir_with_parents(thp, 0755) < 0 ||
            !g_file_set_contents(enabled, "always [madvise] never\n", -1, NULL))
                return -EIO;
        if (mount(NULL, dir, NULL, MS_REMOUNT | MS_RDONLY, NULL) < 0)
                return -errno;

        if (knob_value_from_string(KNOB_ENABLED, "never", &never) < 0)
                return -EINVAL;
        return sysfs_write_knob(dir, KNOB_ENABLED, never);
}

START_TEST(test_erofs) {
        int r = run_in_child(write_on_readonly_mount, root);

        ck_assert_msg(r == -EROFS, "expected -EROFS, got %s", strerror(-r));
}
END_TEST

static int write_as_nobody(void *userdata) {
        KnobValue v;
        int r;

        (void) userdata;
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(65534, 65534, 65534) < 0)
                return -errno;

        /* Reading a 0644 file is still allowed; only the write must fail. */
        r = sysfs_read_knob(root, KNOB_ENABLED, &v);
        if (r < 0)
                return r;
        return sysfs_write_knob(root, KNOB_ENABLED, 0);
}

START_TEST(test_eacces) {
        g_autofree char *path = root_path(THP "enabled");
        int r;

        test_write_file(root, THP "enabled", "always [madvise] never\n");
        /* mkdtemp() makes the root 0700; open it up so the file mode, not the directory, is what
         * refuses the write. */
        ck_assert_int_eq(chmod(root, 0755), 0);
        ck_assert_int_eq(chmod(path, 0644), 0);
        ck_assert_int_eq(chown(path, 0, 0), 0);

        r = run_in_child(write_as_nobody, NULL);
        ck_assert_msg(r == -EACCES, "expected -EACCES, got %s", strerror(-r));
        assert_file(THP "enabled", "always [madvise] never\n");
}
END_TEST

/* Whether this process may have a mount namespace of its own (CAP_SYS_ADMIN; root in a container
 * often may not), asked in a child so that this one keeps its own. */
static bool can_unshare_mounts(void) {
        int status;
        pid_t pid = fork();

        if (pid < 0)
                return false;
        if (pid == 0)
                _exit(unshare(CLONE_NEWNS) < 0);
        return waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

/* mTHP collapse is found by its counter file under any size, never by the kernel version; the
 * PMD size by hpage_pmd_size, else by the largest size present. */
START_TEST(test_probe_features) {
        const Knob k64 = KNOB_MTHP_FIRST + 3, k512 = KNOB_MTHP_FIRST + 6, k2m = KNOB_MTHP_FIRST + 8;
        bool present[_KNOB_MAX];
        SysfsThpFeatures f;

        test_write_file(root, THP "enabled", "always [madvise] never\n");
        test_write_file(root, THP "hugepages-64kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "hugepages-512kB/enabled", "always inherit madvise [never]\n");
        test_write_file(root, THP "hugepages-64kB/stats/anon_fault_alloc", "0\n");
        sysfs_probe_knobs(root, present);
        sysfs_probe_features(root, present, &f);
        ck_assert(!f.mthp_collapse);
        ck_assert(!f.shrink_underused);
        ck_assert_int_eq(f.pmd_knob, k512);

        test_write_file(root, THP "hugepages-64kB/stats/collapse_exceed_none_pte", "0\n");
        test_write_file(root, THP "shrink_underused", "1\n");
        test_write_file(root, THP "hpage_pmd_size", "2097152\n");
        sysfs_probe_features(root, present, &f);
        ck_assert(f.mthp_collapse);
        ck_assert(f.shrink_underused);
        ck_assert_int_eq(f.pmd_knob, k2m);
        ck_assert(present[k64]);
}
END_TEST

int main(int argc, char *argv[]) {
        const char *run = argc > 1 ? argv[1] : "";
        Suite *s = suite_create("sysfs");
        TCase *tc = tcase_create("scratch");

        tcase_add_checked_fixture(tc, setup, teardown);
        if (streq(run, "--root")) {
                /* A file the caller may not write: uid 65534 with a root-owned file. */
                if (geteuid() != 0)
                        return test_skip("dropping to uid 65534 needs root");
                tcase_add_test(tc, test_eacces);
        } else if (streq(run, "--mount")) {
                /* A read-only mount, in a mount namespace of the test's own. */
                if (!can_unshare_mounts())
                        return test_skip("a mount namespace needs CAP_SYS_ADMIN");
                tcase_add_test(tc, test_erofs);
        } else {
                tcase_add_test(tc, test_knob_path);
                tcase_add_test(tc, test_read_kinds);
                tcase_add_test(tc, test_write_read_back);
                tcase_add_test(tc, test_write_rejects_invalid_value);
                tcase_add_test(tc, test_missing_stays_missing);
                tcase_add_test(tc, test_garbage);
                tcase_add_test(tc, test_read_back_empty);
                tcase_add_test(tc, test_read_back_mismatch);
                tcase_add_test(tc, test_read_back_rerendered);
                tcase_add_test(tc, test_write_errno_comes_from_write);
                tcase_add_test(tc, test_fifo_never_blocks);
                tcase_add_test(tc, test_knob_files_kept);
                tcase_add_test(tc, test_pool_files_kept);
                tcase_add_test(tc, test_small_file_limits);
                tcase_add_test(tc, test_probe_partial_tree);
                tcase_add_test(tc, test_probe_features);
                tcase_add_test(tc, test_hugetlb_sizes);
                tcase_add_test(tc, test_pool_nodes);
                tcase_add_test(tc, test_pool_read_write);
                tcase_add_test(tc, test_pool_garbage);
                tcase_add_test(tc, test_pool_parse);
                tcase_add_test(tc, test_pool_partial_allocation);
                tcase_add_test(tc, test_compact_memory);
        }
        suite_add_tcase(s, tc);
        return test_run_suite(s);
}

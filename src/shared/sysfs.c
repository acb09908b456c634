/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <fcntl.h>
#include <glib.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <sys/stat.h>

#include "log.h"
#include "sysfs.h"
#include "util.h"

/* sysfs attributes are at most one page; the limit only guards against a path that is not what we
 * think it is (a huge file, /dev/zero). */

/* How long a read waits for its first byte. Only something that is not a regular file (a FIFO in
 * a broken or hostile --sysfs tree) ever makes read() wait; this bounds how long one can stall the
 * event loop. */
#define SMALL_FILE_WAIT_USEC (1 * G_USEC_PER_SEC)

/* Waits until fd is readable or the deadline (set on the first call) passes: 0 to read again,
 * -ETIMEDOUT when nothing came in time. */
static int wait_readable(int fd, int64_t *deadline) {
        struct pollfd p = { .fd = fd, .events = POLLIN };
        int64_t now = g_get_monotonic_time();
        int k;

        if (*deadline == 0)
                *deadline = now + SMALL_FILE_WAIT_USEC;
        if (now >= *deadline)
                return -ETIMEDOUT;

        k = poll(&p, 1, (int) ((*deadline - now + 999) / 1000));
        if (k < 0)
                return errno == EINTR ? 0 : -errno;
        return k == 0 ? -ETIMEDOUT : 0;
}

static int terminate_text(char *buf, size_t n, size_t *ret_len) {
        /* An embedded NUL would silently cut the text short for every parser downstream. */
        if (memchr(buf, '\0', n))
                return -EBADMSG;
        buf[n] = '\0';
        *ret_len = n;
        return 0;
}

/* Reads fd to EOF into buf (size bytes, the NUL included): -EFBIG when more would come. With
 * short_is_eof, a read that returns less than asked ends the file: true of a sysfs attribute,
 * which comes whole in one read, and of a regular file, and it saves a read per file. */
static int read_fd_into(int fd, char *buf, size_t size, bool short_is_eof, size_t *ret_len) {
        int64_t deadline = 0;
        size_t n = 0;
        int r;

        for (;;) {
                ssize_t k = read(fd, buf + n, size - n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno != EAGAIN)
                                return -errno;
                        /* Only a FIFO (or a device) with a writer that has not written gets here:
                         * wait a bounded time for the first data; once some came, "nothing more
                         * for now" ends the file. */
                        if (n > 0)
                                break;
                        r = wait_readable(fd, &deadline);
                        if (r < 0)
                                return r;
                        continue;
                }
                if (k == 0)
                        break;
                n += (size_t) k;
                if (n >= size)
                        return -EFBIG;
                if (short_is_eof)
                        break;
        }
        return terminate_text(buf, n, ret_len);
}

/* O_NONBLOCK: a FIFO must not hang the daemon in open() until a writer comes. It changes nothing
 * for a regular file, which every sysfs and procfs attribute is. */
#define READ_FLAGS (O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK)

int read_small_file(const char *path, char **ret) {
        return read_file_max(path, SMALL_FILE_MAX, ret);
}

int read_file_max(const char *path, size_t max, char **ret) {
        _cleanup_close_ int fd = -1;
        _cleanup_free_ char *buf = NULL;
        size_t n;
        char *shrunk;
        int r;

        if (!path || !ret)
                return -EINVAL;

        fd = open(path, READ_FLAGS);
        if (fd < 0)
                return -errno;

        /* st_size is useless here (sysfs says 4096, procfs 0), so read until EOF. */
        buf = malloc(max + 1);
        if (!buf)
                return -ENOMEM;
        r = read_fd_into(fd, buf, max + 1, false, &n);
        if (r < 0)
                return r;

        shrunk = realloc(buf, n + 1);
        if (shrunk)
                buf = shrunk;
        *ret = TAKE_PTR(buf);
        return 0;
}

int write_small_file(const char *path, const char *value) {
        _cleanup_close_ int fd = -1;
        size_t len;
        ssize_t k;

        if (!path || !value)
                return -EINVAL;
        len = strlen(value);

        /* Never O_CREAT: a knob this kernel lacks must stay missing. O_TRUNC is a no-op on sysfs
         * and procfs but keeps a plain file in a test tree from holding a tail of the old value.
         * O_NONBLOCK: a FIFO with no reader fails at once (ENXIO) instead of hanging the daemon,
         * and a full one fails the write() with EAGAIN; regular files ignore it, so the store
         * handler's errno still comes back from write(). */
        fd = open(path, O_WRONLY | O_CLOEXEC | O_NOCTTY | O_TRUNC | O_NONBLOCK);
        if (fd < 0)
                return -errno;

        /* One write() without stdio: the kernel checks the value in its store handler and its
         * errno (EINVAL...) is returned right here, not lost in a buffered flush. */
        do
                k = write(fd, value, len);
        while (k < 0 && errno == EINTR);
        if (k < 0)
                return -errno;
        if ((size_t) k != len)
                return -EIO;
        return 0;
}

char *sysfs_knob_path(const char *sysfs_root, Knob k) {
        if (!sysfs_root || !knob_info(k))
                return NULL;
        return g_build_filename(sysfs_root, SYSFS_THP_DIR, knob_name(k), NULL);
}

/* Reads one attribute (path relative to dirfd, or AT_FDCWD) into a small buffer on the caller's
 * stack: a knob's line of words or a page count. Text too long for it is no such value. */
static int read_attribute_at(int dirfd, const char *path, char *buf, size_t size) {
        _cleanup_close_ int fd = -1;
        size_t n;
        int r;

        fd = openat(dirfd, path, READ_FLAGS);
        if (fd < 0)
                return -errno;
        r = read_fd_into(fd, buf, size, true, &n);
        return r == -EFBIG ? -EBADMSG : r;
}

/* A knob's text is a line of words or a number; a buffer this small stays off the heap at every
 * read. */
#define KNOB_TEXT_MAX 256

static int parse_knob_text(Knob k, const char *text, KnobValue *ret) {
        KnobValue v;

        if (knob_value_from_sysfs(k, text, &v) < 0)
                return -EBADMSG;
        *ret = v;
        return 0;
}

int sysfs_read_knob(const char *sysfs_root, Knob k, KnobValue *ret) {
        g_autofree char *path = sysfs_knob_path(sysfs_root, k);
        char text[KNOB_TEXT_MAX];
        int r;

        if (!path || !ret)
                return -EINVAL;
        r = read_attribute_at(AT_FDCWD, path, text, sizeof text);
        if (r < 0)
                return r;
        return parse_knob_text(k, text, ret);
}

void knob_files_init(KnobFiles *f) {
        f->dir_fd = -1;
        FOREACH_KNOB(k)
                f->fd[k] = -1;
}

void knob_files_open(KnobFiles *f, const char *sysfs_root) {
        g_autofree char *path = NULL;

        knob_files_close(f);
        if (!sysfs_root)
                return;
        path = g_build_filename(sysfs_root, SYSFS_THP_DIR, NULL);
        f->dir_fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
}

void knob_files_close(KnobFiles *f) {
        FOREACH_KNOB(k)
                f->fd[k] = safe_close(f->fd[k]);
        f->dir_fd = safe_close(f->dir_fd);
}

/* Closes a kept file whose inode lost its last name (removed, or another file renamed over it):
 * it is not the attribute any more. */
static void drop_stale(int *kept) {
        struct stat st;

        if (*kept >= 0 && (fstat(*kept, &st) < 0 || st.st_nlink == 0))
                *kept = safe_close(*kept);
}

/* Reads the attribute into buf through the descriptor kept in *kept (drop_stale() first), or
 * opens path (relative to dirfd) when there is none. Anything but a regular file is read once
 * and not kept; after an error the next read opens it afresh (the error may be the file's). */
static int read_kept_attribute(int *kept, int dirfd, const char *path, char *buf, size_t size) {
        struct stat st;
        size_t len;
        ssize_t n;
        int fd;

        if (*kept < 0) {
                fd = openat(dirfd, path, READ_FLAGS);
                if (fd < 0)
                        return -errno;
                if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                        _cleanup_close_ int once = fd;
                        int r = read_fd_into(once, buf, size, true, &len);

                        return r == -EFBIG ? -EBADMSG : r;
                }
                *kept = fd;
        }
        do
                n = pread(*kept, buf, size, 0);
        while (n < 0 && errno == EINTR);
        if (n < 0 || (size_t) n >= size || terminate_text(buf, (size_t) n, &len) < 0) {
                int r = n < 0 ? -errno : -EBADMSG;

                *kept = safe_close(*kept);
                return r;
        }
        return 0;
}

int knob_files_read(KnobFiles *f, const char *sysfs_root, Knob k, KnobValue *ret) {
        char text[KNOB_TEXT_MAX];
        int r;

        if (!knob_info(k) || !ret)
                return -EINVAL;
        if (f->dir_fd < 0)
                return sysfs_read_knob(sysfs_root, k, ret);

        drop_stale(&f->fd[k]);
        r = read_kept_attribute(&f->fd[k], f->dir_fd, knob_name(k), text, sizeof text);
        if (r < 0)
                return r;
        r = parse_knob_text(k, text, ret);
        if (r < 0)
                f->fd[k] = safe_close(f->fd[k]);
        return r;
}

static bool knob_value_is_valid(Knob k, KnobValue v) {
        const KnobInfo *info = knob_info(k);

        if (v < 0)
                return false;
        if (info->kind == KNOB_KIND_NUMBER)
                return (uint64_t) v >= info->min && (uint64_t) v <= info->max;
        return knob_word(info, v) != NULL;
}

static bool writes_refused;

void sysfs_refuse_writes(void) {
        writes_refused = true;
}

int sysfs_write_knob(const char *sysfs_root, Knob k, KnobValue v) {
        g_autofree char *path = sysfs_knob_path(sysfs_root, k);
        char buf[24], got_buf[24];
        const char *text;
        KnobValue got;
        int r;

        if (!path || !knob_value_is_valid(k, v))
                return -EINVAL;

        if (writes_refused)
                return -EROFS;
        text = knob_value_to_string(k, v, buf);
        r = write_small_file(path, text);
        if (r < 0)
                return r;

        r = sysfs_read_knob(sysfs_root, k, &got);
        if (r < 0)
                return r;
        if (got != v) {
                /* The caller logs the failure; only here do we still know what the kernel said. */
                log_debug("%s: wrote %s, kernel reports %s", path, text, knob_value_to_string(k, got, got_buf));
                return -EIO;
        }
        return 0;
}

void sysfs_probe_knobs(const char *sysfs_root, bool present[_KNOB_MAX]) {
        FOREACH_KNOB(k) {
                g_autofree char *path = sysfs_knob_path(sysfs_root, k);
                struct stat st;

                present[k] = path && stat(path, &st) >= 0 && S_ISREG(st.st_mode);
        }
}

static bool thp_file_exists(const char *sysfs_root, const char *name) {
        g_autofree char *path = g_build_filename(sysfs_root, SYSFS_THP_DIR, name, NULL);
        struct stat st;

        return stat(path, &st) >= 0 && S_ISREG(st.st_mode);
}

void sysfs_probe_features(const char *sysfs_root, const bool present[_KNOB_MAX], SysfsThpFeatures *ret) {
        g_autofree char *pmd_path = g_build_filename(sysfs_root, SYSFS_THP_DIR, "hpage_pmd_size", NULL);
        _cleanup_free_ char *pmd_text = NULL;
        SysfsThpFeatures f = { .pmd_knob = KNOB_ENABLED };
        uint64_t bytes;

        for (unsigned i = 0; i < KNOB_MTHP_SLOTS; i++) {
                Knob k = KNOB_MTHP_FIRST + (Knob) i;
                g_autofree char *stat_name = g_strdup_printf("hugepages-%" PRIu64 "kB/stats/collapse_exceed_none_pte",
                                                             knob_mthp_size_kb(k));

                if (!f.mthp_collapse)
                        f.mthp_collapse = thp_file_exists(sysfs_root, stat_name);
                if (present[k])
                        f.pmd_knob = k;
        }
        f.shrink_underused = thp_file_exists(sysfs_root, "shrink_underused");
        /* The file is in bytes; a size the table has no knob for leaves the fallback. */
        if (read_small_file(pmd_path, &pmd_text) >= 0 && sysfs_parse_pool_number(pmd_text, &bytes) >= 0 &&
            bytes % 1024 == 0)
                (void) knob_mthp_from_size_kb(bytes / 1024, &f.pmd_knob);
        *ret = f;
}

/* Parses "<prefix><digits><suffix>" exactly: no sign, no leading zero, no trailing junk, so that
 * no two names can alias the same number. */
static int parse_decorated_number(const char *name, const char *prefix, const char *suffix, uint64_t *ret) {
        size_t plen = strlen(prefix), slen = strlen(suffix), nlen = strlen(name), dlen;
        char digits[24];

        if (nlen <= plen + slen || strncmp(name, prefix, plen) != 0 || !streq(name + nlen - slen, suffix))
                return -EINVAL;

        dlen = nlen - plen - slen;
        if (dlen >= sizeof digits)
                return -ERANGE;
        memcpy(digits, name + plen, dlen);
        digits[dlen] = '\0';

        if (strspn(digits, "0123456789") != dlen || (digits[0] == '0' && dlen > 1))
                return -EINVAL;
        return parse_u64(digits, ret);
}

static bool is_dir_at(DIR *d, const struct dirent *de) {
        struct stat st;

        if (de->d_type == DT_DIR)
                return true;
        if (de->d_type != DT_UNKNOWN && de->d_type != DT_LNK)
                return false;
        return fstatat(dirfd(d), de->d_name, &st, 0) >= 0 && S_ISDIR(st.st_mode);
}

static gint compare_u64(gconstpointer a, gconstpointer b) {
        uint64_t x = *(const uint64_t *) a, y = *(const uint64_t *) b;

        return x < y ? -1 : x > y;
}

static gint compare_int(gconstpointer a, gconstpointer b) {
        int x = *(const int *) a, y = *(const int *) b;

        return x < y ? -1 : x > y;
}

int sysfs_list_hugetlb_sizes(const char *sysfs_root, uint64_t **ret_sizes, size_t *ret_n) {
        g_autofree char *path = NULL;
        g_autoptr(GArray) sizes = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n;

        if (!sysfs_root || !ret_sizes || !ret_n)
                return -EINVAL;

        path = g_build_filename(sysfs_root, SYSFS_HUGETLB_DIR, NULL);
        d = opendir(path);
        if (!d)
                return -errno;

        sizes = g_array_new(false, false, sizeof(uint64_t));
        /* errno is reset per entry so that a NULL from readdir() can tell the end from a failure. */
        for (errno = 0; (de = readdir(d)); errno = 0) {
                uint64_t kb;

                if (parse_decorated_number(de->d_name, "hugepages-", "kB", &kb) >= 0 && kb > 0 &&
                    is_dir_at(d, de))
                        g_array_append_val(sizes, kb);
        }
        if (errno != 0)
                return -errno;

        g_array_sort(sizes, compare_u64);
        n = sizes->len;
        *ret_sizes = (uint64_t *) (void *) g_array_free(TAKE_PTR(sizes), n == 0);
        *ret_n = n;
        return 0;
}

int sysfs_list_pool_nodes(const char *sysfs_root, uint64_t page_size_kb, int **ret_nodes, size_t *ret_n) {
        g_autofree char *path = NULL, *leaf = NULL;
        g_autoptr(GArray) nodes = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;
        size_t n;

        if (!sysfs_root || page_size_kb == 0 || !ret_nodes || !ret_n)
                return -EINVAL;

        path = g_build_filename(sysfs_root, SYSFS_NODE_DIR, NULL);
        d = opendir(path);
        if (!d)
                return -errno;

        leaf = g_strdup_printf("hugepages/hugepages-%" PRIu64 "kB", page_size_kb);
        nodes = g_array_new(false, false, sizeof(int));
        for (errno = 0; (de = readdir(d)); errno = 0) {
                g_autofree char *pool = NULL;
                struct stat st;
                uint64_t node;

                if (parse_decorated_number(de->d_name, "node", "", &node) < 0 || node > INT_MAX)
                        continue;
                pool = g_build_filename(de->d_name, leaf, NULL);
                if (fstatat(dirfd(d), pool, &st, 0) >= 0 && S_ISDIR(st.st_mode)) {
                        int v = (int) node;

                        g_array_append_val(nodes, v);
                }
        }
        if (errno != 0)
                return -errno;

        g_array_sort(nodes, compare_int);
        n = nodes->len;
        *ret_nodes = (int *) (void *) g_array_free(TAKE_PTR(nodes), n == 0);
        *ret_n = n;
        return 0;
}

static char *pool_file_path(const char *sysfs_root, uint64_t page_size_kb, int node, const char *file) {
        g_autofree char *leaf = NULL, *node_name = NULL;

        if (!sysfs_root || page_size_kb == 0 || node < POOL_NODE_ANY)
                return NULL;

        leaf = g_strdup_printf("hugepages-%" PRIu64 "kB", page_size_kb);
        if (node == POOL_NODE_ANY)
                return g_build_filename(sysfs_root, SYSFS_HUGETLB_DIR, leaf, file, NULL);

        node_name = g_strdup_printf("node%d", node);
        return g_build_filename(sysfs_root, SYSFS_NODE_DIR, node_name, "hugepages", leaf, file, NULL);
}

char *sysfs_pool_path(const char *sysfs_root, uint64_t page_size_kb, int node) {
        return pool_file_path(sysfs_root, page_size_kb, node, "nr_hugepages");
}

int sysfs_parse_pool_number(const char *content, uint64_t *ret) {
        g_autofree char *number = NULL;
        size_t len;

        if (!content || !ret)
                return -EINVAL;

        len = strlen(content);
        if (len > 0 && content[len - 1] == '\n')
                len--;
        number = g_strndup(content, len);
        return parse_u64(number, ret) < 0 ? -EBADMSG : 0;
}

static int read_pool_number(const char *sysfs_root, uint64_t page_size_kb, int node, const char *file,
                            uint64_t *ret) {
        g_autofree char *path = pool_file_path(sysfs_root, page_size_kb, node, file);
        char text[64];
        int r;

        if (!path)
                return -EINVAL;
        r = read_attribute_at(AT_FDCWD, path, text, sizeof text);
        if (r < 0)
                return r;
        return sysfs_parse_pool_number(text, ret);
}

static const char *const pool_counter_files[_POOL_COUNTER_MAX] = {
        [POOL_COUNTER_NR] = "nr_hugepages",
        [POOL_COUNTER_FREE] = "free_hugepages",
        [POOL_COUNTER_SURPLUS] = "surplus_hugepages",
};

void pool_files_init(PoolFiles *f) {
        *f = (PoolFiles) {};
}

void pool_files_close(PoolFiles *f) {
        for (size_t i = 0; i < f->n; i++)
                for (size_t c = 0; c < _POOL_COUNTER_MAX; c++)
                        f->kept[i].fd[c] = safe_close(f->kept[i].fd[c]);
        f->n = 0;
}

static int *pool_counter_fd(PoolFiles *f, uint64_t page_size_kb, int node, PoolCounter c) {
        for (size_t i = 0; i < f->n; i++)
                if (f->kept[i].page_size_kb == page_size_kb && f->kept[i].node == node)
                        return &f->kept[i].fd[c];
        if (f->n >= POOL_FILES_MAX)
                return NULL;
        f->kept[f->n] = (PoolFile) { .page_size_kb = page_size_kb, .node = node };
        for (size_t i = 0; i < _POOL_COUNTER_MAX; i++)
                f->kept[f->n].fd[i] = -1;
        return &f->kept[f->n++].fd[c];
}

static int pool_files_read_counter(PoolFiles *f, const char *sysfs_root, uint64_t page_size_kb, int node,
                                   PoolCounter c, uint64_t *ret) {
        g_autofree char *path = NULL;
        int *kept = pool_counter_fd(f, page_size_kb, node, c);
        char text[64];
        int r;

        if (!kept)
                return read_pool_number(sysfs_root, page_size_kb, node, pool_counter_files[c], ret);
        /* The path is built only to open the file. */
        drop_stale(kept);
        if (*kept < 0) {
                path = pool_file_path(sysfs_root, page_size_kb, node, pool_counter_files[c]);
                if (!path)
                        return -EINVAL;
        }
        r = read_kept_attribute(kept, AT_FDCWD, path, text, sizeof text);
        if (r < 0)
                return r;
        r = sysfs_parse_pool_number(text, ret);
        if (r < 0)
                *kept = safe_close(*kept);
        return r;
}

int pool_files_read(PoolFiles *f, const char *sysfs_root, uint64_t page_size_kb, int node, PoolState *ret) {
        PoolState s;
        int r;

        if (!ret)
                return -EINVAL;
        r = pool_files_read_counter(f, sysfs_root, page_size_kb, node, POOL_COUNTER_NR, &s.nr);
        if (r >= 0)
                r = pool_files_read_counter(f, sysfs_root, page_size_kb, node, POOL_COUNTER_FREE, &s.free);
        if (r >= 0)
                r = pool_files_read_counter(f, sysfs_root, page_size_kb, node, POOL_COUNTER_SURPLUS, &s.surplus);
        if (r < 0)
                return r;
        *ret = s;
        return 0;
}

int pool_files_read_pages(PoolFiles *f, const char *sysfs_root, uint64_t page_size_kb, int node, uint64_t *ret) {
        return pool_files_read_counter(f, sysfs_root, page_size_kb, node, POOL_COUNTER_NR, ret);
}

int sysfs_read_pool(const char *sysfs_root, uint64_t page_size_kb, int node, PoolState *ret) {
        PoolFiles once;
        int r;

        pool_files_init(&once);
        r = pool_files_read(&once, sysfs_root, page_size_kb, node, ret);
        pool_files_close(&once);
        return r;
}

int sysfs_write_pool(const char *sysfs_root, uint64_t page_size_kb, int node, uint64_t pages,
                     uint64_t *ret_pages) {
        g_autofree char *path = pool_file_path(sysfs_root, page_size_kb, node, "nr_hugepages");
        char value[24];
        uint64_t got;
        int r;

        if (!path || !ret_pages)
                return -EINVAL;

        if (writes_refused)
                return -EROFS;
        snprintf(value, sizeof value, "%" PRIu64, pages);
        r = write_small_file(path, value);
        if (r < 0)
                return r;

        r = read_pool_number(sysfs_root, page_size_kb, node, "nr_hugepages", &got);
        if (r < 0)
                return r;

        *ret_pages = got;
        return 0;
}

int procfs_compact_memory(const char *procfs_root) {
        g_autofree char *path = NULL;

        if (!procfs_root)
                return -EINVAL;

        path = g_build_filename(procfs_root, "sys", "vm", "compact_memory", NULL);
        return write_small_file(path, "1");
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <glib.h>
#include <sys/stat.h>

#include "runtime-file.h"
#include "sysfs.h"
#include "unit-record.h"
#include "util.h"

/* One write(): these files are small, and a short write is an error, not a retry. */
static int write_all(int fd, const char *content) {
        size_t len = strlen(content);
        ssize_t n;

        n = write(fd, content, len);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        return 0;
}

/* exact_mode 0: 0644 less the umask. */
static int write_replacing(const char *path, const char *content, bool sync, mode_t exact_mode) {
        g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
        _cleanup_close_ int fd = -1;
        int r;

        /* A fresh file, never one that is there already: a symlink planted under the temporary
         * name in a directory others can write must not redirect the write. */
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0 && errno == EEXIST) {
                if (unlink(tmp) < 0 && errno != ENOENT)
                        return -errno;
                fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0644);
        }
        if (fd < 0)
                return -errno;
        if (exact_mode != 0 && fchmod(fd, exact_mode) < 0)
                r = -errno;
        else
                r = write_all(fd, content);
        if (r >= 0 && sync && fsync(fd) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

int runtime_file_write(const char *dir, const char *name, const char *content) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        int r;

        /* The directory is there but for the first write (or after an admin removed it): the
         * unit record is rewritten at every start a policy matches. */
        r = write_replacing(path, content, true, 0);
        if (r != -ENOENT)
                return r;
        if (g_mkdir_with_parents(dir, 0755) < 0)
                return -errno;
        return write_replacing(path, content, true, 0);
}

int runtime_file_append(const char *dir, const char *name, const char *content) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        _cleanup_close_ int fd = -1;
        int r;

        fd = open(path, O_WRONLY | O_APPEND | O_CLOEXEC | O_NOFOLLOW);
        if (fd < 0)
                return -errno;
        r = write_all(fd, content);
        if (r < 0)
                return r;
        if (fsync(fd) < 0)
                return -errno;
        return 0;
}

int file_replace(const char *path, const char *content, mode_t mode) {
        return write_replacing(path, content, false, mode);
}

int runtime_file_remove(const char *dir, const char *name) {
        g_autofree char *path = g_build_filename(dir, name, NULL);

        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

int unit_record_load(const char *runtime_dir, GHashTable *started, GHashTable *needs_restart) {
        g_autofree char *path = g_build_filename(runtime_dir, UNIT_RECORD_FILE, NULL);
        _cleanup_free_ char *content = NULL;
        int r;

        r = read_file_max(path, UNIT_RECORD_MAX, &content);
        if (r < 0)
                return r;
        return unit_record_parse(content, started, needs_restart);
}

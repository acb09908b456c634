/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <glib.h>
#include <sys/stat.h>

#include "runtime-file.h"
#include "util.h"

int runtime_file_write(const char *dir, const char *name, const char *content) {
        g_autofree char *path = g_build_filename(dir, name, NULL);
        g_autofree char *tmp = g_strconcat(path, ".tmp", NULL);
        _cleanup_close_ int fd = -1;
        size_t len = strlen(content);
        ssize_t n;

        if (g_mkdir_with_parents(dir, 0755) < 0)
                return -errno;

        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        if (fd < 0)
                return -errno;
        n = write(fd, content, len);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;
        if (fsync(fd) < 0)
                return -errno;
        if (rename(tmp, path) < 0)
                return -errno;
        return 0;
}

int runtime_file_remove(const char *dir, const char *name) {
        g_autofree char *path = g_build_filename(dir, name, NULL);

        if (unlink(path) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

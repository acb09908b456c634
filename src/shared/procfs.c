/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <dirent.h>
#include <glib.h>
#include <stddef.h>

#include "procfs.h"
#include "sysfs.h"
#include "util.h"


/* The same reader as for sysfs attributes (64 KiB at most, no embedded NUL), so that a FIFO in a
 * broken --procfs tree cannot hang the daemon in open() or read() either. Free with free(). */
int procfs_read_file(const char *procfs_root, const char *relpath, char **ret) {
        g_autofree char *path = g_build_filename(procfs_root, relpath, NULL);

        return read_small_file(path, ret);
}

int procfs_read_pid_file(const char *procfs_root, pid_t pid, const char *file, char **ret) {
        g_autofree char *relpath = NULL;

        if (pid <= 0)
                return -EINVAL;
        relpath = g_strdup_printf("%d/%s", (int) pid, file);
        return procfs_read_file(procfs_root, relpath, ret);
}

int procfs_read_vmstat(const char *procfs_root, VmStat *ret) {
        _cleanup_free_ char *content = NULL;
        int r;

        r = procfs_read_file(procfs_root, "vmstat", &content);
        if (r < 0)
                return r;
        return procfs_parse_vmstat(content, ret);
}

int procfs_read_cmdline_thp(const char *procfs_root, const bool *present, CmdlineThp *ret) {
        _cleanup_free_ char *content = NULL;
        int r;

        r = procfs_read_file(procfs_root, "cmdline", &content);
        if (r < 0)
                return r;
        return cmdline_parse_thp(content, present, ret);
}

int procfs_read_pressure(const char *procfs_root, const char *resource, Pressure *ret) {
        g_autofree char *relpath = NULL;
        _cleanup_free_ char *content = NULL;
        int r;

        if (!resource || strchr(resource, '/'))
                return -EINVAL;

        relpath = g_strconcat("pressure/", resource, NULL);
        r = procfs_read_file(procfs_root, relpath, &content);
        if (r < 0)
                return r;
        return procfs_parse_pressure(content, ret);
}

int procfs_read_pid_stat(const char *procfs_root, pid_t pid, ProcStat *ret) {
        _cleanup_free_ char *content = NULL;
        ProcStat s;
        int r;

        r = procfs_read_pid_file(procfs_root, pid, "stat", &content);
        if (r < 0)
                return r;
        r = procfs_parse_pid_stat(content, &s);
        if (r < 0)
                return r;
        /* A stat file that names another pid is not the task we asked for. */
        if (s.pid != pid)
                return -EBADMSG;

        *ret = s;
        return 0;
}


int procfs_read_thp_status(const char *procfs_root, pid_t pid, ProcThpStatus *ret) {
        _cleanup_free_ char *content = NULL;
        int r;

        r = procfs_read_pid_file(procfs_root, pid, "status", &content);
        if (r < 0)
                return r;
        return procfs_parse_thp_status(content, ret);
}

void procfs_kthreads_done(ProcfsKthreads *k) {
        if (!k)
                return;
        g_free(k->kcompactd);
        *k = (ProcfsKthreads) {};
}


static gint compare_pid(gconstpointer a, gconstpointer b) {
        pid_t x = *(const pid_t *) a, y = *(const pid_t *) b;

        return (x > y) - (x < y);
}

int procfs_find_kthreads(const char *procfs_root, ProcfsKthreads *ret) {
        g_autoptr(GArray) kcompactd = g_array_new(false, false, sizeof(pid_t));
        DIR *d;
        struct dirent *de;
        pid_t khugepaged = 0;
        size_t n;
        int r = 0;

        d = opendir(procfs_root);
        if (!d)
                return -errno;

        for (errno = 0; (de = readdir(d)); errno = 0) {
                ProcStat s;
                uint64_t pid;

                if (!string_is_digits(de->d_name) || parse_u64(de->d_name, &pid) < 0 || pid > INT32_MAX)
                        continue;

                /* Processes come and go while we scan; one that vanished or that we cannot read is
                 * not one of the kernel threads we look for. */
                if (procfs_read_pid_stat(procfs_root, (pid_t) pid, &s) < 0)
                        continue;
                if (!(s.flags & PROC_FLAG_KTHREAD))
                        continue;

                if (procfs_is_khugepaged_comm(s.comm))
                        khugepaged = s.pid;
                else if (procfs_is_kcompactd_comm(s.comm))
                        g_array_append_val(kcompactd, s.pid);
        }
        if (errno != 0)
                r = -errno;
        closedir(d);
        if (r < 0)
                return r;

        g_array_sort(kcompactd, compare_pid);
        n = kcompactd->len;
        *ret = (ProcfsKthreads) {
                .khugepaged = khugepaged,
                .n_kcompactd = n,
                .kcompactd = (pid_t *) (void *) g_array_free(TAKE_PTR(kcompactd), false),
        };
        return 0;
}

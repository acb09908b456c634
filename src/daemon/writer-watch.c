/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <stdlib.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "drift.h"
#include "procfs-parse.h"
#include "sysfs.h"
#include "util.h"
#include "writer-watch.h"

struct WriterWatch {
        int fd;
        sd_event_source *source;
        WriterSeen seen;
        void *userdata;
};

static int on_fanotify(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        WriterWatch *w = userdata;
        union {
                struct fanotify_event_metadata meta;
                char bytes[4096];
        } buf;
        ssize_t n;

        for (;;) {
                const struct fanotify_event_metadata *e = &buf.meta;

                n = read(fd, buf.bytes, sizeof(buf.bytes));
                if (n <= 0)
                        return 0;
                for (; FAN_EVENT_OK(e, n); e = FAN_EVENT_NEXT(e, n)) {
                        struct stat st;

                        if (e->vers != FANOTIFY_METADATA_VERSION || e->fd < 0)
                                continue;
                        if (fstat(e->fd, &st) >= 0 && (e->mask & FAN_MODIFY))
                                w->seen(st.st_dev, st.st_ino, e->pid, w->userdata);
                        close(e->fd);
                }
        }
}

int writer_watch_new(sd_event *event, int64_t priority, WriterSeen seen, void *userdata, WriterWatch **ret) {
        g_autofree WriterWatch *w = g_new0(WriterWatch, 1);
        int r;

        w->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_CLOEXEC | O_LARGEFILE);
        if (w->fd < 0)
                return -errno;
        w->seen = seen;
        w->userdata = userdata;
        r = sd_event_add_io(event, &w->source, w->fd, EPOLLIN, on_fanotify, w);
        if (r >= 0)
                r = sd_event_source_set_priority(w->source, priority);
        if (r < 0) {
                sd_event_source_disable_unref(w->source);
                close(w->fd);
                return r;
        }
        *ret = g_steal_pointer(&w);
        return 0;
}

WriterWatch *writer_watch_free(WriterWatch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->source);
        close(w->fd);
        g_free(w);
        return NULL;
}

int writer_watch_add(WriterWatch *w, const char *path) {
        if (fanotify_mark(w->fd, FAN_MARK_ADD, FAN_MODIFY, AT_FDCWD, path) < 0)
                return -errno;
        return 0;
}

void writer_watch_flush(WriterWatch *w) {
        if (w)
                (void) on_fanotify(w->source, w->fd, EPOLLIN, w);
}

static char *user_name(uid_t uid) {
        struct passwd pw, *found = NULL;
        char buf[1024];

        if (getpwuid_r(uid, &pw, buf, sizeof(buf), &found) == 0 && found)
                return g_strdup(found->pw_name);
        return g_strdup_printf("uid %u", (unsigned) uid);
}

/* The writer's pid is the kernel's, whatever --procfs says: always the real /proc. */
int writer_describe(pid_t pid, char **ret_unit, bool *ret_cgroup_read, char **ret_text) {
        g_autofree char *dir = g_strdup_printf("/proc/%d", (int) pid);
        g_autofree char *stat_path = g_build_filename(dir, "stat", NULL);
        g_autofree char *cgroup_path = g_build_filename(dir, "cgroup", NULL);
        _cleanup_free_ char *stat_text = NULL, *cgroup = NULL;
        g_autofree char *unit = NULL, *user = NULL;
        ProcStat ps;
        struct stat st;
        bool cgroup_read = false;
        int r;

        if (stat(dir, &st) < 0)
                return -errno;
        r = read_small_file(stat_path, &stat_text);
        if (r < 0)
                return r;
        r = procfs_parse_pid_stat(stat_text, &ps);
        if (r < 0)
                return r;
        if (read_small_file(cgroup_path, &cgroup) >= 0) {
                r = procfs_parse_cgroup_unit(cgroup, &unit);
                cgroup_read = r >= 0 || r == -ENOENT;
        }
        user = user_name(st.st_uid);
        *ret_text = drift_describe_process(unit, user, ps.comm, (int) pid);
        *ret_unit = g_steal_pointer(&unit);
        *ret_cgroup_read = cgroup_read;
        return 0;
}

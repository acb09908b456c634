/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>
#include <systemd/sd-event.h>

/* The process that writes a watched file, from fanotify (FAN_MODIFY reports the writer's pid).
 * It needs CAP_SYS_ADMIN, which thpd.service does not have: an admin opts in with a drop-in
 * (docs/drift.md). Without it writer_watch_new() fails with -EPERM and thpd names writers from
 * unit jobs and TuneD's signal alone. */

typedef struct WriterWatch WriterWatch;

/* A watched file (by device and inode) was written by pid. */
typedef void (*WriterSeen)(dev_t dev, ino_t ino, pid_t pid, void *userdata);

int writer_watch_new(sd_event *event, int64_t priority, WriterSeen seen, void *userdata, WriterWatch **ret);
WriterWatch *writer_watch_free(WriterWatch *w);
int writer_watch_add(WriterWatch *w, const char *path);
/* Hands on the events queued now. inotify wakes the loop a moment before fanotify's event of the
 * same write is queued, and a look queued meanwhile runs without polling again. */
void writer_watch_flush(WriterWatch *w);

/* The unit pid runs in (NULL: none, or its cgroup unreadable), whether its cgroup was read (then
 * NULL means it runs outside any unit), and how to name it ("root in session 4: bash, pid 1234"),
 * read from /proc now: a writer that already exited gives -ESRCH or -ENOENT. */
int writer_describe(pid_t pid, char **ret_unit, bool *ret_cgroup_read, char **ret_text);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <sys/types.h>

/* Records thpd keeps in its runtime directory for the next instance (after a crash or a
 * restart), and other files it replaces whole. */

/* Writes dir/name atomically (temporary file, fsync, rename), creating dir: a crash mid-write
 * leaves the old record. */
int runtime_file_write(const char *dir, const char *name, const char *content);
/* Appends content to dir/name with one write, then fsync; never creates it (-ENOENT: write it
 * whole first). A short write gives -EIO: the file then ends in a partial line. */
int runtime_file_append(const char *dir, const char *name, const char *content);
/* Succeeds when the file is already gone. */
int runtime_file_remove(const char *dir, const char *name);

/* Replaces path with content by renaming a temporary file (path + ".tmp") over it, so that a
 * reader sees the old or the new content, never a part. The file gets exactly mode, whatever
 * the umask. No fsync: for files thpd writes again at every start. The directory must exist. */
int file_replace(const char *path, const char *content, mode_t mode);

/* The unit record (unit-record.h) in runtime_dir. */
/* -ENOENT when there is no record. */
int unit_record_load(const char *runtime_dir, GHashTable *started, GHashTable *needs_restart);

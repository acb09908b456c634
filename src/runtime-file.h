/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Records thpd keeps in its runtime directory for the next instance (after a crash or a
 * restart). */

/* Writes dir/name atomically (temporary file, fsync, rename), creating dir: a crash mid-write
 * leaves the old record. */
int runtime_file_write(const char *dir, const char *name, const char *content);
/* Succeeds when the file is already gone. */
int runtime_file_remove(const char *dir, const char *name);

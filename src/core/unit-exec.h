/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>

/* What thpd-generator needs from a service's unit files, and the ExecStart= line that runs the
 * same command through thpd-exec. Pure text functions: no file is read here. */

typedef struct UnitExec {
        GPtrArray *exec_start; /* char*: the effective ExecStart= values, raw, in order */
        bool no_exec_paths;    /* NoExecPaths= is set: thpd-exec needs an ExecPaths= entry */
} UnitExec;

void unit_exec_init(UnitExec *u);
void unit_exec_done(UnitExec *u);

/* Applies one unit file or drop-in, in load order: each ExecStart= in [Service] appends, an
 * empty one resets the list; the same for NoExecPaths=. Follows systemd's syntax: comments,
 * continuation lines ending in a backslash, blanks around '='. */
void unit_exec_apply_text(UnitExec *u, const char *text);

/* The ExecStart= value that runs "value" (one ExecStart= value as written, specifiers and
 * variables untouched) under "helper --thp=MODE --": the prefixes (-, @, :, +, !, !!) stay in
 * front, where systemd reads them; for '@' the argv[0] goes to the helper as --argv0. -EINVAL
 * for a value with no command. */
int exec_start_wrap(const char *value, const char *helper, const char *mode, char **ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>

#include "unit-exec.h"

/* Unit files as systemd finds them on its unit search path, for thpd-generator. */

/* The directories systemd loads units from, highest precedence first, without the generator
 * output directories: other generators are writing them while this one runs, and thpd's own
 * drop-ins must not be read back. $THPD_UNIT_PATH (colon-separated) replaces it for tests;
 * otherwise "user" picks the per-user manager's path. */
char **unit_search_path(bool user);

/* Names of the service unit files in the search path (each once, sorted): templates appear as
 * "foo@.service", instances only when a file of that name exists. */
GPtrArray *unit_files_list_services(char *const *search_path);

/* Loads the unit's fragment (for an instance without a file of its own, its template's) and
 * drop-ins (service.d/, foo-.service.d/ prefixes, the template's, its own; same name in a
 * higher directory wins, applied in file name order). -ENOENT when there is no fragment,
 * -ERFKILL when it is masked (a symlink to /dev/null). The caller frees ret with unit_exec_done(). */
int unit_files_load_exec(char *const *search_path, const char *unit, UnitExec *ret, char **ret_fragment);

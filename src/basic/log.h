/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <syslog.h>

#include "util.h"

/* Messages go to stderr. Under systemd (JOURNAL_STREAM set) each line carries a "<N>" syslog
 * prefix, so journald records the right priority without a second logging path. */

void log_set_max_level(int level);
int log_get_max_level(void);
/* Accepts "emerg".."debug" or 0..7; returns the level or -EINVAL. */
int log_level_from_string(const char *s);

/* Logs and returns -abs(error) (or 0 when error is 0), so callers can "return log_..._errno(r, ...)".
 * %m in the format prints the error's message (strerror(abs(error))), as in systemd. */
int log_internal(int level, int error, const char *format, ...) _printf_(3, 4);

#define log_full_errno(level, error, ...) log_internal((level), (error), __VA_ARGS__)
#define log_full(level, ...) ((void) log_internal((level), 0, __VA_ARGS__))

#define log_debug(...)   log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(error, ...)   log_full_errno(LOG_DEBUG, (error), __VA_ARGS__)
#define log_info_errno(error, ...)    log_full_errno(LOG_INFO, (error), __VA_ARGS__)
#define log_warning_errno(error, ...) log_full_errno(LOG_WARNING, (error), __VA_ARGS__)
#define log_error_errno(error, ...)   log_full_errno(LOG_ERR, (error), __VA_ARGS__)

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <strings.h>

#include "log.h"

static int max_level = LOG_INFO;

void log_set_max_level(int level) {
        max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        static const char *const names[] = {
                "emerg", "alert", "crit", "err", "warning", "notice", "info", "debug",
        };
        uint64_t n;

        for (size_t i = 0; i < ELEMENTSOF(names); i++)
                if (strcasecmp(s, names[i]) == 0)
                        return (int) i;
        if (strcasecmp(s, "error") == 0)
                return LOG_ERR;
        if (strcasecmp(s, "warn") == 0)
                return LOG_WARNING;
        if (parse_u64(s, &n) >= 0 && n <= LOG_DEBUG)
                return (int) n;
        return -EINVAL;
}

static bool stderr_is_journal(void) {
        static int cached = -1;

        if (cached < 0)
                cached = getenv("JOURNAL_STREAM") != NULL;
        return cached;
}

int log_internal(int level, int error, const char *format, ...) {
        int saved_errno = errno;
        va_list ap;

        if (error < 0)
                error = -error;

        if (level <= max_level) {
                char buf[2048];

                va_start(ap, format);
                vsnprintf(buf, sizeof buf, format, ap);
                va_end(ap);

                if (stderr_is_journal())
                        fprintf(stderr, "<%d>%s\n", level, buf);
                else
                        fprintf(stderr, "%s\n", buf);
        }

        errno = saved_errno;
        return -error;
}

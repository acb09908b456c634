/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <strings.h>

#include "log.h"

/* Longer messages are cut, terminating NUL included. */
#define LOG_MESSAGE_MAX 2048

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
                /* One write() of a line formatted here. fprintf() on the unbuffered stderr formats
                 * through an 8 kB buffer on the stack (glibc's buffered_vfprintf): the deepest
                 * point of the daemon's stack, whose pages the kernel never takes back. */
                char line[sizeof "<-2147483648>" + LOG_MESSAGE_MAX];
                size_t n = 0;
                int k;

                if (stderr_is_journal())
                        n = (size_t) snprintf(line, sizeof "<-2147483648>", "<%d>", level);
                /* %m in the format prints the error passed in, not whatever errno holds. */
                if (error != 0)
                        errno = error;
                va_start(ap, format);
                k = vsnprintf(line + n, LOG_MESSAGE_MAX, format, ap);
                va_end(ap);
                if (k > 0)
                        n += (size_t) k < LOG_MESSAGE_MAX ? (size_t) k : LOG_MESSAGE_MAX - 1;
                line[n++] = '\n';

                for (size_t done = 0; done < n;) {
                        ssize_t w = write(STDERR_FILENO, line + done, n - done);

                        if (w < 0 && errno == EINTR)
                                continue;
                        if (w <= 0)
                                break;
                        done += (size_t) w;
                }
        }

        errno = saved_errno;
        return -error;
}

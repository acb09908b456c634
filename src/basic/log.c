/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>
#include <stdio.h>
#include <sys/uio.h>
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

/* Writes all of it, resuming after short writes and EINTR; gives up on any other error. */
static int write_iovec_all(int fd, struct iovec *iov, size_t n) {
        while (n > 0) {
                ssize_t w = writev(fd, iov, (int) n);

                if (w < 0 && errno == EINTR)
                        continue;
                if (w <= 0)
                        return w < 0 ? -errno : -EIO;
                for (; n > 0 && (size_t) w >= iov->iov_len; iov++, n--)
                        w -= (ssize_t) iov->iov_len;
                if (n > 0) {
                        iov->iov_base = (char *) iov->iov_base + w;
                        iov->iov_len -= (size_t) w;
                }
        }
        return 0;
}

int log_internal(int level, int error, const char *format, ...) {
        int saved_errno = errno;
        va_list ap;

        if (error < 0)
                error = -error;

        if (level <= max_level) {
                /* One writev() of a line formatted on the heap. fprintf() on the unbuffered stderr
                 * formats through an 8 kB buffer on the stack (glibc's buffered_vfprintf), and a
                 * line buffer here cost 2 kB more: the deepest points of the daemon's stack, whose
                 * pages the kernel never takes back. */
                char prefix[sizeof "<-2147483648>"] = "";
                _cleanup_free_ char *message = NULL;
                struct iovec iov[3];
                size_t n = 0;
                int k;

                if (stderr_is_journal())
                        (void) snprintf(prefix, sizeof prefix, "<%d>", level);
                /* %m in the format prints the error passed in, not whatever errno holds. */
                if (error != 0)
                        errno = error;
                va_start(ap, format);
                k = vasprintf(&message, format, ap);
                va_end(ap);
                if (k < 0) {
                        message = NULL;
                        k = 0;
                }
                iov[n++] = (struct iovec) { prefix, strlen(prefix) };
                iov[n++] = (struct iovec) { message, (size_t) k < LOG_MESSAGE_MAX ? (size_t) k : LOG_MESSAGE_MAX - 1 };
                iov[n++] = (struct iovec) { (char *) "\n", 1 };
                (void) write_iovec_all(STDERR_FILENO, iov, n);
        }

        errno = saved_errno;
        return -error;
}

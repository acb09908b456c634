/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <dirent.h>
#include <errno.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _printf_(a, b) __attribute__((format(printf, a, b)))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))

/* a + b, or UINT64_MAX where the sum would wrap: a total of pages asked for must not wrap round
 * to a small pool. */
static inline uint64_t add_saturating(uint64_t a, uint64_t b) {
        return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

#define USEC_PER_SEC UINT64_C(1000000)
#define USEC_PER_MSEC UINT64_C(1000)
#define USEC_PER_DAY (86400 * USEC_PER_SEC)

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0)
                close(*fd);
}
#define _cleanup_close_ _cleanup_(closep)

/* Closes fd if open; returns -1, for "fd = safe_close(fd)". */
static inline int safe_close(int fd) {
        if (fd >= 0)
                close(fd);
        return -1;
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}
#define _cleanup_closedir_ _cleanup_(closedirp)

static inline bool streq_ptr(const char *a, const char *b) {
        if (!a || !b)
                return a == b;
        return strcmp(a, b) == 0;
}
#define streq(a, b) (strcmp((a), (b)) == 0)

/* D-Bus strings say "none" with "": NULL where the caller means "absent". */
static inline const char *empty_to_null(const char *s) {
        return s && s[0] ? s : NULL;
}

/* An enum's names, as systemd's string-table.h keeps them: a table name##_table[] indexed by the
 * value, and these to define the lookups. name_to_string() gives NULL for a value outside the
 * table; name_from_string() gives -EINVAL for NULL or a name the table lacks. */
#define DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                        \
        const char *name##_to_string(type i) {                                                  \
                if (i < 0 || i >= (type) ELEMENTSOF(name##_table))                              \
                        return NULL;                                                            \
                return name##_table[i];                                                         \
        }

#define DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)                                      \
        type name##_from_string(const char *s) {                                                \
                return (type) string_table_lookup(name##_table, ELEMENTSOF(name##_table), s);   \
        }

#define DEFINE_STRING_TABLE_LOOKUP(name, type)                                                  \
        DEFINE_STRING_TABLE_LOOKUP_TO_STRING(name, type)                                        \
        DEFINE_STRING_TABLE_LOOKUP_FROM_STRING(name, type)

/* The index of s in table (n entries, NULL ones skipped), or -EINVAL, also for a NULL s. */
int string_table_lookup(const char *const *table, size_t n, const char *s);

/* The clock in µs (CLOCK_MONOTONIC, CLOCK_REALTIME, ...). */
uint64_t now_usec(clockid_t clock);

/* For sorting arrays of char* (g_ptr_array_sort(), qsort()): the elements are pointers to them. */
int compare_strings(const void *a, const void *b);
/* Where name is in strings sorted by compare_strings(), or where it would go; ret_found says
 * which. */
size_t sorted_strings_search(const char *const *sorted, size_t n, const char *name, bool *ret_found);

/* Moves ownership out of a _cleanup_ variable. */
#define TAKE_PTR(p)                              \
        ({                                       \
                __typeof__(p) _ptr_ = (p);       \
                (p) = NULL;                      \
                _ptr_;                           \
        })

#define TAKE_FLAG(b)                             \
        ({                                       \
                bool _b_ = (b);                  \
                (b) = false;                     \
                _b_;                             \
        })

#define TAKE_FD(fd)                              \
        ({                                       \
                int _fd_ = (fd);                 \
                (fd) = -1;                       \
                _fd_;                            \
        })

/* True for a non-empty string of ASCII digits only. */
bool string_is_digits(const char *s);

/* Parses an unsigned decimal number; rejects signs, blanks, trailing junk and overflow. */
int parse_u64(const char *s, uint64_t *ret);

/* Parses "8G", "512M", "2048k", "4096" (bytes) with binary multipliers (K, M, G, T; optional B/iB). */
int parse_size(const char *s, uint64_t *ret);

/* Parses "30s", "5min", "2h", "100ms", "1d" or a bare number of seconds into microseconds. */
int parse_duration_usec(const char *s, uint64_t *ret);
/* The same, refusing with -ERANGE a duration below min or above max. */
int parse_duration_usec_in_range(const char *s, uint64_t min, uint64_t max, uint64_t *ret);

/* Parses a decimal number ("0.5", "12", "1e3"), with a trailing '%' where percent is set, in
 * [min, max] ((min, max] unless min_inclusive). The same in every locale, as a configuration file
 * is. Signs, blanks, "inf" and "nan" are -EINVAL, a number out of range -ERANGE. */
int parse_double_in_range(const char *s, bool percent, double min, bool min_inclusive, double max, double *ret);

/* Formats a size in kB as the kernel's page-size suffix would ("2048kB" -> "2M"). */
const char *format_page_size(uint64_t kb, char buf[static 24]);

/* The candidate a typo of word most likely meant ("Enabeld" -> "Enabled", "enabled" ->
 * "Enabled"), or NULL when none is close. For "did you mean" hints. */
const char *closest_match(const char *word, const char *const *candidates, size_t n);

/* FNV-1a, 64 bits: for telling "changed" from "unchanged", where a collision is unthinkable and
 * the cost of a cryptographic hash is not wanted. Start from FNV1A_OFFSET. */
#define FNV1A_OFFSET UINT64_C(0xcbf29ce484222325)
uint64_t fnv1a_feed(uint64_t h, const void *data, size_t size);
static inline uint64_t fnv1a_feed_string(uint64_t h, const char *s) {
        return fnv1a_feed(h, s, strlen(s) + 1);
}
static inline uint64_t fnv1a_feed_u64(uint64_t h, uint64_t v) {
        return fnv1a_feed(h, &v, sizeof v);
}

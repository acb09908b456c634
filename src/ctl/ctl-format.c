/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>
#include <inttypes.h>

#include "ctl-format.h"
#include "util.h"

char *ctl_format_duration(uint64_t usec) {
        static const struct {
                const char *suffix;
                uint64_t usec;
        } units[] = {
                { "d", 86400 * CTL_USEC_PER_SEC },
                { "h", 3600 * CTL_USEC_PER_SEC },
                { "min", 60 * CTL_USEC_PER_SEC },
                { "s", CTL_USEC_PER_SEC },
        };
        unsigned shown = 0;
        GString *s;

        if (usec < CTL_USEC_PER_SEC)
                return g_strdup_printf("%" PRIu64 "ms", usec / 1000);
        s = g_string_new(NULL);
        /* Two units are enough for a person: "2h 5min", not "2h 5min 3s". */
        for (size_t i = 0; i < ELEMENTSOF(units) && shown < 2; i++) {
                uint64_t n = usec / units[i].usec;

                if (n == 0 && shown == 0)
                        continue;
                if (n > 0)
                        g_string_append_printf(s, "%s%" PRIu64 "%s", s->len > 0 ? " " : "", n, units[i].suffix);
                usec -= n * units[i].usec;
                shown++;
        }
        return g_string_free(s, FALSE);
}

uint64_t ctl_now_usec(void) {
        return (uint64_t) g_get_real_time();
}

/* The local time of realtime_usec, or NULL beyond what GDateTime holds (year 9999). */
static GDateTime *local_time(uint64_t realtime_usec) {
        if (realtime_usec / CTL_USEC_PER_SEC > INT64_MAX)
                return NULL;
        return g_date_time_new_from_unix_local((gint64) (realtime_usec / CTL_USEC_PER_SEC));
}

char *ctl_format_timestamp_relative(uint64_t realtime_usec, uint64_t now_usec) {
        g_autoptr(GDateTime) t = local_time(realtime_usec);
        g_autofree char *when = t ? g_date_time_format(t, "%a %Y-%m-%d %H:%M:%S %Z") : NULL;
        g_autofree char *d = NULL;

        if (!when)
                when = g_strdup_printf("@%" PRIu64, realtime_usec / CTL_USEC_PER_SEC);
        if (realtime_usec >= now_usec) {
                d = ctl_format_duration(realtime_usec - now_usec);
                return g_strdup_printf("%s (in %s)", when, d);
        }
        d = ctl_format_duration(now_usec - realtime_usec);
        return g_strdup_printf("%s (%s ago)", when, d);
}

char *ctl_format_timestamp(uint64_t realtime_usec) {
        return ctl_format_timestamp_relative(realtime_usec, ctl_now_usec());
}

char *ctl_format_clock(uint64_t realtime_usec) {
        g_autoptr(GDateTime) t = local_time(realtime_usec);
        g_autofree char *when = t ? g_date_time_format(t, "%Y-%m-%d %H:%M:%S") : NULL;

        return g_strdup_printf("%s.%03u", when ?: "", (unsigned) (realtime_usec % CTL_USEC_PER_SEC / 1000));
}

char *ctl_format_iso8601(uint64_t realtime_usec) {
        g_autoptr(GDateTime) seconds = NULL, t = NULL;

        if (realtime_usec / CTL_USEC_PER_SEC > INT64_MAX)
                return NULL;
        seconds = g_date_time_new_from_unix_utc((gint64) (realtime_usec / CTL_USEC_PER_SEC));
        if (!seconds)
                return NULL;
        t = g_date_time_add(seconds, (GTimeSpan) (realtime_usec % CTL_USEC_PER_SEC));
        if (!t)
                return NULL;
        return g_date_time_format(t, "%Y-%m-%dT%H:%M:%S.%fZ");
}

/* Not g_format_size(): its IEC units always carry a decimal ("512.0 MiB") and say "0 bytes",
 * where thpd-ctl(1) documents "512 MiB" and "0 B". */
char *ctl_format_bytes(uint64_t bytes) {
        static const char *const units[] = { "B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB" };
        double value = (double) bytes;
        size_t i = 0;

        while (value >= 1024 && i + 1 < ELEMENTSOF(units)) {
                value /= 1024;
                i++;
        }
        if (i == 0)
                return g_strdup_printf("%" PRIu64 " B", bytes);
        return value < 10 ? g_strdup_printf("%.1f %s", value, units[i]) : g_strdup_printf("%.0f %s", value, units[i]);
}

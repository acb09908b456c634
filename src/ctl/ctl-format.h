/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdint.h>

/* Times, durations and sizes as thpd-ctl shows them to people. */

#define CTL_USEC_PER_SEC UINT64_C(1000000)

/* "29min", "2h 5min", "3d 4h", "250ms": a duration in µs, rounded down to two units. */
char *ctl_format_duration(uint64_t usec);
/* "Sat 2025-11-22 10:00:00 UTC (in 29min)" for a CLOCK_REALTIME time in µs, in the local time
 * zone, relative to now_usec ("(5s ago)" for the past); "@SECONDS (...)" when the time zone
 * cannot show it. */
char *ctl_format_timestamp_relative(uint64_t realtime_usec, uint64_t now_usec);
/* The same, relative to the current time. */
char *ctl_format_timestamp(uint64_t realtime_usec);
/* "2025-11-22 10:00:00.123": local time to the millisecond, as monitor starts its lines; "" when
 * the time zone cannot show it. */
char *ctl_format_clock(uint64_t realtime_usec);
/* "2025-11-22T10:00:00.000000Z": ISO 8601 in UTC to the microsecond, or NULL beyond year 9999. */
char *ctl_format_iso8601(uint64_t realtime_usec);
/* "2.7 GiB", "512 MiB", "0 B": binary units, one decimal below 10. */
char *ctl_format_bytes(uint64_t bytes);
/* CLOCK_REALTIME in µs. */
uint64_t ctl_now_usec(void);

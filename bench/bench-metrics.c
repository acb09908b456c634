/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* How long metrics_format() takes to render thpd's state as the policies and the units that
 * activate them grow: the daemon renders it after every apply that changes something (to tell
 * whether its metrics file needs rewriting), thpd-ctl metrics at every call.
 *
 *   bench-metrics [ROUNDS]
 *
 * For each size, ROUNDS rounds (5 by default) of as many renderings as take about 0.2 s; the
 * table gives the median round and the fastest, per rendering. Every knob of a kernel with the
 * eight mTHP sizes from 16 kB to 2 MB, two hugetlb pools and two drift counters are there in
 * every row. Prints a table and asserts nothing. */
#include <glib.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "metrics.h"

#define ROUND_NSEC UINT64_C(200000000)
#define COLUMNS 6

typedef struct Size {
        unsigned policies;
        unsigned units_per_policy; /* of every other policy: half of them are active */
} Size;

static const Size sizes[] = {
        { 1, 1 },
        { 10, 2 },
        { 100, 2 },
        { 1000, 2 },
        { 1000, 10 },
};

static uint64_t now_nsec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * UINT64_C(1000000000) + (uint64_t) ts.tv_nsec;
}

static size_t fill_knobs(MetricsKnob knobs[static _KNOB_MAX]) {
        size_t n = 0;

        for (Knob k = 0; k < KNOB_MTHP_FIRST; k++) {
                const KnobInfo *info = knob_info(k);
                KnobValue v = info->kind == KNOB_KIND_NUMBER ? (KnobValue) info->min : 0;

                knobs[n++] = (MetricsKnob) { k, v, v, v, SOURCE_BASELINE, NULL, NULL };
        }
        for (uint64_t kb = 16; kb <= 2048; kb *= 2) {
                Knob k;

                if (knob_mthp_from_size_kb(kb, &k) < 0)
                        abort();
                knobs[n++] = (MetricsKnob) { k, 0, 0, 0, SOURCE_BASELINE, NULL, NULL };
        }
        return n;
}

/* One rendering's time in nanoseconds, over a round of n renderings; the text's length in *ret_bytes. */
static double round_nsec(const MetricsInput *in, unsigned n, size_t *ret_bytes) {
        uint64_t start = now_nsec();
        size_t bytes = 0;

        for (unsigned i = 0; i < n; i++) {
                g_autofree char *text = metrics_format(in);

                bytes = strlen(text);
        }
        *ret_bytes = bytes;
        return (double) (now_nsec() - start) / n;
}

static int compare_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;

        return (x > y) - (x < y);
}

static void measure(const Size *size, unsigned rounds, char row[COLUMNS][32]) {
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        g_autofree MetricsPolicy *policies = g_new0(MetricsPolicy, size->policies);
        g_autofree const char **units = g_new0(const char *, (size_t) size->policies * size->units_per_policy);
        g_autofree double *samples = g_new0(double, rounds);
        MetricsKnob knobs[_KNOB_MAX];
        MetricsPool pools[] = {
                { 2048, POOL_NODE_ANY, 8, 16, 24, 24, 3 },
                { 1048576, 0, 0, 2, 2, 2, 2 },
        };
        MetricsDrift drift[] = { { "enabled", "tuned.service", 4 }, { "enabled", "unknown", 1 } };
        MetricsCounters counters = { .knob_writes = 12, .reloads = 2 };
        Diagnostics diagnostics;
        size_t bytes, n_units = 0;
        unsigned n;

        for (unsigned p = 0; p < size->policies; p++) {
                char *name = g_strdup_printf("policy-%04u.conf", p);

                g_ptr_array_add(names, name);
                policies[p] = (MetricsPolicy) { .name = name, .active = p % 2 == 0, .units = units + n_units };
                if (!policies[p].active)
                        continue;
                for (unsigned u = 0; u < size->units_per_policy; u++) {
                        char *unit = g_strdup_printf("service-%04u-%u.service", p, u);

                        g_ptr_array_add(names, unit);
                        units[n_units++] = unit;
                }
                policies[p].n_units = size->units_per_policy;
        }
        diagnostics_init(&diagnostics);

        MetricsInput in = {
                .version = "0.1.0",
                .start_time_usec = UINT64_C(1700000000000000),
                .units_ready = true,
                .knobs = knobs,
                .n_knobs = fill_knobs(knobs),
                .policies = policies,
                .n_policies = size->policies,
                .policy_diagnostics = &diagnostics,
                .pools = pools,
                .n_pools = G_N_ELEMENTS(pools),
                .storm_watching = true,
                .storm_action = STORM_ACTION_MITIGATE,
                .counters = &counters,
                .drift = drift,
                .n_drift = G_N_ELEMENTS(drift),
        };

        /* Calibrate: as many renderings as take about ROUND_NSEC. */
        n = (unsigned) CLAMP(ROUND_NSEC / MAX(round_nsec(&in, 1, &bytes), 1.0), 1, 1000000);
        for (unsigned r = 0; r < rounds; r++)
                samples[r] = round_nsec(&in, n, &bytes);
        qsort(samples, rounds, sizeof(double), compare_double);

        snprintf(row[0], sizeof(row[0]), "%u", size->policies);
        snprintf(row[1], sizeof(row[1]), "%zu", n_units);
        snprintf(row[2], sizeof(row[2]), "%zu", bytes);
        snprintf(row[3], sizeof(row[3]), "%u", n);
        snprintf(row[4], sizeof(row[4]), "%.1f", samples[rounds / 2] / 1000.0);
        snprintf(row[5], sizeof(row[5]), "%.1f", samples[0] / 1000.0);
        diagnostics_clear(&diagnostics);
}

/* As bench/benchlib.py's render(): a header, a rule, the numbers right-aligned. */
static void print_table(char rows[][COLUMNS][32], size_t n_rows) {
        size_t widths[COLUMNS] = {};

        for (size_t r = 0; r < n_rows; r++)
                for (size_t c = 0; c < COLUMNS; c++)
                        widths[c] = MAX(widths[c], (size_t) g_utf8_strlen(rows[r][c], -1));
        for (size_t r = 0; r < n_rows; r++) {
                for (size_t c = 0; c < COLUMNS; c++) {
                        size_t pad = widths[c] - (size_t) g_utf8_strlen(rows[r][c], -1);

                        printf("%s%*s%s", c > 0 ? "  " : "", (int) pad, "", rows[r][c]);
                }
                printf("\n");
                if (r > 0)
                        continue;
                for (size_t c = 0; c < COLUMNS; c++) {
                        printf("%s", c > 0 ? "  " : "");
                        for (size_t i = 0; i < widths[c]; i++)
                                putchar('-');
                }
                printf("\n");
        }
}

int main(int argc, char *argv[]) {
        char rows[1 + G_N_ELEMENTS(sizes)][COLUMNS][32] = {
                { "policies", "active units", "bytes", "renderings/round", "median µs", "fastest µs" },
        };
        unsigned long rounds = 5;

        if (argc > 2 || (argc == 2 && ((rounds = strtoul(argv[1], NULL, 10)) == 0 || rounds > 1000))) {
                fprintf(stderr, "Usage: %s [ROUNDS]\n", argv[0]);
                return 2;
        }
        for (size_t i = 0; i < G_N_ELEMENTS(sizes); i++)
                measure(&sizes[i], (unsigned) rounds, rows[1 + i]);
        print_table(rows, G_N_ELEMENTS(rows));
        return fflush(stdout) == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

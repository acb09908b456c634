/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>

#include "knob.h"

/* What thpd wrote, per knob and per pool, kept in the runtime directory beside the baseline
 * record, so that a restarted thpd tells its own leftover from a write made while it was down
 * (ownership.h). An item is named as drift.h names it ("enabled",
 * "hugepages-2048kB/nr_hugepages"), a value as the kernel shows it.
 *
 * Like the unit record: a snapshot, then the changes appended since, fsynced. "want ITEM VALUE"
 * says thpd is about to write VALUE: appended before the write, so that a thpd killed between
 * the two still knows the value as its own. "thpd ITEM VALUE" says what the item holds for thpd
 * once the apply is done (what the kernel kept), and ends the "want": only a write cut short
 * leaves two values of thpd's, so that a value thpd held long ago is never taken for its
 * leftover. "baseline ITEM" says the item is the baseline's again, appended after the write
 * that gave it back: a kill before the line leaves the kernel at the baseline, which is the
 * baseline's whatever the record says. "yield ITEM WRITER VALUE SINCE" says thpd yielded
 * the item to WRITER ("-": unknown), which keeps setting VALUE, since SINCE (CLOCK_REALTIME µs):
 * a restart does not start the fight again; the rest of the line, if any, is what the writer said
 * of it ("profile hpc-compute", drift.h), blanks and all. A "thpd" or "baseline" line ends it. */

#define OWNERSHIP_RECORD_FILE "ownership"
/* What a restarted thpd reads of it: a line per knob and pool. */
#define OWNERSHIP_RECORD_MAX (256U * 1024U)

typedef struct OwnershipRecordItem {
        char *value;    /* what the item held for thpd when an apply was last done; NULL: none */
        char *wanted;   /* a write begun after it and never seen done (a kill cut it short); NULL: none */
        /* Yielded to another writer (drift.h): who (NULL: unknown), the value it keeps setting,
         * since when (CLOCK_REALTIME µs). */
        bool yielded;
        char *writer;
        char *writer_detail; /* NULL: none */
        char *writer_value;
        uint64_t since_usec;
} OwnershipRecordItem;

/* items: item name -> OwnershipRecordItem*, as the lines leave them (only thpd's items). A last
 * line without its newline (a write cut short) is ignored. -EBADMSG for text that is not an
 * ownership record. */
int ownership_record_parse(const char *text, GHashTable *items);
GHashTable *ownership_record_items_new(void);

/* The snapshot's first line. */
void ownership_record_begin(GString *s);
void ownership_record_append_want(GString *s, const char *item, const char *value);
void ownership_record_append_thpd(GString *s, const char *item, const char *value);
void ownership_record_append_baseline(GString *s, const char *item);
/* writer: NULL for an unknown one; detail: NULL for none, and left out where it would not read
 * back (a newline in it). */
void ownership_record_append_yield(GString *s, const char *item, const char *writer, const char *detail,
                                   const char *value, uint64_t since_usec);

/* Whether a knob that holds `current` at start is what thpd left: its value, or the one a write
 * cut short was writing. */
bool ownership_record_knob_left(const OwnershipRecordItem *it, Knob k, KnobValue current);
/* The same for a pool: a resize cut short leaves it anywhere between the pages before (before
 * thpd's first write: the baseline) and those it asked for. */
bool ownership_record_pool_left(const OwnershipRecordItem *it, uint64_t baseline, uint64_t current);

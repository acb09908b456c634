/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>

/* Which units of active policies started under them, and which were already running (they
 * need a restart), kept in the runtime directory beside the baseline record. A thpd that
 * restarts (crash, upgrade) would otherwise take every running unit for one that started
 * before its policy. */

#define UNIT_RECORD_FILE "units"

/* The record is a snapshot (a "started" or "restart" line per unit) followed by the changes
 * appended since, in order: "started UNIT" and "restart UNIT POLICY" add a unit (the latter
 * needing a restart), "unhint UNIT" drops its restart hint and "gone UNIT" the unit. Appending a
 * line costs a start a few microseconds; rewriting the snapshot, a rename and every running
 * unit's name.
 *
 * started: set of unit names; needs_restart: unit name -> policy name, as the lines leave them
 * (a unit in one table is not in the other). Entries are added to the tables given. A last line
 * without its newline (a write cut short) is ignored. -EBADMSG for text that is not a unit
 * record. */
int unit_record_parse(const char *text, GHashTable *started, GHashTable *needs_restart);

typedef enum UnitRecordChange {
        UNIT_RECORD_STARTED, /* wanted now, started under its policy */
        UNIT_RECORD_RESTART, /* needs a restart (policy: the one that says so) */
        UNIT_RECORD_UNHINT,  /* no longer needs a restart */
        UNIT_RECORD_GONE,    /* no longer wanted */
} UnitRecordChange;

/* Appends the line for one change to journal. */
void unit_record_append_change(GString *journal, UnitRecordChange change, const char *unit, const char *policy);

/* The line format both records in /run/thpd share (this one and ownership-record.h): header,
 * then lines of words separated by one blank, the second word a name (record_word_valid()).
 * Returns in *ret the complete lines, each split into words (a GStrv; empty lines skipped, a last
 * line without its newline ignored), or -EBADMSG for text that is not such a record. */
int record_split_lines(const char *text, const char *header, GPtrArray **ret);
/* A word a record can hold: not empty, no blanks, UTF-8. */
bool record_word_valid(const char *s);

/* Whether adding more bytes of changes may go on a record whose snapshot was snapshot bytes and
 * which has had appended bytes since, or the snapshot should be written again: the appended
 * lines stay no longer than the snapshot (or 4 KiB), and the whole under read_limit, what a
 * restarted thpd reads of it. */
bool unit_record_can_append(size_t snapshot, size_t appended, size_t adding, size_t read_limit);
/* What a restarted thpd reads of the record: a line is a unit's name and a word or two, so some
 * 100,000 running units of policies, where 64 KiB held about 1,800. */
#define UNIT_RECORD_MAX (4U * 1024U * 1024U)
/* units: the wanted units' names, sorted, of which those in needs_restart are recorded as
 * needing a restart and the others as started (so that the caller need not build the difference
 * at every start). Sorted, so that equal sets give equal text. */
char *unit_record_format(const GPtrArray *units, GHashTable *needs_restart);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>

/* Which units of active policies started under them, and which were already running (they
 * need a restart), kept in the runtime directory beside the baseline record. A thpd that
 * restarts (crash, upgrade) would otherwise take every running unit for one that started
 * before its policy. */

#define UNIT_RECORD_FILE "units"

/* started: set of unit names; needs_restart: unit name -> policy name. Entries are added to
 * the tables given. -EBADMSG for text that is not a unit record. */
int unit_record_parse(const char *text, GHashTable *started, GHashTable *needs_restart);
/* units: the wanted units' names, sorted, of which those in needs_restart are recorded as
 * needing a restart and the others as started (so that the caller need not build the difference
 * at every start). Sorted, so that equal sets give equal text. */
char *unit_record_format(const GPtrArray *units, GHashTable *needs_restart);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* --json output: a compact document per line (RFC 8259), written in the order of the calls.
 * key names the member inside an object and is NULL inside an array; nesting them right is the
 * caller's part, as the verbs build fixed shapes. The schema is data/thpd-ctl.schema.json.
 *
 * Written here rather than with a JSON library: thpd-ctl only ever writes JSON, and json-glib
 * brought in GObject, GIO and a dozen more shared libraries whose loading alone doubled the time
 * of a short thpd-ctl run. */

typedef struct CtlJson CtlJson;

CtlJson *ctl_json_new(void);
CtlJson *ctl_json_free(CtlJson *j);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CtlJson, ctl_json_free)

void ctl_json_begin_object(CtlJson *j, const char *key);
void ctl_json_end_object(CtlJson *j);
void ctl_json_begin_array(CtlJson *j, const char *key);
void ctl_json_end_array(CtlJson *j);
/* NULL becomes null: a missing value is never "". Strings (and keys) from files and the bus go
 * out as valid UTF-8, as JSON must be: an invalid sequence becomes U+FFFD. */
void ctl_json_string(CtlJson *j, const char *key, const char *value);
void ctl_json_null(CtlJson *j, const char *key);
void ctl_json_uint(CtlJson *j, const char *key, uint64_t value);
void ctl_json_int(CtlJson *j, const char *key, int64_t value);
void ctl_json_bool(CtlJson *j, const char *key, bool value);
/* Non-finite numbers become null, which JSON can carry; a whole number is written as an integer
 * ("12", as thpd-ctl always printed it). */
void ctl_json_double(CtlJson *j, const char *key, double value);
void ctl_json_strv(CtlJson *j, const char *key, char *const *values);
/* A value written elsewhere: text is a complete JSON value, as ctl_json_text() gives it. */
void ctl_json_raw(CtlJson *j, const char *key, const char *text);
/* A point in time as two keys: KEY, ISO 8601 in UTC, and KEY_usec, µs since the epoch; both null
 * for 0 (none). */
void ctl_json_time(CtlJson *j, const char *key, uint64_t realtime_usec);
/* The document as compact text, without a newline; owned by j. */
const char *ctl_json_text(const CtlJson *j);
/* Writes the document and a newline to f; returns a CtlExit code. */
int ctl_json_print(CtlJson *j, FILE *f);

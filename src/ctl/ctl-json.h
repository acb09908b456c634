/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <json-glib/json-glib.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* --json output: a compact document per line, built with json-glib in the order of the calls.
 * key names the member inside an object and is NULL inside an array. The schema is
 * data/thpd-ctl.schema.json. */

void ctl_json_begin_object(JsonBuilder *b, const char *key);
void ctl_json_end_object(JsonBuilder *b);
void ctl_json_begin_array(JsonBuilder *b, const char *key);
void ctl_json_end_array(JsonBuilder *b);
/* NULL becomes null: a missing value is never "". */
void ctl_json_string(JsonBuilder *b, const char *key, const char *value);
void ctl_json_null(JsonBuilder *b, const char *key);
void ctl_json_uint(JsonBuilder *b, const char *key, uint64_t value);
void ctl_json_int(JsonBuilder *b, const char *key, int64_t value);
void ctl_json_bool(JsonBuilder *b, const char *key, bool value);
/* Non-finite numbers become null, which JSON can carry. */
void ctl_json_double(JsonBuilder *b, const char *key, double value);
void ctl_json_strv(JsonBuilder *b, const char *key, char *const *values);
/* A point in time as two keys: KEY, ISO 8601 in UTC, and KEY_usec, µs since the epoch; both null
 * for 0 (none). */
void ctl_json_time(JsonBuilder *b, const char *key, uint64_t realtime_usec);
/* The document as compact text, without a newline. */
char *ctl_json_to_string(JsonBuilder *b);
/* Writes the document and a newline to f; returns a CtlExit code. */
int ctl_json_print(JsonBuilder *b, FILE *f);

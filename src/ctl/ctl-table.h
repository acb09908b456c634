/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "ctl-json.h"
#include "ctl-terminal.h"

/* Rows of typed cells, written once and shown either as aligned text or as JSON, as systemd's
 * format-table does: the text and the --json output of a verb cannot drift apart when both come
 * from the same cells.
 *
 * A column has a text header, a JSON key, or both: a value shown to people in another form than
 * JSON carries it (a path with " (mask)" after it, say) is a text-only column beside a JSON-only
 * one. Cells are added row by row, left to right; a row is complete after one cell per column. */

typedef struct CtlTable CtlTable;

CtlTable *ctl_table_new(void);
void ctl_table_free(CtlTable *t);
G_DEFINE_AUTOPTR_CLEANUP_FUNC(CtlTable, ctl_table_free)

/* header: the column's title in text, NULL for a column only JSON shows; json_key: its member in
 * JSON, NULL for a column only text shows. Both must outlive the table (string literals). Returns
 * the column's index. Columns are added before any cell. */
size_t ctl_table_add_column(CtlTable *t, const char *header, const char *json_key);
/* A column only JSON shows for each key, up to NULL, as systemd's table_new() takes its titles. */
void ctl_table_add_json_columns(CtlTable *t, const char *key, ...) G_GNUC_NULL_TERMINATED;
/* The text column is at least this many columns wide, whatever its cells. */
void ctl_table_set_minimum_width(CtlTable *t, size_t column, size_t width);
/* Which columns text shows, in this order; n indices. Without it: every column with a header, in
 * the order they were added (JSON always keeps that order). */
void ctl_table_set_display(CtlTable *t, const size_t *columns, size_t n);
/* What text shows for a NULL string or an empty list; "" unless set. */
void ctl_table_set_empty_string(CtlTable *t, const char *empty);
/* The same for one column, where none has a text of its own ("-" for an unknown writer); empty is
 * a literal, as the titles are. */
void ctl_table_set_column_empty_string(CtlTable *t, size_t column, const char *empty);

/* NULL is null in JSON and the empty string in text. */
void ctl_table_add_string(CtlTable *t, const char *value);
/* A list: an array in JSON, the elements separated by a blank in text. */
void ctl_table_add_strv(CtlTable *t, char *const *values);
/* A dictionary, keys and texts NULL-terminated and as long: in JSON object, the members as an object
 * (ctl_json_text()); in text "KEY=TEXT" for each member, separated by a blank; in show's keyed form a
 * line NAME.ID.KEY=TEXT for each member in place of the column's own. */
void ctl_table_add_members(CtlTable *t, char *const *keys, char *const *texts, const CtlJson *object);
/* A number; in text in decimal. */
void ctl_table_add_uint(CtlTable *t, uint64_t value);
/* true or false in JSON, yes or no in text. */
void ctl_table_add_bool(CtlTable *t, bool value);
/* A CLOCK_REALTIME time in µs, 0 for none: in JSON a timestamp and its KEY_usec twin
 * (ctl_json_time()), in text the number. */
void ctl_table_add_time(CtlTable *t, uint64_t realtime_usec);
/* A value only JSON shows, as it is: the text of a finished document (ctl_json_text()). */
void ctl_table_add_json(CtlTable *t, const CtlJson *value);
/* Colours the last cell added, in text: the colour, the padded value, then the normal colour. */
void ctl_table_set_color(CtlTable *t, CtlColor color);

size_t ctl_table_rows(const CtlTable *t);
/* What text shows of a cell, without colour (a JSON-only value shows the empty text): for the
 * printers, and for a caller that puts it in a sentence of its own. */
char *ctl_table_cell_text(const CtlTable *t, size_t row, size_t column);

/* The shown columns separated by two blanks, each padded to its widest cell or title (the last
 * is not padded); with header, a bold line of the titles first. The lines are cut as out cuts
 * them. */
void ctl_table_print(const CtlTable *t, CtlOutput *out, bool header);
/* As ctl_table_print() without the titles, the first line after first_prefix and the others after
 * prefix: a block of status under its label. */
void ctl_table_print_block(const CtlTable *t, CtlOutput *out, const char *first_prefix, const char *prefix);
/* As show prints a property that is a list: with list, "NAME=ID ID ..." first; then for each row
 * "NAME.ID.TITLE=text" for each later column with a title, where the first column with a title
 * gives the ID. value_only: what follows "=" only (show --value). */
void ctl_table_print_keyed(const CtlTable *t, CtlOutput *out, const char *name, bool list, bool value_only);
/* As show prints a list property of a form of its own: a line "NAME=" for each row, then the texts
 * of its shown columns separated by a blank; "NAME=" alone without rows. value_only: what follows
 * "=" only (show --value). */
void ctl_table_print_lines(const CtlTable *t, CtlOutput *out, const char *name, bool value_only);
/* Row row as the members of an object, in column order, for a caller that adds more. */
void ctl_table_row_to_json(const CtlTable *t, size_t row, CtlJson *j);
/* "key": [ {row}, ... ]; key NULL inside an array. */
void ctl_table_to_json(const CtlTable *t, CtlJson *j, const char *key);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <stdarg.h>

#include "ctl-table.h"
#include "util.h"

typedef enum CellType {
        CELL_STRING,
        CELL_JSON,
        CELL_TIME,
} CellType;

typedef struct Cell {
        CellType type;
        char *string; /* the string, or the JSON text; NULL: none */
        char *text;   /* CELL_JSON: what text shows (a list, a number, yes or no); NULL: nothing */
        char **keys, **texts; /* a dictionary's members, for show; NULL: not a dictionary */
        uint64_t number; /* CELL_TIME */
        const char *color; /* NULL: not coloured */
} Cell;

typedef struct Column {
        const char *header, *json_key; /* not copied: the verbs name their columns in literals */
        const char *empty;             /* a literal too; NULL: the table's */
        size_t minimum_width;
} Column;

struct CtlTable {
        GArray *columns; /* Column */
        GArray *cells;   /* Cell, row by row */
        GArray *display; /* size_t; NULL: every column with a header */
        char *empty;
};

static void cell_clear(gpointer p) {
        Cell *c = p;

        g_free(c->string);
        g_free(c->text);
        g_strfreev(c->keys);
        g_strfreev(c->texts);
}

CtlTable *ctl_table_new(void) {
        CtlTable *t = g_new0(CtlTable, 1);

        t->columns = g_array_new(FALSE, TRUE, sizeof(Column));
        t->cells = g_array_new(FALSE, TRUE, sizeof(Cell));
        g_array_set_clear_func(t->cells, cell_clear);
        t->empty = g_strdup("");
        return t;
}

void ctl_table_free(CtlTable *t) {
        if (!t)
                return;
        g_array_unref(t->columns);
        g_array_unref(t->cells);
        if (t->display)
                g_array_unref(t->display);
        g_free(t->empty);
        g_free(t);
}

size_t ctl_table_add_column(CtlTable *t, const char *header, const char *json_key) {
        Column c = { .header = header, .json_key = json_key };

        g_assert(t->cells->len == 0);
        g_array_append_val(t->columns, c);
        return t->columns->len - 1;
}

void ctl_table_add_json_columns(CtlTable *t, const char *key, ...) {
        va_list ap;

        va_start(ap, key);
        for (const char *k = key; k; k = va_arg(ap, const char *))
                ctl_table_add_column(t, NULL, k);
        va_end(ap);
}

void ctl_table_set_minimum_width(CtlTable *t, size_t column, size_t width) {
        g_array_index(t->columns, Column, column).minimum_width = width;
}

void ctl_table_set_display(CtlTable *t, const size_t *columns, size_t n) {
        if (t->display)
                g_array_unref(t->display);
        t->display = g_array_sized_new(FALSE, FALSE, sizeof(size_t), (guint) n);
        g_array_append_vals(t->display, columns, (guint) n);
}

void ctl_table_set_empty_string(CtlTable *t, const char *empty) {
        g_free(t->empty);
        t->empty = g_strdup(empty);
}

void ctl_table_set_column_empty_string(CtlTable *t, size_t column, const char *empty) {
        g_array_index(t->columns, Column, column).empty = empty;
}

static void add_cell(CtlTable *t, Cell c) {
        g_array_append_val(t->cells, c);
}

void ctl_table_add_string(CtlTable *t, const char *value) {
        add_cell(t, (Cell) { .type = CELL_STRING, .string = g_strdup(value) });
}

void ctl_table_add_strv(CtlTable *t, char *const *values) {
        g_autoptr(CtlJson) j = ctl_json_new();

        ctl_json_strv(j, NULL, values);
        add_cell(t, (Cell) { .type = CELL_JSON, .string = g_strdup(ctl_json_text(j)),
                             .text = values && values[0] ? g_strjoinv(" ", (char **) values) : NULL });
}

void ctl_table_add_json(CtlTable *t, const CtlJson *value) {
        add_cell(t, (Cell) { .type = CELL_JSON, .string = g_strdup(ctl_json_text(value)) });
}

void ctl_table_add_members(CtlTable *t, char *const *keys, char *const *texts, const CtlJson *object) {
        g_autoptr(GString) text = g_string_new(NULL);

        for (size_t i = 0; keys[i]; i++)
                g_string_append_printf(text, "%s%s=%s", i > 0 ? " " : "", keys[i], texts[i]);
        add_cell(t, (Cell) { .type = CELL_JSON, .string = g_strdup(ctl_json_text(object)),
                             .text = g_string_free(g_steal_pointer(&text), FALSE), .keys = g_strdupv((char **) keys),
                             .texts = g_strdupv((char **) texts) });
}

void ctl_table_add_uint(CtlTable *t, uint64_t value) {
        char *number = g_strdup_printf("%" PRIu64, value);

        add_cell(t, (Cell) { .type = CELL_JSON, .string = number, .text = g_strdup(number) });
}

void ctl_table_add_bool(CtlTable *t, bool value) {
        add_cell(t, (Cell) { .type = CELL_JSON, .string = g_strdup(value ? "true" : "false"), .text = g_strdup(value ? "yes" : "no") });
}

void ctl_table_add_time(CtlTable *t, uint64_t realtime_usec) {
        add_cell(t, (Cell) { .type = CELL_TIME, .number = realtime_usec });
}

void ctl_table_set_color(CtlTable *t, CtlColor color) {
        g_assert(t->cells->len > 0);
        g_array_index(t->cells, Cell, t->cells->len - 1).color = ctl_color(color);
}

size_t ctl_table_rows(const CtlTable *t) {
        return t->columns->len > 0 ? t->cells->len / t->columns->len : 0;
}

static const Cell *cell_at(const CtlTable *t, size_t row, size_t column) {
        return &g_array_index(t->cells, Cell, row * t->columns->len + column);
}

char *ctl_table_cell_text(const CtlTable *t, size_t row, size_t column) {
        const Cell *c = cell_at(t, row, column);

        if (c->type == CELL_STRING && c->string)
                return g_strdup(c->string);
        if (c->type == CELL_JSON && c->text)
                return g_strdup(c->text);
        if (c->type == CELL_TIME)
                return g_strdup_printf("%" PRIu64, c->number);
        return g_strdup(g_array_index(t->columns, Column, column).empty ?: t->empty);
}

/* The shown columns, as indices; owned by the caller. */
static GArray *shown_columns(const CtlTable *t) {
        GArray *shown;

        if (t->display)
                return g_array_ref(t->display);
        shown = g_array_new(FALSE, FALSE, sizeof(size_t));
        for (size_t i = 0; i < t->columns->len; i++)
                if (g_array_index(t->columns, Column, i).header)
                        g_array_append_val(shown, i);
        return shown;
}

/* Pads to width visible columns (escape sequences and wide characters counted as a terminal
 * shows them, so that a non-ASCII name does not shift the columns after it). */
static void append_padded(GString *line, const char *text, size_t width) {
        size_t w = ctl_visible_width(text);

        g_string_append(line, text);
        for (; w < width; w++)
                g_string_append_c(line, ' ');
}

static void print_line(CtlOutput *out, const char *prefix, GArray *shown, const char *const *texts, const char *const *colors,
                       const size_t *widths, const char *line_color) {
        g_autoptr(GString) line = g_string_new(prefix);

        if (line_color)
                g_string_append(line, line_color);
        for (guint i = 0; i < shown->len; i++) {
                bool last = i + 1 == shown->len;

                if (i > 0)
                        g_string_append(line, "  ");
                if (colors[i])
                        g_string_append(line, colors[i]);
                append_padded(line, texts[i], last ? 0 : widths[i]);
                if (colors[i])
                        g_string_append(line, ctl_color(CTL_COLOR_NORMAL));
        }
        if (line_color)
                g_string_append(line, ctl_color(CTL_COLOR_NORMAL));
        g_string_append_c(line, '\n');
        ctl_puts(out, line->str);
}

static void print_table(const CtlTable *t, CtlOutput *out, bool header, const char *first_prefix, const char *prefix) {
        g_autoptr(GArray) shown = shown_columns(t);
        size_t rows = ctl_table_rows(t), n = shown->len;
        g_autofree size_t *widths = g_new0(size_t, n + 1);
        g_autofree const char **colors = g_new0(const char *, n + 1);
        g_autoptr(GPtrArray) texts = g_ptr_array_new_with_free_func((GDestroyNotify) g_strfreev);

        /* Every cell's text first: the widths need them all before the first line. */
        for (size_t r = 0; r < rows; r++) {
                char **row = g_new0(char *, n + 1);

                for (size_t i = 0; i < n; i++) {
                        row[i] = ctl_table_cell_text(t, r, g_array_index(shown, size_t, i));
                        widths[i] = MAX(widths[i], ctl_visible_width(row[i]));
                }
                g_ptr_array_add(texts, row);
        }
        for (size_t i = 0; i < n; i++) {
                const Column *c = &g_array_index(t->columns, Column, g_array_index(shown, size_t, i));

                /* The title counts without the header too: --no-legend does not move the columns. */
                widths[i] = MAX(widths[i], MAX(c->minimum_width, ctl_visible_width(c->header ?: "")));
        }

        if (header) {
                g_autofree const char **titles = g_new0(const char *, n + 1);

                for (size_t i = 0; i < n; i++)
                        titles[i] = g_array_index(t->columns, Column, g_array_index(shown, size_t, i)).header ?: "";
                print_line(out, first_prefix, shown, titles, colors, widths, ctl_color(CTL_COLOR_BOLD));
        }
        for (size_t r = 0; r < rows; r++) {
                for (size_t i = 0; i < n; i++)
                        colors[i] = cell_at(t, r, g_array_index(shown, size_t, i))->color;
                print_line(out, header || r > 0 ? prefix : first_prefix, shown, g_ptr_array_index(texts, r), colors, widths, NULL);
        }
}

void ctl_table_print(const CtlTable *t, CtlOutput *out, bool header) {
        print_table(t, out, header, "", "");
}

void ctl_table_print_block(const CtlTable *t, CtlOutput *out, const char *first_prefix, const char *prefix) {
        print_table(t, out, false, first_prefix, prefix);
}

/* The first column with a title names the rows. */
static size_t id_column(const CtlTable *t) {
        for (size_t i = 0; i < t->columns->len; i++)
                if (g_array_index(t->columns, Column, i).header)
                        return i;
        g_assert_not_reached();
}

static void print_keyed_line(CtlOutput *out, const char *key, const char *value, bool value_only) {
        if (value_only)
                ctl_printf(out, "%s\n", value);
        else
                ctl_printf(out, "%s=%s\n", key, value);
}

void ctl_table_print_keyed(const CtlTable *t, CtlOutput *out, const char *name, bool list, bool value_only) {
        size_t rows = ctl_table_rows(t), id = id_column(t);
        g_auto(GStrv) ids = g_new0(char *, rows + 1);

        for (size_t r = 0; r < rows; r++)
                ids[r] = ctl_table_cell_text(t, r, id);
        if (list) {
                g_autofree char *joined = g_strjoinv(" ", ids);

                print_keyed_line(out, name, joined, value_only);
        }
        for (size_t r = 0; r < rows; r++)
                for (size_t i = id + 1; i < t->columns->len; i++) {
                        const char *header = g_array_index(t->columns, Column, i).header;
                        const Cell *c = cell_at(t, r, i);
                        g_autofree char *key = NULL, *text = NULL;

                        if (!header)
                                continue;
                        /* A dictionary's members stand for the column, each under its own name. */
                        for (size_t m = 0; c->keys && c->keys[m]; m++) {
                                g_autofree char *member = g_strdup_printf("%s.%s.%s", name, ids[r], c->keys[m]);

                                print_keyed_line(out, member, c->texts[m], value_only);
                        }
                        if (c->keys)
                                continue;
                        key = g_strdup_printf("%s.%s.%s", name, ids[r], header);
                        text = ctl_table_cell_text(t, r, i);
                        print_keyed_line(out, key, text, value_only);
                }
}

void ctl_table_print_lines(const CtlTable *t, CtlOutput *out, const char *name, bool value_only) {
        g_autoptr(GArray) shown = shown_columns(t);
        size_t rows = ctl_table_rows(t);

        if (rows == 0)
                print_keyed_line(out, name, "", value_only);
        for (size_t r = 0; r < rows; r++) {
                g_auto(GStrv) texts = g_new0(char *, shown->len + 1);
                g_autofree char *line = NULL;

                for (guint i = 0; i < shown->len; i++)
                        texts[i] = ctl_table_cell_text(t, r, g_array_index(shown, size_t, i));
                line = g_strjoinv(" ", texts);
                print_keyed_line(out, name, line, value_only);
        }
}

void ctl_table_row_to_json(const CtlTable *t, size_t row, CtlJson *j) {
        for (size_t i = 0; i < t->columns->len; i++) {
                const char *key = g_array_index(t->columns, Column, i).json_key;
                const Cell *c = cell_at(t, row, i);

                if (!key)
                        continue;
                switch (c->type) {
                case CELL_STRING:
                        ctl_json_string(j, key, c->string);
                        break;
                case CELL_JSON:
                        ctl_json_raw(j, key, c->string);
                        break;
                case CELL_TIME:
                        ctl_json_time(j, key, c->number);
                        break;
                }
        }
}

void ctl_table_to_json(const CtlTable *t, CtlJson *j, const char *key) {
        ctl_json_begin_array(j, key);
        for (size_t r = 0; r < ctl_table_rows(t); r++) {
                ctl_json_begin_object(j, NULL);
                ctl_table_row_to_json(t, r, j);
                ctl_json_end_object(j);
        }
        ctl_json_end_array(j);
}

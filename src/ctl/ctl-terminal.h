/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "util.h"

/* thpd-ctl's text output: colours, glyphs, and lines cut at the terminal's width. */

/* Whether to colour stdout: SYSTEMD_COLORS=0|1 (or another boolean, or 16, 256, 24bit) decides
 * when set; else no colour with NO_COLOR, TERM=dumb, or when stdout is not a terminal. */
bool ctl_use_color(void);

typedef enum CtlGlyph {
        CTL_GLYPH_BULLET, /* ● or * */
        CTL_GLYPH_DASH,   /* — or - */
        CTL_GLYPH_ARROW,  /* → or -> */
        CTL_GLYPH_ELLIPSIS, /* … or ... */
        _CTL_GLYPH_MAX,
} CtlGlyph;

/* The glyph, or its ASCII stand-in when the locale's character set is not UTF-8 (the C locale
 * counts as UTF-8, as for systemd: it is what services and tests run with). */
const char *ctl_glyph(CtlGlyph g);

typedef enum CtlColor {
        CTL_COLOR_NORMAL,
        CTL_COLOR_BOLD,
        CTL_COLOR_GREEN,
        CTL_COLOR_YELLOW,
        CTL_COLOR_RED,
        CTL_COLOR_GREY,
        _CTL_COLOR_MAX,
} CtlColor;

/* The escape sequence for c, or "" when colour is off. */
const char *ctl_color(CtlColor c);

/* The columns s takes on a terminal: escape sequences none, a wide character two. */
size_t ctl_visible_width(const char *s);

/* line cut to columns visible characters (escape sequences take none, a wide character two)
 * with an ellipsis, as systemctl does; or a copy when it fits. */
char *ctl_cut_line(const char *line, size_t columns);

/* Where a verb writes its text. With columns > 0, every line is cut at that width as it is
 * finished; the unfinished one waits in line. */
typedef struct CtlOutput {
        FILE *f;
        size_t columns; /* 0: lines are written as they come */
        GString *line;
        bool failed;
} CtlOutput;

/* Output written to file as it comes, for a stream that is never cut (stderr). */
#define CTL_OUTPUT_UNCUT(file) (&(CtlOutput) { .f = (file) })

void ctl_output_init(CtlOutput *out, FILE *f, size_t columns);
/* The width to cut f's lines at: COLUMNS, else the terminal's; 0 when f is not a terminal. */
size_t ctl_output_columns(FILE *f);
void ctl_printf(CtlOutput *out, const char *format, ...) _printf_(2, 3);
void ctl_vprintf(CtlOutput *out, const char *format, va_list ap) _printf_(2, 0);
void ctl_puts(CtlOutput *out, const char *s);
/* Flushes f; returns 0, or -EIO when a write failed. The unfinished line still waits. */
int ctl_output_flush(CtlOutput *out);
/* Writes the unfinished line (cut, without a newline), flushes and frees; returns 0 or -EIO.
 * Without cutting there is nothing to do: the verbs flush f themselves. */
int ctl_output_done(CtlOutput *out);

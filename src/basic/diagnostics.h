/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <stdio.h>

#include "util.h"

/* Problems found in configuration files, kept as "FILE:LINE: level: message" so that the daemon
 * can log them and `thpd-ctl verify` can print them with the same wording. */

typedef enum DiagnosticLevel {
        DIAGNOSTIC_WARNING,
        DIAGNOSTIC_ERROR,
} DiagnosticLevel;

typedef struct Diagnostic {
        char *file;
        unsigned line; /* 0: the whole file */
        DiagnosticLevel level;
        char *message;
} Diagnostic;

typedef struct Diagnostics {
        GPtrArray *items; /* Diagnostic* */
        unsigned n_errors;
        unsigned n_warnings;
} Diagnostics;

void diagnostics_init(Diagnostics *d);
void diagnostics_clear(Diagnostics *d);
void diagnostics_add(Diagnostics *d, DiagnosticLevel level, const char *file, unsigned line,
                     const char *format, ...) _printf_(5, 6);
/* "FILE:LINE: error: message" (or "FILE: ..." for line 0); caller frees. */
char *diagnostic_format(const Diagnostic *diag);
void diagnostics_print(const Diagnostics *d, FILE *f);
/* Sends every diagnostic to the log at warning/error level. */
void diagnostics_log(const Diagnostics *d);

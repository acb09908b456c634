/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdarg.h>

#include "diagnostics.h"
#include "log.h"

static void diagnostic_free(gpointer p) {
        Diagnostic *diag = p;

        if (!diag)
                return;
        g_free(diag->file);
        g_free(diag->message);
        g_free(diag);
}

void diagnostics_init(Diagnostics *d) {
        *d = (Diagnostics) { .items = g_ptr_array_new_with_free_func(diagnostic_free) };
}

void diagnostics_clear(Diagnostics *d) {
        if (!d)
                return;
        g_clear_pointer(&d->items, g_ptr_array_unref);
        d->n_errors = d->n_warnings = 0;
}

void diagnostics_add(Diagnostics *d, DiagnosticLevel level, const char *file, unsigned line,
                     const char *format, ...) {
        Diagnostic *diag;
        va_list ap;

        if (!d)
                return;

        diag = g_new0(Diagnostic, 1);
        diag->file = g_strdup(file);
        diag->line = line;
        diag->level = level;
        va_start(ap, format);
        diag->message = g_strdup_vprintf(format, ap);
        va_end(ap);

        g_ptr_array_add(d->items, diag);
        if (level == DIAGNOSTIC_ERROR)
                d->n_errors++;
        else
                d->n_warnings++;
}

char *diagnostic_format(const Diagnostic *diag) {
        const char *level = diag->level == DIAGNOSTIC_ERROR ? "error" : "warning";

        if (diag->line > 0)
                return g_strdup_printf("%s:%u: %s: %s", diag->file, diag->line, level, diag->message);
        return g_strdup_printf("%s: %s: %s", diag->file, level, diag->message);
}

void diagnostics_print(const Diagnostics *d, FILE *f) {
        for (guint i = 0; d->items && i < d->items->len; i++) {
                g_autofree char *line = diagnostic_format(g_ptr_array_index(d->items, i));
                fprintf(f, "%s\n", line);
        }
}

void diagnostics_log(const Diagnostics *d) {
        for (guint i = 0; d->items && i < d->items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(d->items, i);
                g_autofree char *line = diagnostic_format(diag);

                log_full(diag->level == DIAGNOSTIC_ERROR ? LOG_ERR : LOG_WARNING, "%s", line);
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy drop-in parser (policy_parse_text): what a package or an admin puts into
 * policy.d/. On success the parsed policy is matched against unit names, which exercises the
 * globs and the template rule with whatever Units= the input declared. The same input is fed
 * once more in small pieces, as policy_load() feeds what it reads, and must give the same
 * verdict and diagnostics: where a read ends must not matter. */
#include <stdio.h>
#include <stdlib.h>

#include "diagnostics.h"
#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

static char *format_all(const Diagnostics *diag) {
        g_autoptr(GString) s = g_string_new(NULL);

        for (guint i = 0; i < diag->items->len; i++) {
                g_autofree char *line = diagnostic_format(g_ptr_array_index(diag->items, i));

                g_string_append_printf(s, "%s\n", line);
        }
        return g_string_free(g_steal_pointer(&s), false);
}

/* Pieces of 1 to 7 bytes (from the input's size, so that a crash reproduces), fed until the
 * parser wants no more. */
static int parse_in_pieces(const uint8_t *data, size_t size, Diagnostics *diag, Policy **ret) {
        g_autoptr(PolicyParser) parser = NULL;
        size_t piece = size % 7 + 1;

        if (policy_parser_new("fuzz.conf", 0, diag, &parser) < 0)
                abort();
        for (size_t i = 0; i < size; i += piece)
                if (policy_parser_feed(parser, (const char *) data + i, MIN(piece, size - i)) == 0)
                        break;
        return policy_parser_finish(parser, ret);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const units[] = {
                "redis-server.service", "redis-server@6380.service", "postgresql@15-main.service",
                "a.service", "@.service", "x@.service", "", NULL,
        };
        g_autoptr(Policy) p = NULL, q = NULL;
        g_autofree char *whole = NULL, *pieces = NULL;
        Diagnostics diag;
        int r;

        diagnostics_init(&diag);
        r = policy_parse_text((const char *) data, size, "fuzz.conf", 0, &diag, &p);
        if (r >= 0) {
                for (size_t i = 0; units[i]; i++)
                        (void) policy_matches_unit(p, units[i]);
                for (char **u = p->units; *u; u++)
                        (void) policy_matches_unit(p, *u);
        }
        whole = format_all(&diag);
        diagnostics_clear(&diag);

        diagnostics_init(&diag);
        if (parse_in_pieces(data, size, &diag, &q) != r)
                abort();
        pieces = format_all(&diag);
        diagnostics_clear(&diag);
        if (!streq(whole, pieces))
                abort();
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The policy drop-in parser (policy_parse_file): what a package or an admin puts into
 * policy.d/. On success the parsed policy is matched against unit names, which exercises the
 * globs and the template rule with whatever Units= the input declared. */
#include <stdio.h>
#include <stdlib.h>

#include "diagnostics.h"
#include "fuzz.h"
#include "policy.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        static const char *const units[] = {
                "redis-server.service", "redis-server@6380.service", "postgresql@15-main.service",
                "a.service", "@.service", "x@.service", "", NULL,
        };
        g_autoptr(Policy) p = NULL;
        Diagnostics diag;
        FILE *f;

        /* fmemopen() refuses a zero-length buffer; an empty file is tested through a real one. */
        f = size > 0 ? fmemopen((void *) data, size, "r") : fopen("/dev/null", "re");
        if (!f)
                abort();

        diagnostics_init(&diag);
        if (policy_parse_file(f, "fuzz.conf", 0, &diag, &p) >= 0) {
                for (size_t i = 0; units[i]; i++)
                        (void) policy_matches_unit(p, units[i]);
                for (char **u = p->units; *u; u++)
                        (void) policy_matches_unit(p, *u);
        }
        for (guint i = 0; i < diag.items->len; i++)
                g_free(diagnostic_format(g_ptr_array_index(diag.items, i)));
        diagnostics_clear(&diag);
        fclose(f);
        return 0;
}

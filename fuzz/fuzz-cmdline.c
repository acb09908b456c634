/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The kernel command line's THP parameters (/proc/cmdline): a boot loader, an admin or a root
 * moved for tests can put anything there. Parsed once against this machine's sizes (6.18, x86-64:
 * 16 kB to 2 MB) and once against every size of the table. */
#include <stdlib.h>

#include "cmdline.h"
#include "fuzz.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_string(data, size);
        bool present[_KNOB_MAX];
        CmdlineThp c;

        FOREACH_KNOB(k)
                present[k] = !knob_is_mthp(k) || (knob_mthp_size_kb(k) >= 16 && knob_mthp_size_kb(k) <= 2048);
        (void) cmdline_parse_thp(s, present, &c);
        (void) cmdline_parse_thp(s, NULL, &c);
        free(s);
        return 0;
}

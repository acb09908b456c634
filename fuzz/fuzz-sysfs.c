/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What thpd reads back from sysfs: every knob's value parser (knob_value_from_sysfs: the
 * kernel's "always [madvise] never", a bare word, a number) and the hugetlb pool files
 * (sysfs_parse_pool_number). A parsed value must print and parse back to itself, both as
 * sysfs content and as a user's value. */
#include <stdlib.h>

#include "fuzz.h"
#include "knob.h"
#include "sysfs.h"

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        char *s = fuzz_string(data, size);
        uint64_t pages;

        FOREACH_KNOB(k) {
                KnobValue v, again;
                const char *text;
                char buf[24];

                if (knob_value_from_sysfs(k, s, &v) < 0)
                        continue;
                text = knob_value_to_string(k, v, buf);
                if (knob_value_from_sysfs(k, text, &again) < 0 || again != v)
                        abort();
                if (knob_value_from_string(k, text, &again) < 0 || again != v)
                        abort();
        }
        (void) sysfs_parse_pool_number(s, &pages);
        free(s);
        return 0;
}

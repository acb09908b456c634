/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdlib.h>
#include <string.h>
#include <syslog.h>

#include "fuzz.h"
#include "log.h"

char *fuzz_string(const uint8_t *data, size_t size) {
        char *s = malloc(size + 1);

        if (!s)
                abort();
        if (size > 0)
                memcpy(s, data, size);
        s[size] = '\0';
        return s;
}

void fuzz_quiet_log(void) {
        if (!getenv("THPD_FUZZ_LOG"))
                log_set_max_level(LOG_EMERG);
}

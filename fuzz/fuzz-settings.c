/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The thpd.conf parser (settings_load_files), with its [Daemon], [Baseline*] and [Storm]
 * sections. It reads files by path, so the input goes into a memfd that it opens through
 * /proc/self/fd. Two paths: the second file overrides the first key by key. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "diagnostics.h"
#include "fuzz.h"
#include "settings.h"

static int memfd = -1;
static char path[64];

int LLVMFuzzerInitialize(int *argc, char ***argv) {
        fuzz_quiet_log();
        memfd = memfd_create("thpd.conf", MFD_CLOEXEC);
        if (memfd < 0)
                abort();
        snprintf(path, sizeof path, "/proc/self/fd/%d", memfd);
        return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        const char *const paths[] = { path, path, NULL };
        Diagnostics diag;
        Settings s;

        if (ftruncate(memfd, 0) < 0 || pwrite(memfd, data, size, 0) != (ssize_t) size)
                abort();

        settings_init(&s);
        diagnostics_init(&diag);
        (void) settings_load_files(&s, paths, &diag);
        for (guint i = 0; i < diag.items->len; i++)
                g_free(diagnostic_format(g_ptr_array_index(diag.items, i)));
        diagnostics_clear(&diag);
        settings_done(&s);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stddef.h>
#include <stdint.h>

/* The libFuzzer entry points (built with -fsanitize=fuzzer; see fuzz/meson.build). */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* The input as a NUL-terminated string (an embedded NUL ends it, as read_small_file() would
 * refuse such a file anyway); free with free(). */
char *fuzz_string(const uint8_t *data, size_t size);

/* Silences thpd's log unless THPD_FUZZ_LOG is set: millions of inputs would flood stderr. */
void fuzz_quiet_log(void);

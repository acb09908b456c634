/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>

#include "knob.h"

/* The THP boot parameters of the kernel command line (/proc/cmdline), read as the kernel reads
 * them (lib/cmdline.c next_arg(), init/main.c obsolete_checksetup(), mm/huge_memory.c and
 * mm/shmem.c), so that thpd can say which baseline values the command line chose. Pure: the
 * adapter (procfs.h) reads the file. */

typedef enum CmdlineParam {
        CMDLINE_TRANSPARENT_HUGEPAGE,       /* the global enabled */
        CMDLINE_THP_ANON,                   /* per-size enabled (6.12) */
        CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM, /* the global shmem_enabled (6.13) */
        CMDLINE_THP_SHMEM,                  /* per-size shmem_enabled (6.13) */
        CMDLINE_TRANSPARENT_HUGEPAGE_TMPFS, /* the huge= default of tmpfs mounts (6.14): no knob */
        _CMDLINE_PARAM_MAX,
        _CMDLINE_PARAM_INVALID = -EINVAL,
} CmdlineParam;

/* "thp_anon=", with the "=". */
const char *cmdline_param_to_string(CmdlineParam p);

/* A word of the per-size shmem_enabled files and of the tmpfs default, as long as the longest
 * ("within_size") and its NUL. */
#define CMDLINE_WORD_MAX 12

typedef struct CmdlineThp {
        /* Per knob, the parameter that set its value at boot (_CMDLINE_PARAM_INVALID: none) and
         * that value. A thp_anon= that took effect sets every per-size enabled knob: the sizes
         * it does not list, the PMD size too, start as never. */
        CmdlineParam origin[_KNOB_MAX];
        KnobValue value[_KNOB_MAX];
        bool thp_anon;
        /* As with thp_anon=, a thp_shmem= that took effect sets every per-size shmem_enabled
         * knob, and the sizes it does not list start as never. */
        bool thp_shmem;
        char tmpfs[CMDLINE_WORD_MAX];  /* transparent_hugepage_tmpfs=; "" for none */
        unsigned n_ignored;            /* THP parameters the kernel ignores (it logs a warning) */
} CmdlineThp;

/* Parses the content of /proc/cmdline. present, the knobs this kernel has (NULL: all): the
 * kernel refuses a whole thp_anon= that names a size without a per-size enabled file. A
 * malformed parameter is what the kernel ignores, counted in n_ignored, not an error. -EINVAL
 * only for a NULL cmdline. */
int cmdline_parse_thp(const char *cmdline, const bool *present, CmdlineThp *ret);

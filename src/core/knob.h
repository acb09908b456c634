/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <errno.h>
#include <stdbool.h>
#include <stdint.h>

/* The one table of kernel settings thpd manages. Parsing, resolution, the sysfs layer, D-Bus and
 * the CLI all go through it, so a knob is added in exactly one place. The enum order is also the
 * write order: the global shmem_enabled comes before any per-size knob because the kernel
 * interlocks shmem "force" with per-size "inherit" (and after them on its way to "force", the one
 * exception, knob_write_order()). */

/* Per-size (mTHP) knobs get one slot per power of two from 8 kB to 16 GB; only the sizes the
 * running kernel exposes are ever probed present. Each per-size file has its own range of slots:
 * hugepages-<N>kB/enabled from KNOB_MTHP_FIRST, hugepages-<N>kB/shmem_enabled from
 * KNOB_MTHP_SHMEM_FIRST. */
#define KNOB_MTHP_SLOTS 22
#define KNOB_MTHP_MIN_KB UINT64_C(8)

typedef enum Knob {
        KNOB_ENABLED,
        KNOB_DEFRAG,
        KNOB_SHMEM_ENABLED,
        KNOB_KHUGEPAGED_DEFRAG,
        KNOB_KHUGEPAGED_MAX_PTES_NONE,
        KNOB_KHUGEPAGED_MAX_PTES_SWAP,
        KNOB_KHUGEPAGED_MAX_PTES_SHARED,
        KNOB_KHUGEPAGED_PAGES_TO_SCAN,
        KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS,
        KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS,
        KNOB_SHRINK_UNDERUSED,
        KNOB_USE_ZERO_PAGE,
        KNOB_MTHP_FIRST,
        /* After the global shmem_enabled: the kernel refuses "inherit" on a size other than the PMD
         * size while the global one is "force". Last: resolve() reads the global value first. */
        KNOB_MTHP_SHMEM_FIRST = KNOB_MTHP_FIRST + KNOB_MTHP_SLOTS,
        _KNOB_MAX = KNOB_MTHP_SHMEM_FIRST + KNOB_MTHP_SLOTS,
        _KNOB_INVALID = -EINVAL,
} Knob;

typedef enum KnobKind {
        KNOB_KIND_WORD,   /* one of a fixed word list, shown by the kernel as "a [b] c" */
        KNOB_KIND_NUMBER, /* a plain unsigned decimal */
} KnobKind;

/* A knob's value: for words the index into KnobInfo.words, for numbers the number itself. */
typedef int64_t KnobValue;
#define KNOB_VALUE_UNSET INT64_C(-1)

/* The words of "enabled" (and of the per-size enabled knobs, which add "inherit") as values,
 * for the rules that tell them apart: strictest first, as knob.c lists them. */
enum {
        KNOB_ENABLED_NEVER,
        KNOB_ENABLED_MADVISE,
        KNOB_ENABLED_ALWAYS,
};

/* The word index of "inherit" in per-size enabled knobs: it takes the strictness of the global
 * "enabled" value it inherits. */
#define KNOB_MTHP_INHERIT 3
/* The same in per-size shmem_enabled knobs, which borrow from the global "shmem_enabled". */
#define KNOB_MTHP_SHMEM_INHERIT 4

/* Character arrays and a word list number, not pointers: in a position-independent executable
 * the dynamic loader writes every pointer of a table at start (.data.rel.ro), which turns the
 * table's pages into private memory of each thpd process; arrays stay in shared .rodata. */
typedef struct KnobInfo {
        char name[35];            /* path below transparent_hugepage/, and the name users type */
        char section[21];         /* policy file section */
        char key[20];             /* policy file key */
        KnobKind kind;
        uint8_t word_list;        /* KNOB_KIND_WORD: the words, see knob_word() */
        bool higher_is_stricter;  /* KNOB_KIND_NUMBER */
        uint64_t min, max;        /* KNOB_KIND_NUMBER: accepted range */
} KnobInfo;

const KnobInfo *knob_info(Knob k);
static inline const char *knob_name(Knob k) {
        return knob_info(k)->name;
}

/* Word i of a KNOB_KIND_WORD knob, strictest first (the value i stands for); NULL past the last
 * word, and for a number knob. */
const char *knob_word(const KnobInfo *info, KnobValue i);

/* Whether k is a per-size knob of either range: hugepages-<N>kB/enabled or .../shmem_enabled. */
bool knob_is_mthp(Knob k);
bool knob_is_mthp_shmem(Knob k);
/* The page size of a per-size knob of either range; 0 for another knob. */
uint64_t knob_mthp_size_kb(Knob k);
/* The hugepages-<N>kB/enabled knob of a size; knob_mthp_shmem_from_size_kb() its shmem_enabled. */
int knob_mthp_from_size_kb(uint64_t size_kb, Knob *ret);
int knob_mthp_shmem_from_size_kb(uint64_t size_kb, Knob *ret);
/* The global knob whose value a per-size "inherit" takes: KNOB_ENABLED or KNOB_SHMEM_ENABLED;
 * _KNOB_INVALID for a knob without "inherit". */
Knob knob_inherits_from(Knob k);

/* Looks up "enabled", "khugepaged/defrag", "hugepages-64kB/enabled", "hugepages-64kB/shmem_enabled". */
int knob_from_name(const char *name, Knob *ret);
/* Looks up a policy file key ("TransparentHugePages", "Enabled.64K"). Section match is exact,
 * key match is case-sensitive like systemd's. Returns -ENOENT for an unknown key. */
int knob_from_policy_key(const char *section, const char *key, Knob *ret);

/* Parses a value as a user writes it (policy, override). -EINVAL for an unknown word or a
 * non-number, -ERANGE for a number outside the knob's range. */
int knob_value_from_string(Knob k, const char *s, KnobValue *ret);
/* Parses what the kernel shows: "always [madvise] never", a bare word, or a number. */
int knob_value_from_sysfs(Knob k, const char *content, KnobValue *ret);
/* The word or decimal number; "(unset)" for KNOB_VALUE_UNSET. buf must hold 24 bytes. */
const char *knob_value_to_string(Knob k, KnobValue v, char buf[static 24]);

/* Negative if a is stricter than b, positive if looser, 0 if equally strict. For a per-size
 * knob, "inherit" counts as global, the value of knob_inherits_from(k) (KNOB_VALUE_UNSET: as
 * the strictest). Both a and b must be set. */
int knob_compare_strictness(Knob k, KnobValue a, KnobValue b, KnobValue global);

/* The order to write knobs in toward the values target (KNOB_VALUE_UNSET: not written): the
 * enum order, except that a global shmem_enabled about to become "force" comes after the
 * per-size shmem knobs, since the kernel refuses "force" while a size other than the PMD size
 * inherits, as it refuses "inherit" there while the global is "force". Fills ret with every knob
 * once. */
void knob_write_order(const KnobValue target[static _KNOB_MAX], Knob ret[static _KNOB_MAX]);

/* Lists the accepted values for an error message: "never, madvise, always" or "0-511". */
const char *knob_describe_values(Knob k, char buf[static 96]);

#define FOREACH_KNOB(k) for (Knob k = 0; k < _KNOB_MAX; k++)

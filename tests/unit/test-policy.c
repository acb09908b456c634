/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "policy-dirs.h"
#include "policy.h"
#include "test-util.h"
#include "util.h"

#define PATH "test.conf"

static int parse_bytes(const char *data, size_t size, Diagnostics *d, Policy **ret) {
        return policy_parse_text(data, size, PATH, 0, d, ret);
}

static int parse(const char *text, Diagnostics *d, Policy **ret) {
        return parse_bytes(text, strlen(text), d, ret);
}

/* As thpd-ctl verify parses. */
static int parse_strict(const char *text, Diagnostics *d, Policy **ret) {
        return policy_parse_text(text, strlen(text), PATH, POLICY_PARSE_STRICT, d, ret);
}

/* Fails unless a diagnostic of this level sits at exactly this line and mentions "needle". */
static void assert_diag(const Diagnostics *d, DiagnosticLevel level, unsigned line, const char *needle) {
        for (guint i = 0; i < d->items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(d->items, i);

                if (diag->level == level && diag->line == line && streq(diag->file, PATH) &&
                    strstr(diag->message, needle))
                        return;
        }
        ck_abort_msg("no %s at line %u mentioning '%s'", level == DIAGNOSTIC_ERROR ? "error" : "warning", line,
                     needle);
}

static KnobValue word(Knob k, const char *s) {
        KnobValue v;

        ck_assert_int_eq(knob_value_from_string(k, s, &v), 0);
        return v;
}

static Knob mthp(uint64_t kb) {
        Knob k;

        ck_assert_int_eq(knob_mthp_from_size_kb(kb, &k), 0);
        return k;
}

static Knob mthp_shmem(uint64_t kb) {
        Knob k;

        ck_assert_int_eq(knob_mthp_shmem_from_size_kb(kb, &k), 0);
        return k;
}

START_TEST(test_good_every_key) {
        static const char text[] =
                "# A comment\n"                                   /* 1 */
                "; another comment\n"                             /* 2 */
                "[Policy]\n"                                      /* 3 */
                "Description=Test policy\n"                       /* 4 */
                "Units=a.service b@.service c-*.service\n"        /* 5 */
                "\n"                                              /* 6 */
                "[TransparentHugePages]\n"                        /* 7 */
                "Enabled=never\n"                                 /* 8 */
                "Defrag=defer+madvise\n"                          /* 9 */
                "ShmemEnabled=advise\n"                           /* 10 */
                "Enabled.64K=inherit\n"                           /* 11 */
                "Enabled.2M=madvise\n"                            /* 12 */
                "ShmemEnabled.64K=within_size\n"                  /* 13 */
                "ShmemEnabled.2M=inherit\n"                       /* 14 */
                "ShrinkUnderused=no\n"                            /* 15 */
                "UseZeroPage=0\n"                                 /* 16 */
                "[Khugepaged]\n"                                  /* 17 */
                "Defrag=0\n"                                      /* 18 */
                "MaxPtesNone=0\n"                                 /* 19 */
                "MaxPtesSwap=32\n"                                /* 20 */
                "MaxPtesShared=128\n"                             /* 21 */
                "PagesToScan=2048\n"                              /* 22 */
                "ScanSleepMillisecs=30000\n"                      /* 23 */
                "AllocSleepMillisecs=120000\n"                    /* 24 */
                "[HugeTLB]\n"                                     /* 25 */
                "Size=8G\n"                                       /* 26 */
                "PageSize=2M\n"                                   /* 27 */
                "Node=1\n";                                       /* 28 */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        ck_assert_uint_eq(d.items->len, 0);

        ck_assert_str_eq(p->name, PATH);
        ck_assert_str_eq(p->path, PATH);
        ck_assert_str_eq(p->description, "Test policy");
        ck_assert_uint_eq(g_strv_length(p->units), 3);
        ck_assert_str_eq(p->units[0], "a.service");
        ck_assert_str_eq(p->units[1], "b@.service");
        ck_assert_str_eq(p->units[2], "c-*.service");

        ck_assert_int_eq(p->knobs[KNOB_ENABLED], word(KNOB_ENABLED, "never"));
        ck_assert_uint_eq(p->knob_lines[KNOB_ENABLED], 8);
        ck_assert_int_eq(p->knobs[KNOB_DEFRAG], word(KNOB_DEFRAG, "defer+madvise"));
        ck_assert_int_eq(p->knobs[KNOB_SHMEM_ENABLED], word(KNOB_SHMEM_ENABLED, "advise"));
        ck_assert_int_eq(p->knobs[mthp(64)], KNOB_MTHP_INHERIT);
        ck_assert_uint_eq(p->knob_lines[mthp(64)], 11);
        ck_assert_int_eq(p->knobs[mthp(2048)], word(mthp(2048), "madvise"));
        ck_assert_int_eq(p->knobs[mthp(128)], KNOB_VALUE_UNSET);
        ck_assert_uint_eq(p->knob_lines[mthp(128)], 0);
        ck_assert_int_eq(p->knobs[mthp_shmem(64)], word(mthp_shmem(64), "within_size"));
        ck_assert_uint_eq(p->knob_lines[mthp_shmem(64)], 13);
        ck_assert_int_eq(p->knobs[mthp_shmem(2048)], KNOB_MTHP_SHMEM_INHERIT);
        ck_assert_int_eq(p->knobs[mthp_shmem(128)], KNOB_VALUE_UNSET);
        ck_assert_int_eq(p->knobs[KNOB_SHRINK_UNDERUSED], 0);
        ck_assert_uint_eq(p->knob_lines[KNOB_SHRINK_UNDERUSED], 15);
        ck_assert_int_eq(p->knobs[KNOB_USE_ZERO_PAGE], 0);
        ck_assert_uint_eq(p->knob_lines[KNOB_USE_ZERO_PAGE], 16);

        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_DEFRAG], 0);
        ck_assert_uint_eq(p->knob_lines[KNOB_KHUGEPAGED_DEFRAG], 18);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_MAX_PTES_NONE], 0);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_MAX_PTES_SWAP], 32);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_MAX_PTES_SHARED], 128);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_PAGES_TO_SCAN], 2048);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_SCAN_SLEEP_MILLISECS], 30000);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS], 120000);
        ck_assert_uint_eq(p->knob_lines[KNOB_KHUGEPAGED_ALLOC_SLEEP_MILLISECS], 24);

        ck_assert(p->has_pool);
        ck_assert_uint_eq(p->pool.page_size_kb, 2048);
        ck_assert_uint_eq(p->pool.pages, 4096);
        ck_assert_int_eq(p->pool.node, 1);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_pools) {
        static const struct {
                const char *hugetlb;
                uint64_t page_size_kb, pages;
        } cases[] = {
                { "Pages=4103\n", 2048, 4103 },
                { "Size=3M\n", 2048, 2 },             /* rounded up to whole pages */
                { "Size=4M\n", 2048, 2 },
                { "PageSize=1G\nSize=1500M\n", 1048576, 2 },
                { "Size=2G\nPageSize=1G\n", 1048576, 2 }, /* PageSize= may come after Size= */
                { "PageSize=64K\nPages=1\n", 64, 1 },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                g_autofree char *text = g_strconcat("[Policy]\nUnits=a.service\n[HugeTLB]\n", cases[i].hugetlb, NULL);
                g_autoptr(Policy) p = NULL;
                Diagnostics d;

                diagnostics_init(&d);
                ck_assert_int_eq(parse(text, &d, &p), 0);
                ck_assert_uint_eq(d.items->len, 0);
                ck_assert(p->has_pool);
                ck_assert_uint_eq(p->pool.page_size_kb, cases[i].page_size_kb);
                ck_assert_uint_eq(p->pool.pages, cases[i].pages);
                ck_assert_int_eq(p->pool.node, POOL_NODE_ANY);
                /* A pool-only policy votes on no knob. */
                FOREACH_KNOB(k)
                        ck_assert_int_eq(p->knobs[k], KNOB_VALUE_UNSET);
                diagnostics_clear(&d);
        }
}
END_TEST

START_TEST(test_knob_only_has_no_pool) {
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[Khugepaged]\nDefrag=no\n", &d, &p), 0);
        ck_assert(!p->has_pool);
        ck_assert_ptr_null(p->description);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_DEFRAG], 0);
        diagnostics_clear(&d);
}
END_TEST

/* Resolution skips the knobs unset_knobs names: a bit wrongly set would drop a vote. */
START_TEST(test_unset_knobs) {
        static const char *const texts[] = {
                "[Policy]\nUnits=a.service\n[TransparentHugePages]\nDefrag=madvise\n",
                "[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\nEnabled.2M=madvise\n"
                "[Khugepaged]\nAllocSleepMillisecs=120000\n",
                "[Policy]\nUnits=a.service\nScope=service\n[TransparentHugePages]\nEnabled=never\n",
                "[Policy]\nUnits=a.service\n[HugeTLB]\nPages=16\n",
        };

        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                g_autoptr(Policy) p = NULL;
                Diagnostics d;

                diagnostics_init(&d);
                ck_assert_int_eq(parse(texts[i], &d, &p), 0);
                FOREACH_KNOB(k)
                        ck_assert_int_eq(!!(p->unset_knobs & (UINT64_C(1) << k)), p->knobs[k] == KNOB_VALUE_UNSET);
                diagnostics_clear(&d);
        }
}
END_TEST

START_TEST(test_empty_file) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "empty.conf", NULL);
        Policy *p = NULL;
        Diagnostics d;

        test_write_file(dir, "empty.conf", "");
        diagnostics_init(&d);
        ck_assert_int_eq(policy_load(path, 0, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 1);
        ck_assert_str_eq(((Diagnostic *) g_ptr_array_index(d.items, 0))->file, path);
        ck_assert_uint_eq(((Diagnostic *) g_ptr_array_index(d.items, 0))->line, 0);
        ck_assert_ptr_nonnull(strstr(((Diagnostic *) g_ptr_array_index(d.items, 0))->message, "empty"));
        diagnostics_clear(&d);
        test_rm_rf(dir);
}
END_TEST

START_TEST(test_missing_file) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(policy_load("/nonexistent/thpd/x.conf", 0, &d, &p), -ENOENT);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);
}
END_TEST

/* A FIFO in place of a policy (swapped in after the directory scan) reads as empty at once:
 * without O_NONBLOCK the open() would wait for a writer forever. */
START_TEST(test_fifo) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "fifo.conf", NULL);
        Policy *p = NULL;
        Diagnostics d;

        ck_assert_int_eq(mkfifo(path, 0644), 0);
        diagnostics_init(&d);
        ck_assert_int_eq(policy_load(path, 0, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 1);
        ck_assert_str_eq(((Diagnostic *) g_ptr_array_index(d.items, 0))->file, path);
        diagnostics_clear(&d);
        test_rm_rf(dir);
}
END_TEST

/* A big file that is no policy: 50 errors and one saying the rest is not read, not one per
 * line (thousands at every reload). */
START_TEST(test_error_limit) {
        g_autofree char *dir = test_mkdtemp();
        g_autofree char *path = g_build_filename(dir, "big.conf", NULL);
        g_autoptr(GString) text = g_string_new("[Policy]\nUnits=a.service\n");
        const Diagnostic *last;
        Policy *p = NULL;
        Diagnostics d;

        for (unsigned i = 0; i < 5000; i++)
                g_string_append_printf(text, "no equals sign on line %u\n", i + 3);
        test_write_file(dir, "big.conf", text->str);
        diagnostics_init(&d);
        ck_assert_int_eq(policy_load(path, 0, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        ck_assert_uint_eq(d.n_errors, 51);
        last = g_ptr_array_index(d.items, d.items->len - 1);
        ck_assert_ptr_nonnull(strstr(last->message, "too many errors"));
        ck_assert_uint_eq(last->line, 52);
        diagnostics_clear(&d);
        test_rm_rf(dir);
}
END_TEST

START_TEST(test_binary_garbage) {
        /* Random bytes with a fixed seed, so a failure can be reproduced. The diagnostic must
         * name the line that holds the first byte no text file has. */
        g_autoptr(GRand) rand = g_rand_new_with_seed(0x7468706);
        char data[4096];
        unsigned expected_line = 1;
        Policy *p = NULL;
        Diagnostics d;

        for (size_t i = 0; i < sizeof data; i++)
                data[i] = (char) g_rand_int_range(rand, 0, 256);
        data[sizeof data / 2] = '\0';
        for (size_t i = 0; i < sizeof data; i++) {
                unsigned char c = (unsigned char) data[i];

                if (c == '\n') {
                        expected_line++;
                        continue;
                }
                if (c == '\0' || c == 0x7f || (c < 0x20 && c != '\t' && c != '\r') ||
                    (c == '\r' && i + 1 < sizeof data && data[i + 1] != '\n'))
                        break;
        }

        diagnostics_init(&d);
        ck_assert_int_eq(parse_bytes(data, sizeof data, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        assert_diag(&d, DIAGNOSTIC_ERROR, expected_line, "binary");
        /* Reading stops there: nothing after it, and no follow-up noise such as "Units= is
         * missing". Lines before it may have earned their own errors (e.g. invalid UTF-8). */
        for (guint i = 0; i < d.items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(d.items, i);

                ck_assert_uint_le(diag->line, expected_line);
                ck_assert_uint_ne(diag->line, 0);
        }
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_nul_in_good_file) {
        static const char data[] = "[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=ne\0ver\n";
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse_bytes(data, sizeof data - 1, &d, &p), -EINVAL);
        ck_assert_uint_eq(d.n_errors, 1);
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "binary");
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_long_lines) {
        g_autofree char *filler = g_strnfill(1u << 20, 'y');
        g_autofree char *text = g_strconcat("[Policy]\nUnits=a.service\nDescription=", filler,
                                            "\n[TransparentHugePages]\nEnabled=sometimes\n", NULL);
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        /* The long line is one line: the next lines keep their numbers. */
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "too long");
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "invalid value 'sometimes'");
        ck_assert_uint_eq(d.n_errors, 2);
        ck_assert_uint_eq(d.n_warnings, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_line_length_limit) {
        /* A line holds 197 characters, not counting "\r\n" (the limit inih's buffer set). */
        for (size_t len = 196; len <= 199; len++) {
                g_autofree char *desc = g_strnfill(len - strlen("Description="), 'd');
                g_autofree char *text = g_strdup_printf("[Policy]\nUnits=a.service\nDescription=%s\r\n"
                                                        "[TransparentHugePages]\r\nEnabled=never\n", desc);
                g_autoptr(Policy) p = NULL;
                Diagnostics d;

                diagnostics_init(&d);
                if (len <= 197) {
                        ck_assert_int_eq(parse(text, &d, &p), 0);
                        ck_assert_uint_eq(strlen(p->description), len - strlen("Description="));
                } else {
                        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
                        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "too long");
                        ck_assert_uint_eq(d.n_errors, 1);
                }
                diagnostics_clear(&d);
        }
}
END_TEST

START_TEST(test_syntax_errors_on_every_line) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Units=a.service\n"                /* 2 */
                "this is not a key\n"              /* 3 */
                "[TransparentHugePages\n"          /* 4: still in [Policy] */
                "also bad\n"                       /* 5 */
                "=never\n"                         /* 6 */
                "  indented, nothing to continue\n" /* 7: a key without a name is no key */
                "[TransparentHugePages]\n"         /* 8 */
                "Enabled=never\n"                  /* 9 */
                "bad again ; with a comment\n";    /* 10 */
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "syntax error");
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "closing ']'");
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "syntax error");
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "missing key name");
        assert_diag(&d, DIAGNOSTIC_ERROR, 7, "syntax error");
        assert_diag(&d, DIAGNOSTIC_ERROR, 10, "syntax error");
        ck_assert_uint_eq(d.n_errors, 6);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_unknown_sections_and_keys_warn) {
        static const char text[] =
                "Stray=1\n"                        /* 1 */
                "[Policy]\n"                       /* 2 */
                "Units=a.service\n"                /* 3 */
                "Colour=blue\n"                    /* 4 */
                "[Frobnicate]\n"                   /* 5 */
                "Anything=goes\n"                  /* 6 */
                "[TransparentHugePages]\n"         /* 7 */
                "Enabled=never\n"                  /* 8 */
                "Enabled.3K=never\n"               /* 9 */
                "enabled=never\n"                  /* 10: keys are case-sensitive */
                "[Khugepaged]\n"                   /* 11 */
                "MaxPtes=0\n"                      /* 12 */
                "[HugeTLB]\n"                      /* 13 */
                "Pages=1\n"                        /* 14 */
                "Count=2\n";                       /* 15 */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        ck_assert_ptr_nonnull(p);
        assert_diag(&d, DIAGNOSTIC_WARNING, 1, "outside of any section");
        assert_diag(&d, DIAGNOSTIC_WARNING, 4, "unknown key Colour=");
        assert_diag(&d, DIAGNOSTIC_WARNING, 5, "unknown section [Frobnicate]");
        assert_diag(&d, DIAGNOSTIC_WARNING, 9, "Enabled.16K");
        assert_diag(&d, DIAGNOSTIC_WARNING, 10, "unknown key enabled=");
        assert_diag(&d, DIAGNOSTIC_WARNING, 12, "unknown key MaxPtes=");
        assert_diag(&d, DIAGNOSTIC_WARNING, 15, "unknown key Count=");
        /* Keys of an unknown section are covered by the section's warning. */
        ck_assert_uint_eq(d.n_warnings, 7);
        ck_assert_uint_eq(d.n_errors, 0);
        diagnostics_clear(&d);
}
END_TEST

/* What a packager mistypes: the daemon warns (a newer policy on an older thpd still loads),
 * verify fails, both with a hint at the name meant. */
START_TEST(test_typos_are_errors_when_strict) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Units=redis-server.service\n"     /* 2 */
                "[TransparentHugePages]\n"         /* 3 */
                "Enabeld=never\n"                  /* 4 */
                "Defrag=never\n"                   /* 5 */
                "[TransparentHugePage]\n"          /* 6 */
                "Enabled=never\n"                  /* 7 */
                "[Khugepaged]\n"                   /* 8 */
                "enabled=never\n"                  /* 9 */
                "MaxPtesNon=0\n"                   /* 10 */
                "Stray=1\n";                       /* 11 */
        g_autoptr(Policy) lax = NULL;
        Policy *strict = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &lax), 0);
        ck_assert_int_eq(lax->knobs[KNOB_ENABLED], KNOB_VALUE_UNSET);
        ck_assert_uint_eq(d.n_errors, 0);
        ck_assert_uint_eq(d.n_warnings, 5);
        assert_diag(&d, DIAGNOSTIC_WARNING, 4, "unknown key Enabeld= in [TransparentHugePages], ignored; did you mean Enabled=?");
        diagnostics_clear(&d);

        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict(text, &d, &strict), -EINVAL);
        ck_assert_ptr_null(strict);
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "unknown key Enabeld= in [TransparentHugePages], ignored; did you mean Enabled=?");
        assert_diag(&d, DIAGNOSTIC_ERROR, 6,
                    "unknown section [TransparentHugePage], its keys are ignored; did you mean [TransparentHugePages]?");
        /* A key of another section is named as such, whatever its case. */
        assert_diag(&d, DIAGNOSTIC_ERROR, 9, "unknown key enabled= in [Khugepaged], ignored; Enabled= belongs in [TransparentHugePages]");
        assert_diag(&d, DIAGNOSTIC_ERROR, 10, "did you mean MaxPtesNone=?");
        /* Nothing close: no hint. */
        assert_diag(&d, DIAGNOSTIC_ERROR, 11, "unknown key Stray= in [Khugepaged], ignored");
        ck_assert_uint_eq(d.n_errors, 5);
        ck_assert_uint_eq(d.n_warnings, 0);
        for (guint i = 0; i < d.items->len; i++) {
                const Diagnostic *diag = g_ptr_array_index(d.items, i);

                if (diag->line == 11)
                        ck_assert_ptr_null(strstr(diag->message, "did you mean"));
        }
        diagnostics_clear(&d);

        /* A clean policy is as clean when strict. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict("[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\n", &d, &strict), 0);
        ck_assert_uint_eq(d.items->len, 0);
        policy_free(strict);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_misplaced_keys) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Units=a.service\n"                /* 2 */
                "Size=1G\n"                        /* 3 */
                "[TransparentHugePages]\n"         /* 4 */
                "Enabled=never\n"                  /* 5 */
                "MaxPtesNone=0\n"                  /* 6 */
                "Outside=1\n";                     /* 7 */
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict(text, &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "unknown key Size= in [Policy], ignored; Size= belongs in [HugeTLB]");
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "MaxPtesNone= belongs in [Khugepaged]");
        ck_assert_uint_eq(d.n_errors, 3);
        diagnostics_clear(&d);

        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict("Units=a.service\n[Policy]\nUnits=a.service\n[Khugepaged]\nDefrag=0\n", &d, &p),
                         -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 1, "outside of any section");
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_bad_values) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Units=a.service\n"                /* 2 */
                "[TransparentHugePages]\n"         /* 3 */
                "Enabled=sometimes\n"              /* 4 */
                "Defrag=NEVER\n"                   /* 5 */
                "ShmemEnabled=\n"                  /* 6 */
                "Enabled.64K=inherits\n"           /* 7 */
                "[Khugepaged]\n"                   /* 8 */
                "MaxPtesNone=512\n"                /* 9 */
                "PagesToScan=0\n"                  /* 10 */
                "ScanSleepMillisecs=-1\n"          /* 11 */
                "Defrag=2\n"                       /* 12 */
                "[HugeTLB]\n"                      /* 13 */
                "Pages=lots\n"                     /* 14 */
                "Node=1024\n";                     /* 15 */
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "accepted: never, madvise, always");
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "accepted: never, defer, madvise, defer+madvise, always");
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "has no value");
        assert_diag(&d, DIAGNOSTIC_ERROR, 7, "accepted: never, madvise, always, inherit");
        assert_diag(&d, DIAGNOSTIC_ERROR, 9, "out of range; accepted: 0-511");
        assert_diag(&d, DIAGNOSTIC_ERROR, 10, "out of range");
        assert_diag(&d, DIAGNOSTIC_ERROR, 11, "invalid value '-1'");
        assert_diag(&d, DIAGNOSTIC_ERROR, 12, "accepted: 0-1");
        assert_diag(&d, DIAGNOSTIC_ERROR, 14, "invalid Pages=lots");
        assert_diag(&d, DIAGNOSTIC_ERROR, 15, "invalid Node=1024");
        ck_assert_uint_eq(d.n_errors, 10);
        diagnostics_clear(&d);
}
END_TEST

/* Per-size shmem and the 0/1 knobs: what the global shmem_enabled alone has, a size that does
 * not exist and a number past 1. */
START_TEST(test_bad_new_knob_values) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Units=a.service\n"                /* 2 */
                "[TransparentHugePages]\n"         /* 3 */
                "ShmemEnabled.64K=force\n"         /* 4 */
                "ShmemEnabled.3K=never\n"          /* 5 */
                "ShrinkUnderused=2\n"              /* 6 */
                "UseZeroPage=maybe\n";             /* 7 */
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        ck_assert_ptr_null(p);
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "accepted: never, advise, within_size, always, inherit");
        assert_diag(&d, DIAGNOSTIC_WARNING, 5, "per-size keys are ShmemEnabled.8K");
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "out of range; accepted: 0-1");
        assert_diag(&d, DIAGNOSTIC_ERROR, 7, "invalid value 'maybe' for UseZeroPage=");
        ck_assert_uint_eq(d.n_errors, 3);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_duplicates_and_continuations) {
        static const char text[] =
                "[Policy]\n"                       /* 1 */
                "Description=first line\n"         /* 2 */
                "  second line\n"                  /* 3: continues Description= */
                "Units=a.service\n"                /* 4 */
                "\tb.service c.service\n"          /* 5: continues Units= */
                "Units=d.service\n"                /* 6: duplicate */
                "  e.service\n"                    /* 7: continues the rejected duplicate: ignored */
                "[TransparentHugePages]\n"         /* 8 */
                "Enabled=never\n"                  /* 9 */
                "  always\n"                       /* 10: a knob takes one value */
                "Enabled=madvise\n"                /* 11: duplicate */
                "[TransparentHugePages]\n"         /* 12 */
                "Enabled=always\n";                /* 13: a repeated section does not reset keys */
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "duplicate key Units= (first set on line 4)");
        assert_diag(&d, DIAGNOSTIC_ERROR, 10, "Enabled= takes a single value");
        assert_diag(&d, DIAGNOSTIC_ERROR, 11, "duplicate key Enabled= (first set on line 9)");
        assert_diag(&d, DIAGNOSTIC_ERROR, 13, "duplicate key Enabled= (first set on line 9)");
        ck_assert_uint_eq(d.n_errors, 4);
        ck_assert_uint_eq(d.n_warnings, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_continuations_accepted) {
        static const char text[] =
                "[Policy]\n"
                "Description=first line\n"
                "  second line\n"
                "Units=a.service\n"
                "\tb.service c.service\n"
                "   d@.service\n"
                "[TransparentHugePages]\n"
                "  Enabled=never\n"; /* indented, but no key precedes it in this section */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        ck_assert_uint_eq(d.items->len, 0);
        ck_assert_str_eq(p->description, "first line second line");
        ck_assert_uint_eq(g_strv_length(p->units), 4);
        ck_assert_str_eq(p->units[3], "d@.service");
        ck_assert_int_eq(p->knobs[KNOB_ENABLED], word(KNOB_ENABLED, "never"));
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_service_scope) {
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\n"
                               "Units=redis-server.service redis-server@.service\n"
                               "Scope=service\n"
                               "[TransparentHugePages]\n"
                               "Enabled=never\n"
                               "[HugeTLB]\n"
                               "Pages=16\n", &d, &p), 0);
        ck_assert_uint_eq(d.n_errors + d.n_warnings, 0);
        ck_assert_int_eq(p->scope, POLICY_SCOPE_SERVICE);
        ck_assert_int_eq(p->service_thp, word(KNOB_ENABLED, "never"));
        /* It votes on no knob, so the global ones resolve without it; the pool still counts. */
        FOREACH_KNOB(k)
                ck_assert_int_eq(p->knobs[k], KNOB_VALUE_UNSET);
        ck_assert_uint_eq(p->knob_lines[KNOB_ENABLED], 5);
        ck_assert(p->has_pool);
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=global\n[TransparentHugePages]\nEnabled=madvise\n",
                               &d, &p), 0);
        ck_assert_int_eq(p->scope, POLICY_SCOPE_GLOBAL);
        ck_assert_int_eq(p->service_thp, KNOB_VALUE_UNSET);
        ck_assert_int_eq(p->knobs[KNOB_ENABLED], word(KNOB_ENABLED, "madvise"));
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        /* The default is global. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\n", &d, &p), 0);
        ck_assert_int_eq(p->scope, POLICY_SCOPE_GLOBAL);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_service_scope_machine_wide_keys) {
        static const char text[] =
                "[Policy]\n"                             /* 1 */
                "Units=a.service b.socket\n"             /* 2 */
                "Scope=service\n"                        /* 3 */
                "[TransparentHugePages]\n"               /* 4 */
                "Enabled=madvise\n"                      /* 5 */
                "Defrag=never\n"                         /* 6 */
                "[Khugepaged]\n"                         /* 7 */
                "MaxPtesNone=0\n";                       /* 8 */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        /* The daemon: warnings, and the keys are ignored. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        ck_assert_uint_eq(d.n_errors, 0);
        ck_assert_uint_eq(d.n_warnings, 3);
        assert_diag(&d, DIAGNOSTIC_WARNING, 6, "[TransparentHugePages] Defrag= is machine-wide");
        assert_diag(&d, DIAGNOSTIC_WARNING, 8, "[Khugepaged] MaxPtesNone= is machine-wide");
        assert_diag(&d, DIAGNOSTIC_WARNING, 2, "'b.socket' is not a service");
        ck_assert_int_eq(p->service_thp, word(KNOB_ENABLED, "madvise"));
        ck_assert_int_eq(p->knobs[KNOB_DEFRAG], KNOB_VALUE_UNSET);
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_MAX_PTES_NONE], KNOB_VALUE_UNSET);
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        /* verify: errors. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict(text, &d, &p), -EINVAL);
        ck_assert_uint_eq(d.n_errors, 3);
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "Scope=service, line 3");
        diagnostics_clear(&d);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_service_scope_errors) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=machine\n[TransparentHugePages]\nEnabled=never\n",
                               &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "invalid Scope=machine; accepted: global, service, auto");
        diagnostics_clear(&d);

        /* Only a pool: nothing to isolate the service with. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=service\n[HugeTLB]\nPages=4\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "Scope=service needs [TransparentHugePages] Enabled=never or madvise");
        diagnostics_clear(&d);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=service\nScope=global\n"
                               "[TransparentHugePages]\nEnabled=never\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 4, "duplicate key Scope=");
        diagnostics_clear(&d);
        ck_assert_ptr_null(p);
        ck_assert_str_eq(policy_scope_to_string(POLICY_SCOPE_SERVICE), "service");
        ck_assert_int_eq(policy_scope_from_string("global"), POLICY_SCOPE_GLOBAL);
        ck_assert_int_eq(policy_scope_from_string(NULL), -EINVAL);
}
END_TEST

/* Scope=service with Enabled=always: always for its services alone. It votes machine-wide like a
 * global policy, its other keys too, since the machine must say always while it runs. */
START_TEST(test_service_scope_always) {
        static const char text[] =
                "[Policy]\n"                             /* 1 */
                "Units=mongod.service\n"                 /* 2 */
                "Scope=service\n"                        /* 3 */
                "[TransparentHugePages]\n"               /* 4 */
                "Enabled=always\n"                       /* 5 */
                "Defrag=defer+madvise\n"                 /* 6 */
                "[Khugepaged]\n"                         /* 7 */
                "MaxPtesNone=0\n";                       /* 8 */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse_strict(text, &d, &p), 0);
        ck_assert_uint_eq(d.n_errors + d.n_warnings, 0);
        ck_assert_int_eq(p->scope, POLICY_SCOPE_SERVICE);
        ck_assert(policy_inverts(p));
        ck_assert(!policy_isolates(p));
        ck_assert_int_eq(p->service_thp, word(KNOB_ENABLED, "always"));
        ck_assert_int_eq(p->knobs[KNOB_ENABLED], word(KNOB_ENABLED, "always"));
        ck_assert_int_eq(p->knobs[KNOB_DEFRAG], word(KNOB_DEFRAG, "defer+madvise"));
        ck_assert_int_eq(p->knobs[KNOB_KHUGEPAGED_MAX_PTES_NONE], 0);
        ck_assert(!(p->unset_knobs & (UINT64_C(1) << KNOB_ENABLED)));
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        /* Neither of the other scopes inverts. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=service\n[TransparentHugePages]\nEnabled=madvise\n",
                               &d, &p), 0);
        ck_assert(!policy_inverts(p));
        ck_assert(policy_isolates(p));
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=always\n", &d, &p), 0);
        ck_assert(!policy_inverts(p));
        ck_assert(!policy_isolates(p));
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=service\n[HugeTLB]\nPages=4\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "Enabled=never or madvise (or always)");
        diagnostics_clear(&d);
}
END_TEST

/* Scope=auto isolates its services and keeps its machine-wide votes for when nobody wants more. */
START_TEST(test_auto_scope) {
        static const char text[] =
                "[Policy]\n"                              /* 1 */
                "Units=redis-server.service b.socket\n"   /* 2 */
                "Scope=auto\n"                            /* 3 */
                "[TransparentHugePages]\n"                /* 4 */
                "Enabled=never\n"                         /* 5 */
                "Defrag=never\n";                         /* 6 */
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        ck_assert_uint_eq(d.n_errors, 0);
        ck_assert_uint_eq(d.n_warnings, 1);
        assert_diag(&d, DIAGNOSTIC_WARNING, 2, "'b.socket' is not a service: Scope=auto isolates");
        ck_assert_int_eq(p->scope, POLICY_SCOPE_AUTO);
        ck_assert(policy_isolates(p));
        ck_assert_int_eq(p->service_thp, word(KNOB_ENABLED, "never"));
        ck_assert_int_eq(p->knobs[KNOB_ENABLED], word(KNOB_ENABLED, "never"));
        ck_assert_int_eq(p->knobs[KNOB_DEFRAG], word(KNOB_DEFRAG, "never"));
        diagnostics_clear(&d);
        g_clear_pointer(&p, policy_free);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=auto\n[TransparentHugePages]\nEnabled=always\n",
                               &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "(Scope=auto, line 3): a process can only opt out");
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "use Scope=service (always for its services, madvise for every other)");
        diagnostics_clear(&d);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nScope=auto\n[TransparentHugePages]\nDefrag=never\n",
                               &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "Scope=auto needs [TransparentHugePages] Enabled=never or madvise");
        diagnostics_clear(&d);

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\n", &d, &p), 0);
        ck_assert(!policy_isolates(p));
        ck_assert_int_eq(p->service_thp, KNOB_VALUE_UNSET);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_missing_units) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("# x\n[Policy]\nDescription=x\n[TransparentHugePages]\nEnabled=never\n", &d, &p),
                         -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 2, "Units= is missing");
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);

        /* Without a [Policy] section the whole file is at fault. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse("[TransparentHugePages]\nEnabled=never\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 0, "Units= is missing");
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_no_setting) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[TransparentHugePages]\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 0, "no setting");
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);

        /* An empty [HugeTLB] section is a pool without a size. */
        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[HugeTLB]\nPageSize=1G\n", &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "needs Size= or Pages=");
        assert_diag(&d, DIAGNOSTIC_ERROR, 0, "no setting");
        ck_assert_uint_eq(d.n_errors, 2);
        diagnostics_clear(&d);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_size_and_pages) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[HugeTLB]\nSize=8G\nPageSize=2M\nPages=4096\n", &d, &p),
                         -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 6, "Size= (line 4) and Pages= both set");
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_bad_page_size) {
        static const char *const bad[] = { "3K", "2K", "0", "1000000", "big", "-2M", "3M" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                g_autofree char *text = g_strdup_printf("[Policy]\nUnits=a.service\n[HugeTLB]\nPages=1\nPageSize=%s\n",
                                                        bad[i]);
                Policy *p = NULL;
                Diagnostics d;

                diagnostics_init(&d);
                ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
                ck_assert_ptr_null(p);
                assert_diag(&d, DIAGNOSTIC_ERROR, 5, "power of two of at least 4K");
                ck_assert_uint_eq(d.n_errors, 1);
                diagnostics_clear(&d);
        }
}
END_TEST

START_TEST(test_zero_pool) {
        static const char *const bad[] = { "Pages=0", "Size=0" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                g_autofree char *text = g_strdup_printf("[Policy]\nUnits=a.service\n[HugeTLB]\n%s\n", bad[i]);
                Policy *p = NULL;
                Diagnostics d;

                diagnostics_init(&d);
                ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
                assert_diag(&d, DIAGNOSTIC_ERROR, 4, "above zero");
                ck_assert_uint_eq(d.n_errors, 1);
                diagnostics_clear(&d);
        }
}
END_TEST

START_TEST(test_unit_entries_that_never_match) {
        static const char text[] =
                "[Policy]\n"                                           /* 1 */
                "Units=ok.service *.socket x.* ok@.service a.ser*\n"   /* 2: all plausible */
                "  redis\n"                                            /* 3 */
                "  redis.servce\n"                                     /* 4 */
                "  /usr/bin/redis.service\n"                           /* 5 */
                "  dev-sda\\x2d1.device\n"                             /* 6: plausible */
                "[TransparentHugePages]\n"
                "Enabled=never\n";
        g_autoptr(Policy) p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), 0);
        assert_diag(&d, DIAGNOSTIC_WARNING, 3, "'redis' has no unit type suffix");
        assert_diag(&d, DIAGNOSTIC_WARNING, 4, "'redis.servce' has no unit type suffix");
        assert_diag(&d, DIAGNOSTIC_WARNING, 5, "contains '/'");
        ck_assert_uint_eq(d.n_warnings, 3);
        ck_assert_uint_eq(g_strv_length(p->units), 9);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_bom_crlf_and_comments) {
        static const char text[] =
                "\xEF\xBB\xBF# with a byte order mark\r\n"
                "[Policy]\r\n"
                "Description=Café\r\n"
                "Units=a.service ; an inline comment\r\n"
                "[TransparentHugePages]\r\n"
                "Enabled=never\r\n"
                "Defrag=never # not a comment\r\n";
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        /* Only ';' starts an inline comment; '#' does only at the start of a line. */
        assert_diag(&d, DIAGNOSTIC_ERROR, 7, "invalid value 'never # not a comment'");
        ck_assert_uint_eq(d.n_errors, 1);
        ck_assert_uint_eq(d.n_warnings, 0);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_invalid_utf8) {
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\nDescription=Caf\xe9\n[TransparentHugePages]\nEnabled=x\n",
                               &d, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 3, "UTF-8");
        assert_diag(&d, DIAGNOSTIC_ERROR, 5, "invalid value 'x'");
        ck_assert_uint_eq(d.n_errors, 2);
        diagnostics_clear(&d);
}
END_TEST

START_TEST(test_diagnostics_optional) {
        g_autoptr(Policy) p = NULL;
        Policy *bad = NULL;

        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n[TransparentHugePages]\nEnabled=never\n", NULL, &p), 0);
        ck_assert_int_eq(parse("[Policy]\nUnits=a.service\n", NULL, &bad), -EINVAL);
        ck_assert_ptr_null(bad);
}
END_TEST

static char *format_diagnostics(const Diagnostics *d) {
        g_autoptr(GString) s = g_string_new(NULL);

        for (guint i = 0; i < d->items->len; i++) {
                g_autofree char *line = diagnostic_format(g_ptr_array_index(d->items, i));

                g_string_append_printf(s, "%s\n", line);
        }
        return g_string_free(g_steal_pointer(&s), false);
}

/* policy_load() feeds what each read() returns: where a piece ends must not matter. */
START_TEST(test_fed_in_pieces) {
        static const char text[] =
                "\xEF\xBB\xBF[Policy]\r\n"
                "Description=first line\n"
                "  second line ; kept\n"
                "Units=a.service\n"
                "\tb.service redis\n"
                "Units=d.service\n"
                "[TransparentHugePages\n"
                "[TransparentHugePages]\n"
                "Enabled=never ; a comment\n"
                "  always\n"
                "Defrag:madvise\n"
                "Enabeld=never\n"
                "[HugeTLB]\n"
                "Pages=2";
        g_autofree char *expected = NULL;
        Diagnostics d;
        Policy *p = NULL;

        diagnostics_init(&d);
        ck_assert_int_eq(parse(text, &d, &p), -EINVAL);
        expected = format_diagnostics(&d);
        ck_assert_uint_eq(d.n_errors, 3);
        ck_assert_uint_eq(d.n_warnings, 2);
        diagnostics_clear(&d);

        for (size_t piece = 1; piece <= sizeof text; piece++) {
                g_autoptr(PolicyParser) parser = NULL;
                g_autofree char *got = NULL;

                diagnostics_init(&d);
                ck_assert_int_eq(policy_parser_new(PATH, 0, &d, &parser), 0);
                for (size_t i = 0; i < strlen(text); i += piece)
                        ck_assert_int_eq(policy_parser_feed(parser, text + i, MIN(piece, strlen(text) - i)), 1);
                ck_assert_int_eq(policy_parser_finish(parser, &p), -EINVAL);
                got = format_diagnostics(&d);
                ck_assert_str_eq(got, expected);
                diagnostics_clear(&d);
        }
}
END_TEST

/* Once the parser has given up, the caller need not read on. */
START_TEST(test_feed_wants_no_more) {
        g_autoptr(PolicyParser) parser = NULL;
        g_autoptr(GString) text = g_string_new("[Policy]\nUnits=a.service\n");
        Policy *p = NULL;
        Diagnostics d;

        for (unsigned i = 0; i < 100; i++)
                g_string_append(text, "no equals sign\n");
        diagnostics_init(&d);
        ck_assert_int_eq(policy_parser_new(PATH, 0, &d, &parser), 0);
        ck_assert_int_eq(policy_parser_feed(parser, text->str, text->len), 0);
        ck_assert_int_eq(policy_parser_feed(parser, "more\n", strlen("more\n")), 0);
        ck_assert_int_eq(policy_parser_finish(parser, &p), -EINVAL);
        ck_assert_uint_eq(d.n_errors, 51);
        diagnostics_clear(&d);
        g_clear_pointer(&parser, policy_parser_free);

        diagnostics_init(&d);
        ck_assert_int_eq(policy_parser_new(PATH, 0, &d, &parser), 0);
        ck_assert_int_eq(policy_parser_feed(parser, "[Policy]\n\x01\n", strlen("[Policy]\n\x01\n")), 0);
        ck_assert_int_eq(policy_parser_finish(parser, &p), -EINVAL);
        assert_diag(&d, DIAGNOSTIC_ERROR, 2, "binary");
        ck_assert_uint_eq(d.n_errors, 1);
        diagnostics_clear(&d);
}
END_TEST

/* A read that fails half way: the lines read are reported, then the read error, and nothing
 * that would need the rest of the file (here: "Units= is missing"). */
START_TEST(test_read_error) {
        static const char text[] = "[Policy]\nnot a key\n[Transparent";
        g_autoptr(PolicyParser) parser = NULL;
        g_autofree char *got = NULL;
        Policy *p = NULL;
        Diagnostics d;

        diagnostics_init(&d);
        ck_assert_int_eq(policy_parser_new(PATH, 0, &d, &parser), 0);
        ck_assert_int_eq(policy_parser_feed(parser, text, strlen(text)), 1);
        policy_parser_read_error(parser, EIO);
        ck_assert_int_eq(policy_parser_finish(parser, &p), -EINVAL);
        ck_assert_ptr_null(p);
        got = format_diagnostics(&d);
        ck_assert_str_eq(got, "test.conf:2: error: syntax error: expected Key=Value, [Section] or a comment\n"
                              "test.conf: error: read error: Input/output error\n");
        diagnostics_clear(&d);
}
END_TEST

static Policy *policy_with_units(const char *units) {
        g_autofree char *text = g_strdup_printf("[Policy]\nUnits=%s\n[TransparentHugePages]\nEnabled=never\n", units);
        Policy *p = NULL;

        ck_assert_int_eq(parse(text, NULL, &p), 0);
        return p;
}

START_TEST(test_matches_unit) {
        g_autoptr(Policy) p = policy_with_units("redis-server.service redis-server@*.service foo@.service "
                                                "pg-?.service dev-sda\\x2d1.device");

        ck_assert(policy_matches_unit(p, "redis-server.service"));
        ck_assert(policy_matches_unit(p, "redis-server@6379.service"));
        ck_assert(!policy_matches_unit(p, "redis-server.socket"));
        ck_assert(!policy_matches_unit(p, "redis.service"));
        ck_assert(!policy_matches_unit(p, "xredis-server.service"));

        /* A template name matches every instance, and only instances of that template. */
        ck_assert(policy_matches_unit(p, "foo@bar.service"));
        ck_assert(policy_matches_unit(p, "foo@a.b.service"));
        ck_assert(policy_matches_unit(p, "foo@.service"));
        ck_assert(!policy_matches_unit(p, "foo.service"));
        ck_assert(!policy_matches_unit(p, "foobar@x.service"));
        ck_assert(!policy_matches_unit(p, "foo@x.socket"));

        ck_assert(policy_matches_unit(p, "pg-1.service"));
        ck_assert(!policy_matches_unit(p, "pg-12.service"));

        /* Backslashes in unit names are literal, not glob escapes. */
        ck_assert(policy_matches_unit(p, "dev-sda\\x2d1.device"));
        ck_assert(!policy_matches_unit(p, "dev-sdax2d1.device"));

        ck_assert(!policy_matches_unit(p, NULL));
        ck_assert(!policy_matches_unit(NULL, "redis-server.service"));
}
END_TEST

int main(void) {
        Suite *s = suite_create("policy");
        TCase *tc = tcase_create("parse");

        tcase_add_test(tc, test_good_every_key);
        tcase_add_test(tc, test_pools);
        tcase_add_test(tc, test_knob_only_has_no_pool);
        tcase_add_test(tc, test_unset_knobs);
        tcase_add_test(tc, test_empty_file);
        tcase_add_test(tc, test_missing_file);
        tcase_add_test(tc, test_fifo);
        tcase_add_test(tc, test_error_limit);
        tcase_add_test(tc, test_binary_garbage);
        tcase_add_test(tc, test_nul_in_good_file);
        tcase_add_test(tc, test_long_lines);
        tcase_add_test(tc, test_line_length_limit);
        tcase_add_test(tc, test_syntax_errors_on_every_line);
        tcase_add_test(tc, test_unknown_sections_and_keys_warn);
        tcase_add_test(tc, test_typos_are_errors_when_strict);
        tcase_add_test(tc, test_misplaced_keys);
        tcase_add_test(tc, test_bad_values);
        tcase_add_test(tc, test_bad_new_knob_values);
        tcase_add_test(tc, test_duplicates_and_continuations);
        tcase_add_test(tc, test_continuations_accepted);
        tcase_add_test(tc, test_missing_units);
        tcase_add_test(tc, test_service_scope);
        tcase_add_test(tc, test_service_scope_machine_wide_keys);
        tcase_add_test(tc, test_service_scope_errors);
        tcase_add_test(tc, test_service_scope_always);
        tcase_add_test(tc, test_auto_scope);
        tcase_add_test(tc, test_no_setting);
        tcase_add_test(tc, test_size_and_pages);
        tcase_add_test(tc, test_bad_page_size);
        tcase_add_test(tc, test_zero_pool);
        tcase_add_test(tc, test_unit_entries_that_never_match);
        tcase_add_test(tc, test_bom_crlf_and_comments);
        tcase_add_test(tc, test_invalid_utf8);
        tcase_add_test(tc, test_diagnostics_optional);
        tcase_add_test(tc, test_fed_in_pieces);
        tcase_add_test(tc, test_feed_wants_no_more);
        tcase_add_test(tc, test_read_error);
        suite_add_tcase(s, tc);

        tc = tcase_create("match");
        tcase_add_test(tc, test_matches_unit);
        suite_add_tcase(s, tc);

        return test_run_suite(s);
}

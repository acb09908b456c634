/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "cmdline.h"
#include "test-util.h"
#include "util.h"

/* The per-size enabled knob of a size in kB. */
static Knob size_knob(uint64_t kb) {
        Knob k;

        ck_assert_int_eq(knob_mthp_from_size_kb(kb, &k), 0);
        return k;
}

/* The per-size shmem_enabled knob of a size in kB. */
static Knob shmem_knob(uint64_t kb) {
        Knob k;

        ck_assert_int_eq(knob_mthp_shmem_from_size_kb(kb, &k), 0);
        return k;
}

static void assert_value(const CmdlineThp *c, Knob k, CmdlineParam origin, const char *word) {
        char buf[24];

        ck_assert_int_eq(c->origin[k], origin);
        ck_assert_str_eq(knob_value_to_string(k, c->value[k], buf), word);
}

static void assert_untouched(const CmdlineThp *c) {
        FOREACH_KNOB(k) {
                ck_assert_int_eq(c->origin[k], _CMDLINE_PARAM_INVALID);
                ck_assert_int_eq(c->value[k], KNOB_VALUE_UNSET);
        }
        ck_assert(!c->thp_anon);
        ck_assert(!c->thp_shmem);
        ck_assert_str_eq(c->tmpfs, "");
}

/* This machine's 6.18: 16 kB to 2 MB have a per-size enabled, 8 kB to 2 MB a per-size
 * shmem_enabled. */
static bool present[_KNOB_MAX];

static void setup(void) {
        FOREACH_KNOB(k)
                present[k] = !knob_is_mthp(k) ||
                             (knob_mthp_size_kb(k) >= (knob_is_mthp_shmem(k) ? 8 : 16) && knob_mthp_size_kb(k) <= 2048);
}

START_TEST(test_none) {
        CmdlineThp c;

        ck_assert_int_eq(cmdline_parse_thp("BOOT_IMAGE=/vmlinuz-6.18.0 root=UUID=1234 ro quiet\n", present, &c), 0);
        assert_untouched(&c);
        ck_assert_uint_eq(c.n_ignored, 0);
        ck_assert_int_eq(cmdline_parse_thp("", present, &c), 0);
        assert_untouched(&c);
        ck_assert_int_eq(cmdline_parse_thp(NULL, present, &c), -EINVAL);
}
END_TEST

START_TEST(test_transparent_hugepage) {
        CmdlineThp c;

        ck_assert_int_eq(cmdline_parse_thp("ro transparent_hugepage=never quiet", present, &c), 0);
        assert_value(&c, KNOB_ENABLED, CMDLINE_TRANSPARENT_HUGEPAGE, "never");
        ck_assert_int_eq(c.origin[size_knob(2048)], _CMDLINE_PARAM_INVALID);
        /* The last one wins; '-' and '_' are the same in a name; quotes are dropped. */
        ck_assert_int_eq(cmdline_parse_thp("transparent_hugepage=never transparent-hugepage=\"always\"", present, &c), 0);
        assert_value(&c, KNOB_ENABLED, CMDLINE_TRANSPARENT_HUGEPAGE, "always");
        /* Words are compared exactly; a bad one is ignored and the earlier value stands. */
        ck_assert_int_eq(cmdline_parse_thp("transparent_hugepage=madvise transparent_hugepage=Never "
                                           "transparent_hugepage= transparent_hugepage=never,",
                                           present, &c),
                         0);
        assert_value(&c, KNOB_ENABLED, CMDLINE_TRANSPARENT_HUGEPAGE, "madvise");
        ck_assert_uint_eq(c.n_ignored, 3);
        /* Not a THP parameter, and no value: nothing. */
        ck_assert_int_eq(cmdline_parse_thp("transparent_hugepage transparent_hugepagex=never", present, &c), 0);
        assert_untouched(&c);
        /* After "--" the words are init's. */
        ck_assert_int_eq(cmdline_parse_thp("ro -- transparent_hugepage=never", present, &c), 0);
        assert_untouched(&c);
}
END_TEST

START_TEST(test_thp_anon) {
        CmdlineThp c;

        ck_assert_int_eq(cmdline_parse_thp("thp_anon=16K-64K:always;128K,512K:inherit;1M-2M:never", present, &c), 0);
        ck_assert(c.thp_anon);
        assert_value(&c, size_knob(16), CMDLINE_THP_ANON, "always");
        assert_value(&c, size_knob(32), CMDLINE_THP_ANON, "always");
        assert_value(&c, size_knob(64), CMDLINE_THP_ANON, "always");
        assert_value(&c, size_knob(128), CMDLINE_THP_ANON, "inherit");
        assert_value(&c, size_knob(256), CMDLINE_THP_ANON, "never");
        assert_value(&c, size_knob(512), CMDLINE_THP_ANON, "inherit");
        assert_value(&c, size_knob(1024), CMDLINE_THP_ANON, "never");
        assert_value(&c, size_knob(2048), CMDLINE_THP_ANON, "never");
        /* A size this kernel has no file for is no knob of it. */
        ck_assert_int_eq(c.origin[size_knob(8)], _CMDLINE_PARAM_INVALID);
        ck_assert_int_eq(c.origin[KNOB_ENABLED], _CMDLINE_PARAM_INVALID);

        /* Every size it does not list starts never, 2M included. */
        ck_assert_int_eq(cmdline_parse_thp("thp_anon=64K:madvise", present, &c), 0);
        assert_value(&c, size_knob(64), CMDLINE_THP_ANON, "madvise");
        assert_value(&c, size_knob(2048), CMDLINE_THP_ANON, "never");

        /* Sizes in any memparse() spelling; a second thp_anon= adds to the first. */
        ck_assert_int_eq(cmdline_parse_thp("thp_anon=0x10000:always thp_anon=2m:inherit", present, &c), 0);
        assert_value(&c, size_knob(64), CMDLINE_THP_ANON, "always");
        assert_value(&c, size_knob(2048), CMDLINE_THP_ANON, "inherit");
        assert_value(&c, size_knob(16), CMDLINE_THP_ANON, "never");
        ck_assert_int_eq(cmdline_parse_thp("thp_anon=65536:always", present, &c), 0);
        assert_value(&c, size_knob(64), CMDLINE_THP_ANON, "always");
}
END_TEST

/* The kernel ignores a whole thp_anon= on any error, so nothing of it counts. */
START_TEST(test_thp_anon_malformed) {
        static const char *const bad[] = {
                "thp_anon=",
                "thp_anon=64K",
                "thp_anon=64K:always;",
                "thp_anon=64K:sometimes",
                "thp_anon=64K:Always",
                "thp_anon=48K:always",
                "thp_anon=4K:always",
                "thp_anon=8K:always",         /* no enabled file for 8 kB on this kernel */
                "thp_anon=4M:always",
                "thp_anon=128K-64K:always",
                "thp_anon=64K,:always",
                "thp_anon=-64K:always",
                "thp_anon=64K:always;2M:never;1K:inherit",
                "thp_anon=16E:always",
                "thp_anon=:always",
        };
        CmdlineThp c;

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                ck_assert_int_eq(cmdline_parse_thp(bad[i], present, &c), 0);
                assert_untouched(&c);
                ck_assert_uint_eq(c.n_ignored, 1);
        }
        /* A bad one after a good one leaves the good one in force. */
        ck_assert_int_eq(cmdline_parse_thp("thp_anon=64K:always thp_anon=64K:inherit;3K:never", present, &c), 0);
        assert_value(&c, size_knob(64), CMDLINE_THP_ANON, "always");
        ck_assert_uint_eq(c.n_ignored, 1);
        /* Without a list of what the kernel has, every size of the table is taken. */
        ck_assert_int_eq(cmdline_parse_thp("thp_anon=8K:always", NULL, &c), 0);
        assert_value(&c, size_knob(8), CMDLINE_THP_ANON, "always");
        assert_value(&c, size_knob(16384 * 1024), CMDLINE_THP_ANON, "never");
}
END_TEST

START_TEST(test_shmem) {
        CmdlineThp c;

        ck_assert_int_eq(cmdline_parse_thp("transparent_hugepage_shmem=within_size thp_shmem=64K:always;2M:advise "
                                           "transparent_hugepage_tmpfs=always",
                                           present, &c),
                         0);
        assert_value(&c, KNOB_SHMEM_ENABLED, CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM, "within_size");
        ck_assert(c.thp_shmem);
        assert_value(&c, shmem_knob(64), CMDLINE_THP_SHMEM, "always");
        assert_value(&c, shmem_knob(2048), CMDLINE_THP_SHMEM, "advise");
        /* Unlisted sizes start as never, 8 kB too, which has shmem_enabled without enabled. */
        assert_value(&c, shmem_knob(8), CMDLINE_THP_SHMEM, "never");
        assert_value(&c, shmem_knob(1024), CMDLINE_THP_SHMEM, "never");
        ck_assert_str_eq(c.tmpfs, "always");
        /* The per-size words are not the global ones. */
        ck_assert_int_eq(cmdline_parse_thp("thp_shmem=64K:deny transparent_hugepage_shmem=inherit "
                                           "transparent_hugepage_tmpfs=sometimes",
                                           present, &c),
                         0);
        assert_untouched(&c);
        ck_assert_uint_eq(c.n_ignored, 3);
        ck_assert_int_eq(cmdline_parse_thp("transparent_hugepage_shmem=force", present, &c), 0);
        assert_value(&c, KNOB_SHMEM_ENABLED, CMDLINE_TRANSPARENT_HUGEPAGE_SHMEM, "force");
}
END_TEST

START_TEST(test_names) {
        ck_assert_str_eq(cmdline_param_to_string(CMDLINE_THP_ANON), "thp_anon=");
        ck_assert_str_eq(cmdline_param_to_string(CMDLINE_TRANSPARENT_HUGEPAGE), "transparent_hugepage=");
        ck_assert_ptr_null(cmdline_param_to_string(_CMDLINE_PARAM_INVALID));
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("cmdline", "parse", setup, NULL,
                                         test_none,
                                         test_transparent_hugepage,
                                         test_thp_anon,
                                         test_thp_anon_malformed,
                                         test_shmem,
                                         test_names));
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy.h"
#include "scope-dropin.h"
#include "test-util.h"

static Policy *parse_policy(const char *text) {
        Policy *p = NULL;

        ck_assert_int_eq(policy_parse_text(text, strlen(text), "/usr/lib/thpd/policy.d/redis.conf", 0, NULL, &p), 0);
        return p;
}

static const char redis_auto[] = "[Policy]\nUnits=redis-server.service\nScope=auto\n"
                                 "[TransparentHugePages]\nEnabled=never\nDefrag=never\n";
static const char oracle_madvise[] = "[Policy]\nUnits=oracle.service\nScope=service\n"
                                     "[TransparentHugePages]\nEnabled=madvise\n";

static void exec_of(UnitExec *u, const char *text) {
        unit_exec_init(u);
        unit_exec_apply_text(u, text);
}

/* systemd 260 and later: the manager's own setting, and no ExecStart= rewritten. */
START_TEST(test_memory_thp_path) {
        g_autoptr(Policy) redis = parse_policy(redis_auto);
        g_autofree char *text = NULL, *value = NULL;
        UnitExec exec;

        exec_of(&exec, "[Service]\nExecStart=/usr/bin/redis-server /etc/redis/redis.conf\nNoExecPaths=/\n");
        ck_assert_int_eq(scope_dropin_text(&(ScopeDropinRequest) {
                                 .policy = redis, .unit = "redis-server.service",
                                 .fragment = "/lib/systemd/system/redis-server.service", .exec = &exec,
                                 .helper = "/usr/lib/thpd/thpd-exec", .via = SCOPE_VIA_MEMORY_THP,
                         }, &text, NULL), 0);
        ck_assert_str_eq(text,
                         "# Written by thpd-generator for /usr/lib/thpd/policy.d/redis.conf\n"
                         "# (Scope=auto, Enabled=never): the service manager sets THP for the processes\n"
                         "# of redis-server.service at their start.\n"
                         "[Service]\n"
                         "MemoryTHP=disable\n");
        /* What thpd reads back when the unit starts. */
        ck_assert_int_eq(scope_dropin_parse(text, &value), SCOPE_VIA_MEMORY_THP);
        ck_assert_str_eq(value, "disable");
        unit_exec_done(&exec);
}
END_TEST

/* madvise needs Linux 6.18's PR_THP_DISABLE_EXCEPT_ADVISED; without it, disable. */
START_TEST(test_memory_thp_madvise_and_its_fallback) {
        g_autoptr(Policy) oracle = parse_policy(oracle_madvise);
        g_autofree char *with = NULL, *without = NULL;
        g_autofree char *value = NULL;
        UnitExec exec;
        ScopeDropinRequest req = {
                .policy = oracle, .unit = "oracle.service", .fragment = "/etc/systemd/system/oracle.service",
                .exec = &exec, .helper = "/usr/lib/thpd/thpd-exec", .via = SCOPE_VIA_MEMORY_THP,
                .kernel_except_advised = true,
        };

        exec_of(&exec, "[Service]\nExecStart=/opt/oracle/bin/dbstart\n");
        ck_assert_int_eq(scope_dropin_text(&req, &with, NULL), 0);
        ck_assert(g_str_has_suffix(with, "[Service]\nMemoryTHP=madvise\n"));
        ck_assert_ptr_null(strstr(with, "no PR_THP_DISABLE_EXCEPT_ADVISED"));
        req.kernel_except_advised = false;
        ck_assert_int_eq(scope_dropin_text(&req, &without, NULL), 0);
        ck_assert(g_str_has_suffix(without, "[Service]\nMemoryTHP=disable\n"));
        ck_assert_ptr_nonnull(strstr(without, "no PR_THP_DISABLE_EXCEPT_ADVISED"));

        ck_assert_int_eq(scope_dropin_parse(with, &value), SCOPE_VIA_MEMORY_THP);
        ck_assert_str_eq(value, "madvise");
        unit_exec_done(&exec);
}
END_TEST

/* Older managers: every ExecStart= again, through the helper; ExecPaths= for NoExecPaths=. */
START_TEST(test_helper_path) {
        g_autoptr(Policy) redis = parse_policy(redis_auto);
        g_autofree char *text = NULL;
        const char *bad = NULL;
        UnitExec exec;
        ScopeDropinRequest req = {
                .policy = redis, .unit = "redis-server.service",
                .fragment = "/lib/systemd/system/redis-server.service", .exec = &exec,
                .helper = "/usr/lib/thpd/thpd-exec", .via = SCOPE_VIA_HELPER,
        };

        exec_of(&exec, "[Service]\nExecStart=/usr/bin/redis-server /etc/redis/redis.conf\nNoExecPaths=/\n");
        ck_assert_int_eq(scope_dropin_text(&req, &text, NULL), 0);
        ck_assert_str_eq(text,
                         "# Written by thpd-generator for /usr/lib/thpd/policy.d/redis.conf\n"
                         "# (Scope=auto, Enabled=never): the ExecStart= commands of redis-server.service,\n"
                         "# as /lib/systemd/system/redis-server.service and its drop-ins say, run through\n"
                         "# thpd-exec, which sets prctl(PR_SET_THP_DISABLE) and execs them.\n"
                         "# After a change to ExecStart=, \"systemctl daemon-reload\" updates this file.\n"
                         "[Service]\n"
                         "ExecStart=\n"
                         "ExecStart=/usr/lib/thpd/thpd-exec --thp=never -- /usr/bin/redis-server /etc/redis/redis.conf\n"
                         "ExecPaths=/usr/lib/thpd/thpd-exec\n");
        ck_assert_int_eq(scope_dropin_parse(text, NULL), SCOPE_VIA_HELPER);
        unit_exec_done(&exec);

        /* Nothing to wrap, or a line with no command: no drop-in, and the line is named. */
        g_clear_pointer(&text, g_free);
        exec_of(&exec, "[Service]\nType=oneshot\n");
        ck_assert_int_eq(scope_dropin_text(&req, &text, NULL), -ENOEXEC);
        unit_exec_done(&exec);
        exec_of(&exec, "[Service]\nExecStart=-\n");
        ck_assert_int_eq(scope_dropin_text(&req, &text, &bad), -EINVAL);
        ck_assert_str_eq(bad, "-");
        ck_assert_ptr_null(text);
        unit_exec_done(&exec);
}
END_TEST

START_TEST(test_parse_foreign_text) {
        ck_assert_int_eq(scope_dropin_parse("[Service]\nExecStart=/bin/true\n", NULL), SCOPE_VIA_NONE);
        ck_assert_int_eq(scope_dropin_parse("", NULL), SCOPE_VIA_NONE);
        ck_assert_int_eq(scope_dropin_parse(NULL, NULL), SCOPE_VIA_NONE);
        ck_assert_str_eq(scope_via_to_string(SCOPE_VIA_MEMORY_THP), "MemoryTHP");
        ck_assert_ptr_null(scope_via_to_string(_SCOPE_VIA_MAX));
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("scope-dropin", "core", NULL, NULL,
                                         test_memory_thp_path,
                                         test_memory_thp_madvise_and_its_fallback,
                                         test_helper_path,
                                         test_parse_foreign_text));
}

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

static const char mongo_always[] = "[Policy]\nUnits=mongod.service\nScope=service\n"
                                   "[TransparentHugePages]\nEnabled=always\n";

/* Always for one service: the blanket gives every service madvise, the policy's own services
 * are exempt by a drop-in that systemd applies after it. */
START_TEST(test_always_blanket_and_exemption) {
        g_autoptr(Policy) mongo = parse_policy(mongo_always);
        g_autofree char *blanket = NULL, *exempt = NULL, *value = NULL;
        const Policy *policies[] = { mongo };
        ScopeDropinRequest req = {
                .policy = mongo, .unit = "mongod.service", .via = SCOPE_VIA_MEMORY_THP, .kernel_except_advised = true,
        };

        ck_assert_ptr_null(scope_blanket_unavailable(SCOPE_VIA_MEMORY_THP, true));
        blanket = scope_blanket_text(policies, 1);
        ck_assert_str_eq(blanket,
                         "# Written by thpd-generator: THP always is for the services of\n"
                         "#   /usr/lib/thpd/policy.d/redis.conf (Scope=service, Enabled=always)\n"
                         "# alone. Every other service gets madvise at its start: THP only where its program asks.\n"
                         "# A drop-in of the service's own that sorts after this file wins: those services'\n"
                         "# zz-thpd-scope.conf (MemoryTHP=inherit), and that of a service that asks for never.\n"
                         "[Service]\n"
                         "MemoryTHP=madvise\n");
        /* No ExecStart= is needed: the unit need not even be installed yet. */
        ck_assert_int_eq(scope_dropin_text(&req, &exempt, NULL), 0);
        ck_assert_str_eq(exempt,
                         "# Written by thpd-generator for /usr/lib/thpd/policy.d/redis.conf\n"
                         "# (Scope=service, Enabled=always): mongod.service keeps the machine-wide always,\n"
                         "# exempt from the blanket MemoryTHP=madvise (service.d/10-thpd-madvise.conf)\n"
                         "# that every other service gets.\n"
                         "[Service]\n"
                         "MemoryTHP=inherit\n");
        ck_assert_int_eq(scope_dropin_parse(exempt, &value), SCOPE_VIA_MEMORY_THP);
        ck_assert_str_eq(value, "inherit");
        ck_assert_int_eq(scope_dropin_parse(blanket, NULL), SCOPE_VIA_MEMORY_THP);

        /* systemd applies the drop-ins of all directories in file name order: the exemption (and
         * a never service's isolation, same name) last, an admin's usual names after the blanket. */
        ck_assert_int_lt(strcmp(SCOPE_BLANKET_NAME, SCOPE_DROPIN_NAME), 0);
        ck_assert_int_lt(strcmp(SCOPE_BLANKET_NAME, "override.conf"), 0);
        ck_assert_int_lt(strcmp(SCOPE_BLANKET_NAME, "50-memory.conf"), 0);
}
END_TEST

/* Without the manager's MemoryTHP= or the kernel's flag, no blanket: the service's drop-in holds
 * comments only, and says why always is machine-wide. */
START_TEST(test_always_fallback) {
        g_autoptr(Policy) mongo = parse_policy(mongo_always);
        g_autofree char *no_manager = NULL, *no_kernel = NULL, *value = NULL, *value2 = NULL;
        ScopeDropinRequest req = { .policy = mongo, .unit = "mongod.service", .via = SCOPE_VIA_HELPER,
                                   .kernel_except_advised = true };

        ck_assert_str_eq(scope_blanket_unavailable(SCOPE_VIA_HELPER, true),
                         "the service manager has no MemoryTHP= (systemd 260 and later)");
        ck_assert_str_eq(scope_blanket_unavailable(SCOPE_VIA_MEMORY_THP, false),
                         "the kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 and later)");
        ck_assert_int_eq(scope_dropin_text(&req, &no_manager, NULL), 0);
        ck_assert_str_eq(no_manager,
                         "# Written by thpd-generator for /usr/lib/thpd/policy.d/redis.conf\n"
                         "# (Scope=service, Enabled=always): THP is always machine-wide while mongod.service runs,\n"
                         "# for every service: no blanket MemoryTHP=madvise was written for the others.\n"
                         "# No blanket: the service manager has no MemoryTHP= (systemd 260 and later)\n");
        ck_assert_ptr_null(strstr(no_manager, "[Service]"));
        ck_assert_int_eq(scope_dropin_parse(no_manager, &value), SCOPE_VIA_MACHINE_WIDE);
        ck_assert_str_eq(value, "the service manager has no MemoryTHP= (systemd 260 and later)");

        req.via = SCOPE_VIA_MEMORY_THP;
        req.kernel_except_advised = false;
        ck_assert_int_eq(scope_dropin_text(&req, &no_kernel, NULL), 0);
        ck_assert_int_eq(scope_dropin_parse(no_kernel, &value2), SCOPE_VIA_MACHINE_WIDE);
        ck_assert_str_eq(value2, "the kernel has no PR_THP_DISABLE_EXCEPT_ADVISED (Linux 6.18 and later)");
        ck_assert_str_eq(scope_via_to_string(SCOPE_VIA_MACHINE_WIDE), "machine-wide");
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

/* Where a running service stands with the blanket: it took effect at second 1000. */
START_TEST(test_blanket_classify) {
        const uint64_t since = 1000 * USEC_PER_SEC;
        BlanketFacts f = { .has_blanket = true, .started_usec = since + 1 };

        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_UNDER);
        f.started_usec = since;
        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_UNDER);
        /* Started before the daemon-reload that loaded it: the machine's value until a restart. */
        f.started_usec = since - 1;
        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_BEFORE);
        /* A start the manager does not tell may predate it. */
        f.started_usec = 0;
        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_BEFORE);
        /* A later drop-in sets MemoryTHP= (the policy's own unit, a never): whenever it started. */
        f.overridden = true;
        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_EXEMPT);
        f = (BlanketFacts) { .has_blanket = false, .started_usec = since + 1 };
        ck_assert_int_eq(scope_blanket_classify(&f, since), BLANKET_EXEMPT);

        ck_assert_str_eq(blanket_class_to_string(BLANKET_BEFORE), "before");
        ck_assert_ptr_null(blanket_class_to_string(_BLANKET_CLASS_MAX));
}
END_TEST

START_TEST(test_blanket_dropins) {
        ck_assert(scope_dropin_is_blanket("/run/systemd/generator/service.d/10-thpd-madvise.conf"));
        ck_assert(scope_dropin_is_blanket("/run/user/0/systemd/generator/service.d/10-thpd-madvise.conf"));
        /* The same name in a unit's own directory is not the top-level blanket. */
        ck_assert(!scope_dropin_is_blanket("/etc/systemd/system/cron.service.d/10-thpd-madvise.conf"));
        ck_assert(!scope_dropin_is_blanket("/run/systemd/generator/mongod.service.d/zz-thpd-scope.conf"));
        ck_assert(!scope_dropin_is_blanket(NULL));

        ck_assert(scope_dropin_sets_memory_thp("# Written by thpd-generator\n[Service]\nMemoryTHP=inherit\n"));
        ck_assert(scope_dropin_sets_memory_thp("[Service]\n  MemoryTHP=disable"));
        ck_assert(!scope_dropin_sets_memory_thp("[Service]\n# MemoryTHP=disable\nLimitNOFILE=65536\n"));
        ck_assert(!scope_dropin_sets_memory_thp(""));
        ck_assert(!scope_dropin_sets_memory_thp(NULL));
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("scope-dropin", "core", NULL, NULL,
                                         test_memory_thp_path,
                                         test_memory_thp_madvise_and_its_fallback,
                                         test_helper_path,
                                         test_always_blanket_and_exemption,
                                         test_always_fallback,
                                         test_parse_foreign_text,
                                         test_blanket_classify,
                                         test_blanket_dropins));
}

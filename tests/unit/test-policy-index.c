/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "policy-index.h"
#include "test-util.h"
#include "util.h"

static Policy *policy(const char *name, const char *units) {
        Policy *p = g_new0(Policy, 1);

        p->name = g_strdup(name);
        p->units = g_strsplit(units, " ", -1);
        return p;
}

/* Plain names, templates, globs, a name twice in one policy and in two, a template that is also
 * written out as an instance, and entries that look like one kind but are another. */
static GPtrArray *policies(void) {
        GPtrArray *a = g_ptr_array_new_with_free_func(policy_free_void);

        g_ptr_array_add(a, policy("a.conf", "redis-server.service redis.service redis-server@.service"));
        g_ptr_array_add(a, policy("b.conf", "postgresql@.service postgresql@15-main.service"));
        g_ptr_array_add(a, policy("c.conf", "redis.service redis.service"));
        g_ptr_array_add(a, policy("d.conf", "cri-containerd-*.scope kube?.slice"));
        g_ptr_array_add(a, policy("e.conf", "foo@bar.service foo@.socket x@y@.service"));
        g_ptr_array_add(a, policy("f.conf", "[ab]x.service *@.service"));
        g_ptr_array_add(a, policy("g.conf", "back\\slash.service"));
        g_ptr_array_add(a, policy("h.conf", "postgresql@.service"));
        return a;
}

static const char *const names[] = {
        "redis-server.service", "redis.service", "redis-server@6379.service", "redis-server@.service",
        "redis-server.socket", "xredis-server.service", "postgresql@15-main.service",
        "postgresql@.service", "postgresql@a.b.service", "postgresql.service", "postgresql@x.socket",
        "cri-containerd-abc.scope", "cri-containerd-.scope", "kube1.slice", "kube12.slice",
        "foo@bar.service", "foo@baz.service", "foo@x.socket", "foo@.socket", "x@y@.service",
        "x@y@z.service", "ax.service", "cx.service", "any@thing.service", "back\\slash.service",
        "backslash.service", "@.service", "", "service", "a@", "redis-server@6379.service.d",
};

START_TEST(test_same_answers_as_policy_matches_unit) {
        g_autoptr(GPtrArray) all = policies();
        g_autoptr(PolicyIndex) idx = policy_index_new(all);

        for (size_t n = 0; n < G_N_ELEMENTS(names); n++) {
                g_autoptr(GPtrArray) want = g_ptr_array_new();
                g_autoptr(GPtrArray) got = g_ptr_array_new();

                for (guint i = 0; i < all->len; i++)
                        if (policy_matches_unit(g_ptr_array_index(all, i), names[n]))
                                g_ptr_array_add(want, g_ptr_array_index(all, i));

                ck_assert_uint_eq(policy_index_lookup(idx, names[n], got), want->len);
                ck_assert_msg(got->len == want->len, "%s: %u policies, want %u", names[n], got->len, want->len);
                for (guint i = 0; i < want->len; i++)
                        ck_assert_msg(g_ptr_array_index(got, i) == g_ptr_array_index(want, i),
                                      "%s: policy %u is %s, want %s", names[n], i,
                                      ((Policy *) g_ptr_array_index(got, i))->name,
                                      ((Policy *) g_ptr_array_index(want, i))->name);
                ck_assert_int_eq(policy_index_matches(idx, names[n]), want->len > 0);
        }
}
END_TEST

START_TEST(test_each_policy_once_in_order) {
        g_autoptr(GPtrArray) all = policies();
        g_autoptr(PolicyIndex) idx = policy_index_new(all);
        g_autoptr(GPtrArray) got = g_ptr_array_new();

        /* b.conf by its template and by name, h.conf after it, f.conf by its glob. */
        ck_assert_uint_eq(policy_index_lookup(idx, "postgresql@15-main.service", got), 3);
        ck_assert_str_eq(((Policy *) g_ptr_array_index(got, 0))->name, "b.conf");
        ck_assert_str_eq(((Policy *) g_ptr_array_index(got, 1))->name, "f.conf");
        ck_assert_str_eq(((Policy *) g_ptr_array_index(got, 2))->name, "h.conf");
        ck_assert_int_eq(policy_index_position(idx, g_ptr_array_index(all, 7)), 7);
}
END_TEST

/* Many policies of one name each: every name finds its own policy and no other. */
START_TEST(test_many_policies) {
        g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(policy_free_void);
        g_autoptr(PolicyIndex) idx = NULL;

        for (unsigned i = 0; i < 3000; i++) {
                g_autofree char *name = g_strdup_printf("p%04u.conf", i);
                g_autofree char *units = i % 10 == 9 ? g_strdup_printf("tmpl-%04u@.service", i)
                                                     : g_strdup_printf("unit-%04u.service", i);

                g_ptr_array_add(all, policy(name, units));
        }
        idx = policy_index_new(all);
        for (unsigned i = 0; i < 3000; i++) {
                g_autofree char *unit = i % 10 == 9 ? g_strdup_printf("tmpl-%04u@inst.service", i)
                                                    : g_strdup_printf("unit-%04u.service", i);
                g_autoptr(GPtrArray) got = g_ptr_array_new();

                ck_assert_uint_eq(policy_index_lookup(idx, unit, got), 1);
                ck_assert_ptr_eq(g_ptr_array_index(got, 0), g_ptr_array_index(all, i));
        }
        ck_assert(!policy_index_matches(idx, "unit-3000.service"));
}
END_TEST

START_TEST(test_empty_and_null) {
        g_autoptr(GPtrArray) none = g_ptr_array_new();
        g_autoptr(PolicyIndex) idx = policy_index_new(none);
        g_autoptr(GPtrArray) got = g_ptr_array_new();

        ck_assert_uint_eq(policy_index_lookup(idx, "redis.service", got), 0);
        ck_assert(!policy_index_matches(NULL, "redis.service"));
        ck_assert_int_eq(policy_index_position(idx, NULL), -1);
        ck_assert_ptr_null(policy_index_free(NULL));
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("policy-index", "lookup", NULL, NULL,
                                         test_same_answers_as_policy_matches_unit,
                                         test_each_policy_once_in_order,
                                         test_many_policies,
                                         test_empty_and_null));
}

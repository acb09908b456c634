/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "manager-blanket.h"
#include "manager-bus-internal.h"
#include "test-util.h"
#include "thpd-bus.h"
#include "util.h"

/* PropertiesChanged names a property only through its row in MANAGER_PROPERTIES(): one that
 * emits without it, written into the vtable by hand or declared so in the XML, is never
 * announced. */

#define TRACKED_NAME(id, name, signature, get, digest) name,
static const char *const tracked_names[_TRACKED_MAX] = { MANAGER_PROPERTIES(TRACKED_NAME, PROPERTY_IGNORE) };
#undef TRACKED_NAME

#define TRACKED_DIGEST(id, name, signature, get, digest) digest,
static uint64_t (*const tracked_digests[_TRACKED_MAX])(const BusData *d) = {
        MANAGER_PROPERTIES(TRACKED_DIGEST, PROPERTY_IGNORE)
};
#undef TRACKED_DIGEST

#define ANY_NAME(id, name, ...) name,
#define PLAIN_NAME(name, ...) name,
static const char *const all_names[] = { MANAGER_PROPERTIES(ANY_NAME, PLAIN_NAME) };
#undef ANY_NAME
#undef PLAIN_NAME

static bool is_tracked(const char *name) {
        for (size_t i = 0; i < _TRACKED_MAX; i++)
                if (streq(tracked_names[i], name))
                        return true;
        return false;
}

START_TEST(test_vtable_emitting_properties_are_tracked) {
        size_t n_emitting = 0;

        for (const sd_bus_vtable *v = bus_manager_vtable; v->type != _SD_BUS_VTABLE_END; v++) {
                bool emits;

                if (v->type != _SD_BUS_VTABLE_PROPERTY && v->type != _SD_BUS_VTABLE_WRITABLE_PROPERTY)
                        continue;
                emits = v->flags & (SD_BUS_VTABLE_PROPERTY_EMITS_CHANGE | SD_BUS_VTABLE_PROPERTY_EMITS_INVALIDATION);
                ck_assert_msg(emits == is_tracked(v->x.property.member),
                              "%s %s PropertiesChanged in the vtable but %s in MANAGER_PROPERTIES()",
                              v->x.property.member, emits ? "emits" : "does not emit", emits ? "has no digest" : "is TRACKED");
                n_emitting += emits;
        }
        ck_assert_uint_eq(n_emitting, _TRACKED_MAX);
}
END_TEST

/* The properties of org.thpd1.Manager in the XML: their names, and those that emit. */
typedef struct XmlProperties {
        bool in_manager;
        char *property; /* the <property> being read */
        bool emits;
        GPtrArray *all;
        GPtrArray *emitting;
} XmlProperties;

static const char *attribute(const char **names, const char **values, const char *wanted) {
        for (size_t i = 0; names[i]; i++)
                if (streq(names[i], wanted))
                        return values[i];
        return NULL;
}

static void xml_start(GMarkupParseContext *context, const char *element, const char **names, const char **values,
                      gpointer userdata, GError **error) {
        XmlProperties *x = userdata;

        if (streq(element, "interface"))
                x->in_manager = streq_ptr(attribute(names, values, "name"), THPD_BUS_INTERFACE);
        else if (x->in_manager && streq(element, "property")) {
                x->property = g_strdup(attribute(names, values, "name"));
                /* The D-Bus default when the annotation is absent. */
                x->emits = true;
        } else if (x->property && streq(element, "annotation") &&
                   streq_ptr(attribute(names, values, "name"), "org.freedesktop.DBus.Property.EmitsChangedSignal")) {
                const char *value = attribute(names, values, "value");

                x->emits = streq_ptr(value, "true") || streq_ptr(value, "invalidates");
        }
}

static void xml_end(GMarkupParseContext *context, const char *element, gpointer userdata, GError **error) {
        XmlProperties *x = userdata;

        if (streq(element, "interface"))
                x->in_manager = false;
        else if (x->property && streq(element, "property")) {
                if (x->emits)
                        g_ptr_array_add(x->emitting, g_strdup(x->property));
                g_ptr_array_add(x->all, g_steal_pointer(&x->property));
        }
}

START_TEST(test_xml_emitting_properties_are_tracked) {
        static const GMarkupParser parser = { .start_element = xml_start, .end_element = xml_end };
        const char *root = g_getenv("THPD_SOURCE_ROOT");
        g_autofree char *path = NULL, *text = NULL;
        g_autoptr(GPtrArray) all = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GPtrArray) emitting = g_ptr_array_new_with_free_func(g_free);
        XmlProperties x = { .all = all, .emitting = emitting };
        g_autoptr(GMarkupParseContext) context = g_markup_parse_context_new(&parser, 0, &x, NULL);
        g_autoptr(GError) error = NULL;

        ck_assert_ptr_nonnull(root);
        path = g_build_filename(root, "data", "org.thpd1.Manager.xml", NULL);
        ck_assert_msg(g_file_get_contents(path, &text, NULL, &error), "%s", error ? error->message : path);
        ck_assert_msg(g_markup_parse_context_parse(context, text, -1, &error) &&
                      g_markup_parse_context_end_parse(context, &error), "%s", error ? error->message : path);

        ck_assert_uint_eq(all->len, ELEMENTSOF(all_names));
        for (size_t i = 0; i < ELEMENTSOF(all_names); i++)
                ck_assert_msg(g_ptr_array_find_with_equal_func(all, all_names[i], g_str_equal, NULL),
                              "%s is in MANAGER_PROPERTIES() but not in %s", all_names[i], path);
        for (guint i = 0; i < emitting->len; i++)
                ck_assert_msg(is_tracked(g_ptr_array_index(emitting, i)),
                              "%s emits PropertiesChanged in %s but has no digest in MANAGER_PROPERTIES()",
                              (const char *) g_ptr_array_index(emitting, i), path);
        ck_assert_uint_eq(emitting->len, _TRACKED_MAX);
}
END_TEST

/* The tracked properties whose digest differs from before[], as a bit each; before[] is updated. */
static uint64_t changed(const BusData *d, uint64_t before[_TRACKED_MAX]) {
        uint64_t mask = 0;

        for (size_t i = 0; i < _TRACKED_MAX; i++) {
                uint64_t now = tracked_digests[i](d);

                if (now != before[i])
                        mask |= UINT64_C(1) << i;
                before[i] = now;
        }
        return mask;
}

#define BIT(id) (UINT64_C(1) << TRACKED_##id)

START_TEST(test_digests_follow_the_state) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        g_auto(GStrv) dirs = g_strsplit("/nonexistent/policies", ":", -1);
        ManagerOptions options = { .policy_dirs = dirs };
        Manager *m = NULL;
        uint64_t digests[_TRACKED_MAX] = {}, first[_TRACKED_MAX];
        PoolStatus pool = { .page_size_kb = 2048, .target = 8, .allocated = 8, .free = 8 };
        DriftEvent drift = {};
        DriftConflict conflict = {};
        Isolation *iso = g_new0(Isolation, 1);
        BusData d;

        ck_assert_int_eq(sd_event_new(&event), 0);
        ck_assert_int_eq(manager_new(event, &options, &m), 0);
        d = (BusData) { .m = m };
        (void) changed(&d, digests);
        memcpy(first, digests, sizeof first);

        /* Nothing changed: nothing to announce. */
        ck_assert_uint_eq(changed(&d, digests), 0);

        /* A knob the kernel has: its row in Knobs and in Ownership. */
        m->present[KNOB_DEFRAG] = true;
        m->applied[KNOB_DEFRAG] = 0;
        ck_assert_uint_eq(changed(&d, digests), BIT(KNOBS) | BIT(STATUS) | BIT(OWNERSHIP));
        m->applied[KNOB_DEFRAG] = 1;
        ck_assert_uint_eq(changed(&d, digests), BIT(KNOBS) | BIT(STATUS));

        d.active_policies_changes++;
        ck_assert_uint_eq(changed(&d, digests), BIT(ACTIVE_POLICIES));
        d.needs_restart_changes++;
        ck_assert_uint_eq(changed(&d, digests), BIT(NEEDS_RESTART));

        /* The blanket: when it took effect, then a service under it and one started before it,
         * which is a restart hint too once the policy whose blanket it is loaded. */
        BlanketWatch blanket = { .services = g_hash_table_new(g_str_hash, g_str_equal) };
        BlanketEntry cron = { .service = { .unit = (char *) "cron.service", .class = BLANKET_UNDER } };
        BlanketEntry ssh = { .service = { .unit = (char *) "ssh.service", .class = _BLANKET_CLASS_INVALID } };
        Policy *mongodb = g_new0(Policy, 1);

        m->blanket = &blanket;
        ck_assert_uint_eq(changed(&d, digests), 0);
        blanket.since = 1000;
        ck_assert_uint_eq(changed(&d, digests), BIT(BLANKET_SINCE));
        g_hash_table_insert(blanket.services, cron.service.unit, &cron);
        ck_assert_uint_eq(changed(&d, digests), BIT(BLANKET_SERVICES) | BIT(NEEDS_RESTART));
        /* Asked, not answered yet: not shown. */
        g_hash_table_insert(blanket.services, ssh.service.unit, &ssh);
        ck_assert_uint_eq(changed(&d, digests), 0);
        ssh.service.class = BLANKET_BEFORE;
        ck_assert_uint_eq(changed(&d, digests), BIT(BLANKET_SERVICES) | BIT(NEEDS_RESTART));
        *mongodb = (Policy) { .name = g_strdup("mongodb.conf"), .scope = POLICY_SCOPE_SERVICE,
                              .service_thp = KNOB_ENABLED_ALWAYS };
        g_ptr_array_add(m->policies, mongodb);
        ck_assert_uint_eq(changed(&d, digests), BIT(NEEDS_RESTART));
        g_ptr_array_remove_index(m->policies, m->policies->len - 1);
        m->blanket = NULL;
        g_hash_table_destroy(blanket.services);
        ck_assert_uint_eq(changed(&d, digests), BIT(BLANKET_SINCE) | BIT(BLANKET_SERVICES) | BIT(NEEDS_RESTART));

        g_array_append_val(m->pools, pool);
        ck_assert_uint_eq(changed(&d, digests), BIT(POOLS));
        g_array_index(m->pools, PoolStatus, 0).free = 7;
        ck_assert_uint_eq(changed(&d, digests), BIT(POOLS));
        g_array_index(m->pools, PoolStatus, 0).shortfall = g_strdup("only 7 of 8 pages");
        ck_assert_uint_eq(changed(&d, digests), BIT(POOLS));

        iso->unit = g_strdup("redis-server.service");
        iso->policy = g_strdup("redis.conf");
        iso->mode = 0;
        iso->scope = POLICY_SCOPE_AUTO;
        g_hash_table_insert(m->isolation, iso->unit, iso);
        ck_assert_uint_eq(changed(&d, digests), BIT(ISOLATED_SERVICES));
        /* Met per service: no longer machine-wide. */
        g_hash_table_add(m->per_service, g_strdup("redis.conf"));
        ck_assert_uint_eq(changed(&d, digests), BIT(ISOLATED_SERVICES));
        iso->note = g_strdup("PID 123 (redis-server) has THP_enabled: 1");
        ck_assert_uint_eq(changed(&d, digests), BIT(ISOLATED_SERVICES));

        m->override[KNOB_ENABLED] = 0;
        ck_assert_uint_eq(changed(&d, digests), BIT(OVERRIDE));
        m->override_expires_realtime = 1700000000 * USEC_PER_SEC;
        ck_assert_uint_eq(changed(&d, digests), BIT(OVERRIDE_EXPIRES_AT));

        m->settings.storm.action = m->settings.storm.action == STORM_ACTION_LOG ? STORM_ACTION_MITIGATE : STORM_ACTION_LOG;
        ck_assert_uint_eq(changed(&d, digests), BIT(STORM_ACTION));

        diagnostics_add(&m->policy_diagnostics, DIAGNOSTIC_WARNING, "/nonexistent/policies/redis.conf", 3, "odd key");
        ck_assert_uint_eq(changed(&d, digests), BIT(POLICY_DIAGNOSTICS));

        drift.item = g_strdup("enabled");
        drift.expected = g_strdup("madvise");
        drift.found = g_strdup("always");
        drift.action = DRIFT_ACTION_RESTORE;
        g_array_append_val(m->drift.recent, drift);
        ck_assert_uint_eq(changed(&d, digests), BIT(RECENT_DRIFT));
        g_array_index(m->drift.recent, DriftEvent, 0).writer = g_strdup("tuned.service");
        g_array_index(m->drift.recent, DriftEvent, 0).credit = DRIFT_CREDIT_JOB_RUNNING;
        ck_assert_uint_eq(changed(&d, digests), BIT(RECENT_DRIFT));

        conflict.item = g_strdup("enabled");
        conflict.value = g_strdup("always");
        g_array_append_val(m->drift.conflicts, conflict);
        ck_assert_uint_eq(changed(&d, digests), BIT(DRIFT_CONFLICTS) | BIT(STATUS));
        g_array_index(m->drift.conflicts, DriftConflict, 0).writer = g_strdup("tuned.service");
        ck_assert_uint_eq(changed(&d, digests), BIT(DRIFT_CONFLICTS));

        /* Whose defrag is: thpd's leftover, then a writer's; what the writer said names it. */
        m->own.knobs[KNOB_DEFRAG] = OWNER_THPD;
        ck_assert_uint_eq(changed(&d, digests), BIT(OWNERSHIP));
        m->own.knobs[KNOB_DEFRAG] = OWNER_WRITER;
        ck_assert_uint_eq(changed(&d, digests), BIT(OWNERSHIP));
        drift_restore_conflict(&m->drift, "defrag", "tuned.service", NULL, "never", 1);
        ck_assert_uint_eq(changed(&d, digests), BIT(DRIFT_CONFLICTS) | BIT(STATUS) | BIT(OWNERSHIP));
        g_array_index(m->drift.conflicts, DriftConflict, 1).writer_detail = g_strdup("profile hpc-compute");
        ck_assert_uint_eq(changed(&d, digests), BIT(OWNERSHIP));

        /* What thpd says of max_ptes_none besides its votes: the shrinker it drives, then why it
         * was moved, which no other property shows. */
        m->features.shrink_underused = true;
        m->target.value[KNOB_KHUGEPAGED_MAX_PTES_NONE] = 0;
        ck_assert_uint_eq(changed(&d, digests), 0);
        m->present[KNOB_KHUGEPAGED_MAX_PTES_NONE] = true;
        m->applied[KNOB_KHUGEPAGED_MAX_PTES_NONE] = 0;
        ck_assert_uint_eq(changed(&d, digests), BIT(KNOBS) | BIT(OWNERSHIP) | BIT(KNOB_NOTES));
        m->target.max_ptes_none_voted = 255;
        ck_assert_uint_eq(changed(&d, digests), BIT(KNOB_NOTES));

        /* Back to the first state, back to the first digests (but the two counted). */
        m->present[KNOB_KHUGEPAGED_MAX_PTES_NONE] = false;
        m->applied[KNOB_KHUGEPAGED_MAX_PTES_NONE] = KNOB_VALUE_UNSET;
        m->target.value[KNOB_KHUGEPAGED_MAX_PTES_NONE] = KNOB_VALUE_UNSET;
        m->target.max_ptes_none_voted = KNOB_VALUE_UNSET;
        m->features.shrink_underused = false;
        m->present[KNOB_DEFRAG] = false;
        m->applied[KNOB_DEFRAG] = KNOB_VALUE_UNSET;
        m->own.knobs[KNOB_DEFRAG] = OWNER_BASELINE;
        g_array_set_size(m->pools, 0);
        g_hash_table_remove_all(m->isolation);
        g_hash_table_remove_all(m->per_service);
        m->override[KNOB_ENABLED] = KNOB_VALUE_UNSET;
        m->override_expires_realtime = 0;
        m->settings.storm.action = m->settings.storm.action == STORM_ACTION_LOG ? STORM_ACTION_MITIGATE : STORM_ACTION_LOG;
        diagnostics_clear(&m->policy_diagnostics);
        g_array_set_size(m->drift.recent, 0);
        g_array_set_size(m->drift.conflicts, 0);
        (void) changed(&d, digests);
        for (size_t i = 0; i < _TRACKED_MAX; i++)
                if (i != TRACKED_ACTIVE_POLICIES && i != TRACKED_NEEDS_RESTART)
                        ck_assert_msg(digests[i] == first[i], "%s differs in the same state", tracked_names[i]);

        manager_free(m);
}
END_TEST

int main(void) {
        return test_run_suite(TEST_SUITE("bus-properties", "core", NULL, NULL,
                                         test_vtable_emitting_properties_are_tracked,
                                         test_xml_emitting_properties_are_tracked,
                                         test_digests_follow_the_state));
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ctl-bus.h"
#include "ctl-json.h"
#include "ctl-properties.h"
#include "ctl-table.h"
#include "log.h"
#include "util.h"

const char *const ctl_property_names[] = {
        "Version", "Status", "Knobs", "ActivePolicies", "HugeTLBPools", "NeedsRestart", "IsolatedServices", "BlanketSince",
        "BlanketServices", "Override", "OverrideExpiresAt", "StormState", "StormAction", "Storms", "SizeStats",
        "PolicyDiagnostics", "DriftConflicts", "RecentDrift", "Ownership", "KnobNotes", NULL,
};

/* How one field of a row the bus sends is read, freed and shown: the rows of a list property are
 * decoded, released, and turned into a table for show and --json from one description of them. */
typedef enum FieldType {
        FIELD_STRING,          /* char *, from 's' */
        FIELD_OPTIONAL,        /* char *, from 's'; "" means none, which JSON says as null */
        FIELD_STRV,            /* char **, from "as" */
        FIELD_ROWS,            /* GArray * of Field.rows, from an array of them */
        FIELD_UINT,            /* uint64_t, from 't' */
        FIELD_UINT_OPTIONAL,   /* uint64_t, from 't'; 0 means none */
        FIELD_UINT32_OPTIONAL, /* unsigned, from 'u'; 0 means none */
        FIELD_INT_OPTIONAL,    /* int32_t, from 'i'; negative means none */
        FIELD_DOUBLE,          /* double, from 'd' */
        FIELD_BOOL,            /* bool, from 'b' */
        FIELD_TIME,            /* uint64_t, CLOCK_REALTIME µs, from 't'; 0 means none */
        FIELD_DERIVED,         /* char *, not on the bus: made by the row's finish() */
} FieldType;

typedef struct RowType RowType;

typedef struct Field {
        const char *title;    /* its name in show's NAME.ID.TITLE=; NULL: not there. The first one names the row. For
                               * a property show gives a line per row, a part of that line */
        const char *json_key; /* NULL: not in JSON */
        const char *empty;    /* what show says for none; NULL: nothing */
        FieldType type;
        size_t offset;
        const RowType *rows; /* FIELD_ROWS: what they are */
} Field;

struct RowType {
        const char *signature;     /* of one row: "(sssssss)", or "{ss}" for a dictionary */
        size_t size;
        const Field *fields;       /* in the order of the bus */
        size_t n_fields;
        const size_t *json_order;  /* the fields in the order of JSON; NULL: that of the bus */
        const size_t *text_order;  /* what show's line of a row gives, as indices into json_order; NULL: the
                                    * fields with a title, in the order of JSON */
        size_t n_text;
        void (*finish)(void *row); /* after a row is read, for what the row keeps in another form */
        GDestroyNotify clear;      /* row_clear() of this type, for g_array_set_clear_func() */
};

/* A field of the C type ctype's member; FIELD_OR() one that show gives as e when it is none; ROWS() one of
 * FIELD_ROWS. */
#define FIELD(t, k, ty, ctype, member) { .title = (t), .json_key = (k), .type = (ty), .offset = offsetof(ctype, member) }
#define FIELD_OR(t, k, ty, ctype, member, e)                                                                   \
        { .title = (t), .json_key = (k), .type = (ty), .offset = offsetof(ctype, member), .empty = (e) }
#define ROWS(t, k, ctype, member, r) { .title = (t), .json_key = (k), .type = FIELD_ROWS, .offset = offsetof(ctype, member), .rows = (r) }

static void row_clear(const RowType *type, void *row) {
        for (size_t i = 0; i < type->n_fields; i++) {
                void *p = (uint8_t *) row + type->fields[i].offset;

                switch (type->fields[i].type) {
                case FIELD_STRING:
                case FIELD_OPTIONAL:
                case FIELD_DERIVED:
                        g_clear_pointer((char **) p, g_free);
                        break;
                case FIELD_STRV:
                        g_clear_pointer((char ***) p, g_strfreev);
                        break;
                case FIELD_ROWS:
                        g_clear_pointer((GArray **) p, g_array_unref);
                        break;
                default:
                        break;
                }
        }
}

/* Defines the RowType name for rows of ctype, from name##_fields, and its clear function: GLib
 * passes the element alone, so each type needs one of its own. */
#define ROW_TYPE(name, ctype, sig, ...)                                                                       \
        static void name##_clear(gpointer p);                                                                \
        static const RowType name = {                                                                        \
                .signature = sig, .size = sizeof(ctype), .fields = name##_fields,                            \
                .n_fields = ELEMENTSOF(name##_fields), .clear = name##_clear, __VA_ARGS__                    \
        };                                                                                                   \
        static void name##_clear(gpointer p) {                                                               \
                row_clear(&name, p);                                                                         \
        }

static const Field knob_row_fields[] = {
        FIELD("Knob", "knob", FIELD_STRING, CtlKnob, name),
        FIELD("Applied", "applied", FIELD_OPTIONAL, CtlKnob, applied),
        FIELD("Target", "target", FIELD_OPTIONAL, CtlKnob, target),
        FIELD("Baseline", "baseline", FIELD_OPTIONAL, CtlKnob, baseline),
        FIELD("Source", "source", FIELD_OPTIONAL, CtlKnob, source),
        FIELD("Policy", "policy", FIELD_OPTIONAL, CtlKnob, policy),
        FIELD("Unit", "unit", FIELD_OPTIONAL, CtlKnob, unit),
};
ROW_TYPE(knob_row, CtlKnob, "(sssssss)")

static const Field active_policy_row_fields[] = {
        FIELD("Policy", "policy", FIELD_STRING, CtlActivePolicy, name),
        FIELD("Units", "units", FIELD_STRV, CtlActivePolicy, units),
};
ROW_TYPE(active_policy_row, CtlActivePolicy, "(sas)")

/* show names a pool "2048kB" or "2048kB.node0"; JSON gives the size and node apart. */
static void pool_finish(void *row) {
        CtlPool *pool = row;

        pool->name = pool->node < 0 ? g_strdup_printf("%" PRIu64 "kB", pool->page_size_kb)
                                    : g_strdup_printf("%" PRIu64 "kB.node%" PRIi32, pool->page_size_kb, pool->node);
}

static const Field pool_row_fields[] = {
        FIELD(NULL, "page_size_kb", FIELD_UINT, CtlPool, page_size_kb),
        FIELD(NULL, "node", FIELD_INT_OPTIONAL, CtlPool, node),
        FIELD("Pool", NULL, FIELD_DERIVED, CtlPool, name),
        FIELD("Target", "target", FIELD_UINT, CtlPool, target),
        FIELD("Allocated", "allocated", FIELD_UINT, CtlPool, allocated),
        FIELD("Free", "free", FIELD_UINT, CtlPool, free),
        FIELD("Shortfall", "shortfall", FIELD_OPTIONAL, CtlPool, shortfall),
};
ROW_TYPE(pool_row, CtlPool, "(tittts)", .finish = pool_finish)

/* NeedsRestart: unit and policy. */
static const Field needs_restart_row_fields[] = {
        FIELD("Unit", "unit", FIELD_STRING, CtlPair, key),
        FIELD("Policy", "policy", FIELD_STRING, CtlPair, value),
};
ROW_TYPE(needs_restart_row, CtlPair, "(ss)")

/* BlanketServices: unit and where it stands with the blanket. */
static const Field blanket_row_fields[] = {
        FIELD("Unit", "unit", FIELD_STRING, CtlPair, key),
        FIELD("State", "state", FIELD_STRING, CtlPair, value),
};
ROW_TYPE(blanket_row, CtlPair, "(ss)")

/* Override: knob and value, a dictionary: one object in JSON, "KNOB=VALUE ..." in show. */
static const Field override_row_fields[] = {
        FIELD(NULL, NULL, FIELD_STRING, CtlPair, key),
        FIELD(NULL, NULL, FIELD_STRING, CtlPair, value),
};
ROW_TYPE(override_row, CtlPair, "{ss}")

static const Field isolation_row_fields[] = {
        FIELD("Unit", "unit", FIELD_STRING, CtlIsolation, unit),
        FIELD("Policy", "policy", FIELD_STRING, CtlIsolation, policy),
        FIELD("THP", "thp", FIELD_STRING, CtlIsolation, thp),
        FIELD("State", "state", FIELD_STRING, CtlIsolation, state),
        FIELD("Note", "note", FIELD_OPTIONAL, CtlIsolation, note),
        FIELD("Scope", "scope", FIELD_STRING, CtlIsolation, scope),
        FIELD("Via", "via", FIELD_STRING, CtlIsolation, via),
        FIELD("MachineWide", "machine_wide", FIELD_BOOL, CtlIsolation, machine_wide),
};
ROW_TYPE(isolation_row, CtlIsolation, "(sssssssb)")

static const Field figure_row_fields[] = {
        FIELD(NULL, NULL, FIELD_STRING, CtlFigure, name),
        FIELD(NULL, NULL, FIELD_DOUBLE, CtlFigure, value),
};
ROW_TYPE(figure_row, CtlFigure, "{sd}")

/* The figures, a dictionary, are an object in JSON and a line each in show: Storms.KIND.NAME=. */
static const Field storm_row_fields[] = {
        FIELD("Kind", "kind", FIELD_STRING, CtlStorm, kind),
        FIELD("Phase", "phase", FIELD_STRING, CtlStorm, phase),
        ROWS("Figures", "figures", CtlStorm, figures, &figure_row),
};
ROW_TYPE(storm_row, CtlStorm, "(ssa{sd})")

static const Field counter_row_fields[] = {
        FIELD(NULL, NULL, FIELD_STRING, CtlCounter, name),
        FIELD(NULL, NULL, FIELD_UINT, CtlCounter, value),
};
ROW_TYPE(counter_row, CtlCounter, "{st}")

/* show names a size "64kB", as a pool: SizeStats.64kB.NAME= for each counter; JSON gives the number. */
static void size_stat_finish(void *row) {
        CtlSizeStat *s = row;

        s->name = g_strdup_printf("%" PRIu64 "kB", s->size_kb);
}

static const Field size_stat_row_fields[] = {
        FIELD(NULL, "size_kb", FIELD_UINT, CtlSizeStat, size_kb),
        FIELD("Size", NULL, FIELD_DERIVED, CtlSizeStat, name),
        FIELD("Enabled", "enabled", FIELD_OPTIONAL, CtlSizeStat, enabled),
        ROWS("Counters", "counters", CtlSizeStat, counters, &counter_row),
};
ROW_TYPE(size_stat_row, CtlSizeStat, "(tsa{st})", .finish = size_stat_finish)

/* A problem of a directory names no policy. show prints a problem as verify and the log do. */
static void diagnostic_finish(void *row) {
        CtlDiagnostic *d = row;

        if (d->policy && !d->policy[0])
                g_clear_pointer(&d->policy, g_free);
        d->text = ctl_diagnostic_format(d);
}

/* show gives a problem one line (Text); JSON its parts. */
static const Field diagnostic_row_fields[] = {
        FIELD(NULL, "policy", FIELD_STRING, CtlDiagnostic, policy),
        FIELD(NULL, "file", FIELD_STRING, CtlDiagnostic, file),
        FIELD(NULL, "line", FIELD_UINT32_OPTIONAL, CtlDiagnostic, line),
        FIELD(NULL, "severity", FIELD_STRING, CtlDiagnostic, severity),
        FIELD(NULL, "message", FIELD_STRING, CtlDiagnostic, message),
        FIELD("Text", NULL, FIELD_DERIVED, CtlDiagnostic, text),
};
ROW_TYPE(diagnostic_row, CtlDiagnostic, "(ssuss)", .finish = diagnostic_finish)

static const Field drift_conflict_row_fields[] = {
        FIELD("Knob", "knob", FIELD_STRING, CtlDriftConflict, knob),
        FIELD("Writer", "writer", FIELD_OPTIONAL, CtlDriftConflict, writer),
        FIELD("Value", "value", FIELD_STRING, CtlDriftConflict, value),
        FIELD("Since", "since", FIELD_TIME, CtlDriftConflict, since),
        FIELD("Message", "message", FIELD_STRING, CtlDriftConflict, text),
};
ROW_TYPE(drift_conflict_row, CtlDriftConflict, "(sssts)")

/* Ownership: the item is named as in DriftConflicts, so it has the same key. */
static const Field ownership_row_fields[] = {
        FIELD("Knob", "knob", FIELD_STRING, CtlOwnership, item),
        FIELD("Whose", "whose", FIELD_STRING, CtlOwnership, whose),
        FIELD("Detail", "detail", FIELD_OPTIONAL, CtlOwnership, detail),
};
ROW_TYPE(ownership_row, CtlOwnership, "(sss)")

/* KnobNotes: knob, what the note is about, and the sentence. */
static const Field knob_note_row_fields[] = {
        FIELD("Knob", "knob", FIELD_STRING, CtlKnobNote, knob),
        FIELD("Kind", "kind", FIELD_STRING, CtlKnobNote, kind),
        FIELD("Note", "note", FIELD_STRING, CtlKnobNote, note),
};
ROW_TYPE(knob_note_row, CtlKnobNote, "(sss)")

/* show gives each event one line that splits on blanks: KNOB FOUND EXPECTED WRITER ACTION WHEN
 * WRITTEN WRONG_USEC, the writer "-" when unknown and WRITTEN and WRONG_USEC 0 when the write was
 * not seen or the knob not restored. JSON has the writer's text after the writer, the bus last. */
static const Field drift_row_fields[] = {
        FIELD("Knob", "knob", FIELD_STRING, CtlDrift, knob),
        FIELD("Expected", "expected", FIELD_OPTIONAL, CtlDrift, expected),
        FIELD("Found", "found", FIELD_OPTIONAL, CtlDrift, found),
        FIELD_OR("Writer", "writer", FIELD_OPTIONAL, CtlDrift, writer, "-"),
        FIELD("Action", "action", FIELD_STRING, CtlDrift, action),
        FIELD("When", "when", FIELD_TIME, CtlDrift, when),
        FIELD("Written", "written", FIELD_TIME, CtlDrift, written),
        FIELD_OR("WrongUSec", "wrong_usec", FIELD_UINT_OPTIONAL, CtlDrift, wrong_usec, "0"),
        FIELD(NULL, "writer_text", FIELD_STRING, CtlDrift, who),
};
static const size_t drift_json_order[] = { 0, 1, 2, 3, 8, 4, 5, 6, 7 };
static const size_t drift_text_order[] = { 0, 2, 1, 3, 5, 6, 7, 8 };
ROW_TYPE(drift_row, CtlDrift, "(sssssttts)", .json_order = drift_json_order, .text_order = drift_text_order,
         .n_text = ELEMENTSOF(drift_text_order))

/* The properties, as the fields of one row: CtlProperties. JSON keys are snake_case everywhere, so
 * a property's key is not derived from its name. */
static const Field property_fields[] = {
        FIELD("Version", "version", FIELD_STRING, CtlProperties, version),
        FIELD("Status", "status", FIELD_STRING, CtlProperties, status),
        ROWS("Knobs", "knobs", CtlProperties, knobs, &knob_row),
        ROWS("ActivePolicies", "active_policies", CtlProperties, active_policies, &active_policy_row),
        ROWS("HugeTLBPools", "hugetlb_pools", CtlProperties, pools, &pool_row),
        ROWS("NeedsRestart", "needs_restart", CtlProperties, needs_restart, &needs_restart_row),
        ROWS("IsolatedServices", "isolated_services", CtlProperties, isolated, &isolation_row),
        FIELD("BlanketSince", "blanket_since", FIELD_TIME, CtlProperties, blanket_since),
        ROWS("BlanketServices", "blanket_services", CtlProperties, blanket, &blanket_row),
        ROWS("Override", "override", CtlProperties, override, &override_row),
        FIELD("OverrideExpiresAt", "override_expires_at", FIELD_TIME, CtlProperties, override_expires_at),
        FIELD("StormState", "storm_state", FIELD_STRING, CtlProperties, storm_state),
        FIELD("StormAction", "storm_action", FIELD_STRING, CtlProperties, storm_action),
        ROWS("Storms", "storms", CtlProperties, storms, &storm_row),
        ROWS("SizeStats", "size_stats", CtlProperties, size_stats, &size_stat_row),
        ROWS("PolicyDiagnostics", "policy_diagnostics", CtlProperties, diagnostics, &diagnostic_row),
        ROWS("DriftConflicts", "drift_conflicts", CtlProperties, drift_conflicts, &drift_conflict_row),
        ROWS("RecentDrift", "recent_drift", CtlProperties, recent_drift, &drift_row),
        ROWS("Ownership", "ownership", CtlProperties, ownership, &ownership_row),
        ROWS("KnobNotes", "knob_notes", CtlProperties, knob_notes, &knob_note_row),
};

static const RowType properties_row = {
        .size = sizeof(CtlProperties),
        .fields = property_fields,
        .n_fields = ELEMENTSOF(property_fields),
};

/* A property's field in CtlProperties, or NULL. */
static const Field *property_field(const char *name) {
        for (size_t i = 0; i < ELEMENTSOF(property_fields); i++)
                if (streq(property_fields[i].title, name))
                        return &property_fields[i];
        return NULL;
}

/* Its rows, for a list property. The rows are read through a const p as well. */
static GArray **field_rows(const CtlProperties *p, const Field *f) {
        return (GArray **) ((uint8_t *) p + f->offset);
}

const char *ctl_property_json_key(const char *name) {
        const Field *f = property_field(name);

        return f ? f->json_key : NULL;
}

void ctl_properties_done(CtlProperties *p) {
        row_clear(&properties_row, p);
}

static GArray *rows_new(const RowType *type) {
        GArray *a = g_array_new(FALSE, TRUE, (guint) type->size);

        g_array_set_clear_func(a, type->clear);
        return a;
}

static int read_rows(sd_bus_message *m, const RowType *type, GArray *rows);

static int read_field(sd_bus_message *m, const Field *f, void *row) {
        void *p = (uint8_t *) row + f->offset;
        const char *s;
        int b, r;

        switch (f->type) {
        case FIELD_STRING:
        case FIELD_OPTIONAL:
                r = sd_bus_message_read_basic(m, 's', &s);
                if (r > 0)
                        *(char **) p = g_strdup(s);
                return r;
        case FIELD_STRV:
                return sd_bus_message_read_strv(m, (char ***) p);
        case FIELD_ROWS:
                if (!*(GArray **) p)
                        *(GArray **) p = rows_new(f->rows);
                return read_rows(m, f->rows, *(GArray **) p);
        case FIELD_UINT:
        case FIELD_UINT_OPTIONAL:
        case FIELD_TIME:
                return sd_bus_message_read_basic(m, 't', p);
        case FIELD_UINT32_OPTIONAL:
                return sd_bus_message_read_basic(m, 'u', p);
        case FIELD_INT_OPTIONAL:
                return sd_bus_message_read_basic(m, 'i', p);
        case FIELD_DOUBLE:
                return sd_bus_message_read_basic(m, 'd', p);
        case FIELD_BOOL:
                r = sd_bus_message_read_basic(m, 'b', &b);
                if (r > 0)
                        *(bool *) p = b;
                return r;
        case FIELD_DERIVED:
                return 0;
        }
        g_assert_not_reached();
}

/* Appends the rows of an array of type->signature to rows. */
static int read_rows(sd_bus_message *m, const RowType *type, GArray *rows) {
        g_autofree char *contents = g_strndup(type->signature + 1, strlen(type->signature) - 2);
        char container = type->signature[0] == '{' ? 'e' : 'r';
        int r;

        r = sd_bus_message_enter_container(m, 'a', type->signature);
        if (r < 0)
                return r;
        while ((r = sd_bus_message_enter_container(m, container, contents)) > 0) {
                void *row;

                g_array_set_size(rows, rows->len + 1);
                row = rows->data + (size_t) (rows->len - 1) * type->size;
                for (size_t i = 0; r >= 0 && i < type->n_fields; i++)
                        r = read_field(m, &type->fields[i], row);
                if (r >= 0 && type->finish)
                        type->finish(row);
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

char *ctl_drift_action(const CtlDrift *d) {
        if (d->wrong_usec == 0)
                return g_strdup(d->action);
        return g_strdup_printf("%s after %" PRIu64 " ms", d->action, d->wrong_usec / 1000);
}

/* What the bus says a property's value is: a list of rows, a time or a string. */
static char *property_signature(const Field *f) {
        if (f->type == FIELD_ROWS)
                return g_strconcat("a", f->rows->signature, NULL);
        return g_strdup(f->type == FIELD_TIME ? "t" : "s");
}

static int read_property(sd_bus_message *m, const char *name, CtlProperties *p) {
        const Field *f = property_field(name);
        g_autofree char *signature = f ? property_signature(f) : NULL;
        const char *contents;
        int r;

        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        r = sd_bus_message_enter_container(m, 'v', contents);
        if (r < 0)
                return r;
        if (signature && streq(contents, signature))
                r = read_field(m, f, p);
        else
                /* A property from a newer daemon, or of a type this thpd-ctl does not know: not ours
                 * to show. */
                r = sd_bus_message_skip(m, contents);
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

/* Decodes a GetAll reply. Returns a CtlExit code; ret is set on success only. */
static int properties_from_reply(sd_bus_message *reply, CtlProperties *ret) {
        CtlProperties p = {};
        const char *name;
        int r;

        /* A list the daemon does not have (an older thpd) is empty. */
        for (size_t i = 0; i < ELEMENTSOF(property_fields); i++)
                if (property_fields[i].type == FIELD_ROWS)
                        *field_rows(&p, &property_fields[i]) = rows_new(property_fields[i].rows);
        r = sd_bus_message_enter_container(reply, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(reply, 'e', "sv")) > 0) {
                r = sd_bus_message_read(reply, "s", &name);
                if (r >= 0)
                        r = read_property(reply, name, &p);
                if (r >= 0)
                        r = sd_bus_message_exit_container(reply);
        }
        if (r < 0) {
                ctl_properties_done(&p);
                log_error_errno(r, "Cannot parse thpd's state: %m");
                return CTL_EXIT_FAILURE;
        }

        *ret = p;
        return CTL_EXIT_OK;
}

int ctl_get_properties(const CtlOptions *o, sd_bus *bus, CtlProperties *ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        int r;

        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "GetAll", &error,
                               &reply, "s", THPD_BUS_INTERFACE);
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, "read thpd's state");
        return properties_from_reply(reply, ret);
}

int ctl_get_properties_async(const CtlOptions *o, sd_bus *bus, unsigned *pending, CtlAsyncCall *c) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *call = NULL;
        int r;

        r = sd_bus_message_new_method_call(bus, &call, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties",
                                           "GetAll");
        if (r >= 0)
                r = sd_bus_message_append(call, "s", THPD_BUS_INTERFACE);
        if (r >= 0)
                r = ctl_call_async(bus, call, 0, pending, c);
        if (r < 0)
                return ctl_log_bus_error(o, &SD_BUS_ERROR_NULL, r, "read thpd's state");
        return CTL_EXIT_OK;
}

int ctl_get_properties_finish(const CtlOptions *o, sd_bus *bus, CtlAsyncCall *c, CtlProperties *ret) {
        int r;

        r = ctl_check_reply(o, bus, c->reply, "read thpd's state");
        if (r != CTL_EXIT_OK)
                return r;
        return properties_from_reply(c->reply, ret);
}

int ctl_get_diagnostics(const CtlOptions *o, sd_bus *bus, GArray **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_(sd_bus_error_free) sd_bus_error error = SD_BUS_ERROR_NULL;
        g_autoptr(GArray) diagnostics = rows_new(&diagnostic_row);
        int r;

        r = sd_bus_call_method(bus, THPD_BUS_NAME, THPD_BUS_PATH, "org.freedesktop.DBus.Properties", "Get", &error,
                               &reply, "ss", THPD_BUS_INTERFACE, "PolicyDiagnostics");
        if (r < 0)
                return ctl_log_bus_error(o, &error, r, "read thpd's policy diagnostics");
        r = sd_bus_message_enter_container(reply, 'v', "a(ssuss)");
        if (r >= 0)
                r = read_rows(reply, &diagnostic_row, diagnostics);
        if (r < 0) {
                log_error_errno(r, "Cannot parse thpd's policy diagnostics: %m");
                return CTL_EXIT_FAILURE;
        }
        *ret = TAKE_PTR(diagnostics);
        return CTL_EXIT_OK;
}

char *ctl_diagnostic_format(const CtlDiagnostic *d) {
        if (d->line > 0)
                return g_strdup_printf("%s:%u: %s: %s", d->file, d->line, d->severity, d->message);
        return g_strdup_printf("%s: %s: %s", d->file, d->severity, d->message);
}

static bool is_error(const CtlDiagnostic *d) {
        return streq(d->severity, "error");
}

unsigned ctl_count_errors(GArray *diagnostics) {
        unsigned n = 0;

        for (guint i = 0; i < diagnostics->len; i++)
                n += is_error(&g_array_index(diagnostics, CtlDiagnostic, i));
        return n;
}

void ctl_print_diagnostics(CtlOutput *out, GArray *diagnostics, const char *indent) {
        for (guint i = 0; i < diagnostics->len; i++) {
                const CtlDiagnostic *d = &g_array_index(diagnostics, CtlDiagnostic, i);
                g_autofree char *text = ctl_diagnostic_format(d);
                /* Colour is decided for stdout; stderr gets it only when it is the same terminal. */
                bool color = out->f == stdout || isatty(fileno(out->f));

                ctl_printf(out, "%s%s%s%s\n", indent, color ? ctl_color(is_error(d) ? CTL_COLOR_RED : CTL_COLOR_YELLOW) : "",
                           text, color ? ctl_color(CTL_COLOR_NORMAL) : "");
        }
}

void ctl_diagnostic_to_json(CtlJson *b, const CtlDiagnostic *d) {
        ctl_json_begin_object(b, NULL);
        ctl_json_string(b, "file", d->file);
        if (d->line > 0)
                ctl_json_uint(b, "line", d->line);
        else
                ctl_json_null(b, "line");
        ctl_json_string(b, "severity", d->severity);
        ctl_json_string(b, "message", d->message);
        ctl_json_end_object(b);
}

static bool wanted(char *const *names, const char *name) {
        return !names || g_strv_contains((const char *const *) names, name);
}

/* A row type of two fields read from a{..}: a key and its value. */
static bool is_dictionary(const RowType *type) {
        return type->signature[0] == '{';
}

/* A dictionary's rows as one cell; show writes a number as "%.6g". */
static void add_members(CtlTable *t, const RowType *type, GArray *rows) {
        g_auto(GStrv) keys = g_new0(char *, rows->len + 1), texts = g_new0(char *, rows->len + 1);
        g_autoptr(CtlJson) object = ctl_json_new();

        ctl_json_begin_object(object, NULL);
        for (guint r = 0; r < rows->len; r++) {
                const uint8_t *row = (const uint8_t *) rows->data + (size_t) r * type->size;
                const Field *value = &type->fields[1];

                keys[r] = g_strdup(*(char *const *) (row + type->fields[0].offset));
                if (value->type == FIELD_DOUBLE) {
                        char buf[G_ASCII_DTOSTR_BUF_SIZE];
                        double d = *(const double *) (row + value->offset);

                        texts[r] = g_strdup(g_ascii_formatd(buf, sizeof buf, "%.6g", d));
                        ctl_json_double(object, keys[r], d);
                } else if (value->type == FIELD_UINT) {
                        uint64_t u = *(const uint64_t *) (row + value->offset);

                        texts[r] = g_strdup_printf("%" PRIu64, u);
                        ctl_json_uint(object, keys[r], u);
                } else {
                        texts[r] = g_strdup(*(char *const *) (row + value->offset));
                        ctl_json_string(object, keys[r], texts[r]);
                }
        }
        ctl_json_end_object(object);
        ctl_table_add_members(t, keys, texts, object);
}

static void add_cell(CtlTable *t, const Field *f, const void *row) {
        const void *p = (const uint8_t *) row + f->offset;

        switch (f->type) {
        case FIELD_STRING:
        case FIELD_DERIVED:
                ctl_table_add_string(t, *(char *const *) p);
                return;
        case FIELD_OPTIONAL:
                ctl_table_add_string(t, empty_to_null(*(char *const *) p));
                return;
        case FIELD_STRV:
                ctl_table_add_strv(t, *(char **const *) p);
                return;
        case FIELD_UINT:
                ctl_table_add_uint(t, *(const uint64_t *) p);
                return;
        case FIELD_UINT_OPTIONAL:
                if (*(const uint64_t *) p > 0)
                        ctl_table_add_uint(t, *(const uint64_t *) p);
                else
                        ctl_table_add_string(t, NULL);
                return;
        case FIELD_UINT32_OPTIONAL:
                if (*(const unsigned *) p > 0)
                        ctl_table_add_uint(t, *(const unsigned *) p);
                else
                        ctl_table_add_string(t, NULL);
                return;
        case FIELD_INT_OPTIONAL:
                if (*(const int32_t *) p >= 0)
                        ctl_table_add_uint(t, (uint64_t) *(const int32_t *) p);
                else
                        ctl_table_add_string(t, NULL);
                return;
        case FIELD_BOOL:
                ctl_table_add_bool(t, *(const bool *) p);
                return;
        case FIELD_TIME:
                ctl_table_add_time(t, *(const uint64_t *) p);
                return;
        case FIELD_ROWS:
                g_assert(is_dictionary(f->rows));
                add_members(t, f->rows, *(GArray *const *) p);
                return;
        case FIELD_DOUBLE:
                break;
        }
        g_assert_not_reached();
}

/* A column for each field shown anywhere, in JSON's order; only_knob: the rows whose first field,
 * the knob, is that one. */
static CtlTable *rows_table(const RowType *type, GArray *rows, const char *only_knob) {
        CtlTable *t = ctl_table_new();

        for (size_t i = 0; i < type->n_fields; i++) {
                const Field *f = &type->fields[type->json_order ? type->json_order[i] : i];
                size_t column = ctl_table_add_column(t, f->title, f->json_key);

                if (f->empty)
                        ctl_table_set_column_empty_string(t, column, f->empty);
        }
        if (type->text_order)
                ctl_table_set_display(t, type->text_order, type->n_text);
        for (guint r = 0; r < rows->len; r++) {
                const void *row = rows->data + (size_t) r * type->size;

                if (only_knob && !streq(*(char *const *) ((const uint8_t *) row + type->fields[0].offset), only_knob))
                        continue;
                for (size_t i = 0; i < type->n_fields; i++)
                        add_cell(t, &type->fields[type->json_order ? type->json_order[i] : i], row);
        }
        return t;
}

CtlTable *ctl_property_table(const CtlProperties *p, const char *name, const char *only_knob) {
        const Field *f = property_field(name);
        CtlTable *t;

        if (!f || f->type != FIELD_ROWS)
                return NULL;
        if (!is_dictionary(f->rows))
                return rows_table(f->rows, *field_rows(p, f), only_knob);
        /* A dictionary (Override) is one value: a row of one column. */
        t = ctl_table_new();
        ctl_table_add_column(t, f->title, f->json_key);
        add_members(t, f->rows, *field_rows(p, f));
        return t;
}

char *ctl_property_text(const CtlProperties *p, const char *name) {
        const Field *f = property_field(name);
        const void *value = f ? (const uint8_t *) p + f->offset : NULL;

        if (!f || f->type == FIELD_ROWS)
                return NULL;
        if (f->type == FIELD_TIME)
                return g_strdup_printf("%" PRIu64, *(const uint64_t *) value);
        return g_strdup(*(char *const *) value ?: "");
}

static void property_to_json(const CtlProperties *p, const Field *f, CtlJson *b) {
        g_autoptr(CtlTable) t = ctl_property_table(p, f->title, NULL);
        const void *value = (const uint8_t *) p + f->offset;

        if (t && is_dictionary(f->rows))
                ctl_table_row_to_json(t, 0, b);
        else if (t)
                ctl_table_to_json(t, b, f->json_key);
        else if (f->type == FIELD_TIME)
                ctl_json_time(b, f->json_key, *(const uint64_t *) value);
        else
                ctl_json_string(b, f->json_key, *(char *const *) value);
}

void ctl_properties_json_members(const CtlProperties *p, char *const *names, CtlJson *b) {
        for (size_t i = 0; i < ELEMENTSOF(property_fields); i++)
                if (wanted(names, property_fields[i].title))
                        property_to_json(p, &property_fields[i], b);
}

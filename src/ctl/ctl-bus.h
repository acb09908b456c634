/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <glib.h>
#include <systemd/sd-bus.h>

#include "ctl.h"

/* What the D-Bus verbs of thpd-ctl share: the connection, calls with errors turned into a
 * message and an exit code, the daemon's properties, JSON output and terminal colours. */

#define THPD_BUS_NAME "org.thpd1"
#define THPD_BUS_PATH "/org/thpd1"
#define THPD_BUS_INTERFACE "org.thpd1.Manager"

#define CTL_DEFAULT_AWAIT_TIMEOUT_USEC (30 * UINT64_C(1000000))
/* The longest override thpd accepts (org.thpd1.Error.InvalidDuration beyond). */
#define CTL_OVERRIDE_MAX_USEC (365 * 24 * 3600 * UINT64_C(1000000))

/* Connects to the bus thpd is on: the system bus, or the session bus with --user. Logs and
 * returns a CtlExit code (CTL_EXIT_OK on success). */
int ctl_bus_open(const CtlOptions *o, sd_bus **ret);

/* A method call to org.thpd1.Manager, for arguments ctl_call() cannot take. Returns a CtlExit
 * code. */
int ctl_new_call(sd_bus *bus, const char *method, sd_bus_message **ret);
/* Sends call and waits for the reply; the same contract as ctl_call(). */
int ctl_call_message(const CtlOptions *o, sd_bus *bus, sd_bus_message *call, uint64_t timeout_usec, const char *what,
                     sd_bus_message **ret_reply);

/* Calls an org.thpd1.Manager method (timeout_usec 0: sd-bus's default). what names the action
 * for the error message ("set the override"). Returns a CtlExit code; the reply is set on
 * success only. */
int ctl_call(const CtlOptions *o, sd_bus *bus, const char *method, uint64_t timeout_usec, const char *what,
             sd_bus_message **ret_reply, const char *types, ...);

/* Logs a failed call the way a person can act on it and returns the exit code: CTL_EXIT_NOT_RUNNING
 * (with a hint how to start thpd, or that it answers on the other bus) when nobody owns
 * org.thpd1; CTL_EXIT_USAGE when thpd refused an argument (an unknown knob, a bad value or
 * duration); else CTL_EXIT_FAILURE. */
int ctl_log_bus_error(const CtlOptions *o, const sd_bus_error *error, int r, const char *what);

/* ---- the daemon's properties, from GetAll ---- */

typedef struct CtlKnob {
        char *name, *applied, *target, *baseline, *source, *policy, *unit;
} CtlKnob;

typedef struct CtlActivePolicy {
        char *name;
        char **units;
} CtlActivePolicy;

typedef struct CtlPool {
        uint64_t page_size_kb;
        int32_t node;
        uint64_t target, allocated, free;
        char *shortfall;
} CtlPool;

typedef struct CtlPair {
        char *key, *value;
} CtlPair;

/* A running unit of a Scope=service policy (IsolatedServices). */
typedef struct CtlIsolation {
        char *unit, *policy, *thp, *state, *note;
} CtlIsolation;

typedef struct CtlFigure {
        char *name;
        double value;
} CtlFigure;

typedef struct CtlStorm {
        char *kind, *phase;
        GArray *figures; /* CtlFigure */
} CtlStorm;

/* A problem in a policy file, from the PolicyDiagnostics property. */
typedef struct CtlDiagnostic {
        char *policy;  /* "redis.conf", or NULL for a directory's problem */
        char *file;
        unsigned line; /* 0: the whole file */
        char *severity; /* "error" or "warning" */
        char *message;
} CtlDiagnostic;

typedef struct CtlProperties {
        char *version, *status, *storm_state, *storm_action;
        GArray *knobs;           /* CtlKnob */
        GArray *active_policies; /* CtlActivePolicy */
        GArray *pools;           /* CtlPool */
        GArray *needs_restart;   /* CtlPair: unit, policy */
        GArray *isolated;        /* CtlIsolation */
        GArray *override;        /* CtlPair: knob, value */
        uint64_t override_expires_at;
        GArray *storms;          /* CtlStorm */
        GArray *diagnostics;     /* CtlDiagnostic */
} CtlProperties;

/* The property names, in the order status and show print them. */
extern const char *const ctl_property_names[];
/* The JSON key of a property: "HugeTLBPools" -> "hugetlb_pools"; NULL for an unknown name. */
const char *ctl_property_json_key(const char *name);

/* "FILE:LINE: error: message", as verify and the daemon's log put it. */
char *ctl_diagnostic_format(const CtlDiagnostic *d);
/* Reads the PolicyDiagnostics property alone, for verbs that need nothing else. */
int ctl_get_diagnostics(const CtlOptions *o, sd_bus *bus, GArray **ret);
/* Prints diagnostics to f, red or yellow by severity on a terminal; indent before each. */
void ctl_print_diagnostics(FILE *f, GArray *diagnostics, const char *indent);
unsigned ctl_count_errors(GArray *diagnostics);

/* GetAll on org.thpd1.Manager. Returns a CtlExit code; ret is set on success only. */
int ctl_get_properties(const CtlOptions *o, sd_bus *bus, CtlProperties *ret);
void ctl_properties_clear(CtlProperties *p);

/* ---- JSON ---- */

/* A compact JSON document built in order; key is NULL inside arrays. */
typedef struct Json {
        GString *out;
        bool need_comma;
} Json;

void json_init(Json *j);
void json_begin_object(Json *j, const char *key);
void json_end_object(Json *j);
void json_begin_array(Json *j, const char *key);
void json_end_array(Json *j);
/* NULL becomes null: a missing value is never "". */
void json_string(Json *j, const char *key, const char *value);
void json_null(Json *j, const char *key);
void json_uint(Json *j, const char *key, uint64_t value);
void json_int(Json *j, const char *key, int64_t value);
void json_bool(Json *j, const char *key, bool value);
/* Non-finite numbers become null, which JSON can carry. */
void json_double(Json *j, const char *key, double value);
void json_strv(Json *j, const char *key, char *const *values);
/* A point in time as two keys: KEY, ISO 8601 in UTC, and KEY_usec, µs since the epoch; both null
 * for 0 (none). */
void json_time(Json *j, const char *key, uint64_t realtime_usec);
/* {"policy"?, "file", "line", "severity", "message"}; with_policy adds the policy name. */
void json_diagnostic(Json *j, const CtlDiagnostic *d, bool with_policy);
/* Writes the document and a newline to stdout and frees it; returns a CtlExit code. */
int json_print(Json *j);

/* The properties as members of the JSON object being built (only those in names, if names is
 * not NULL). */
void ctl_properties_json_members(const CtlProperties *p, char *const *names, Json *j);

/* ---- THP usage per unit (GetUnitUsage) ---- */

typedef struct CtlUnitUsage {
        char *unit, *policy;
        uint64_t anon_thp_bytes, shmem_thp_bytes; /* UINT64_MAX: the source does not say */
        char *source;                             /* "" when no source could be read */
        bool read_by_ctl;                         /* thpd could not tell; thpd-ctl read it (see ctl-usage.c) */
} CtlUnitUsage;

/* Calls GetUnitUsage. Not fatal for the caller: *ret is NULL when the daemon cannot tell (a thpd
 * without the method, a manager that does not answer; the latter is logged as a warning). A unit
 * whose figure thpd cannot read is read here, with the caller's own privileges. */
/* GetUnitUsage, sent before the GetAll that status also needs and read after it, so that the
 * two round trips (and the manager calls thpd makes for the first) overlap. */
typedef struct CtlUsageCall {
        sd_bus_slot *slot;
        sd_bus_message *reply;
} CtlUsageCall;
int ctl_unit_usage_call(sd_bus *bus, CtlUsageCall *c);
void ctl_unit_usage_finish(sd_bus *bus, CtlUsageCall *c, GArray **ret);
void ctl_unit_usage_call_clear(CtlUsageCall *c);
/* The row of a unit, or NULL. */
const CtlUnitUsage *ctl_unit_usage_find(GArray *usage, const char *unit);
/* anon + shmem as far as known; UINT64_MAX when neither is. */
uint64_t ctl_unit_usage_total(const CtlUnitUsage *u);
/* "unit_usage": [...], or null for NULL. */
void ctl_unit_usage_to_json(GArray *usage, Json *j);
/* "2.7 GiB", "512 MiB", "0 B": binary units, one decimal below 10. */
char *ctl_format_bytes(uint64_t bytes);

/* ---- terminal ---- */

/* Whether to colour stdout: SYSTEMD_COLORS=0|1 (or another boolean, or 16, 256, 24bit) decides
 * when set; else no colour with NO_COLOR, TERM=dumb, or when stdout is not a terminal. */
bool ctl_use_color(void);

typedef enum CtlGlyph {
        CTL_GLYPH_BULLET, /* ● or * */
        CTL_GLYPH_DASH,   /* — or - */
        CTL_GLYPH_ARROW,  /* → or -> */
        CTL_GLYPH_ELLIPSIS, /* … or ... */
        _CTL_GLYPH_MAX,
} CtlGlyph;

/* The glyph, or its ASCII stand-in when the locale's character set is not UTF-8 (the C locale
 * counts as UTF-8, as for systemd: it is what services and tests run with). */
const char *ctl_glyph(CtlGlyph g);

/* From here to ctl_cut_lines_end(), lines written to stdout are cut at the terminal's width
 * (COLUMNS, else the terminal's) with an ellipsis, as systemctl does; nothing happens when
 * stdout is not a terminal. */
void ctl_cut_lines_begin(void);
int ctl_cut_lines_end(void);
/* line cut to columns visible characters (escape sequences take none), or a copy. */
char *ctl_cut_line(const char *line, size_t columns);

typedef enum CtlColor {
        CTL_COLOR_NORMAL,
        CTL_COLOR_BOLD,
        CTL_COLOR_GREEN,
        CTL_COLOR_YELLOW,
        CTL_COLOR_RED,
        CTL_COLOR_GREY,
        _CTL_COLOR_MAX,
} CtlColor;

/* The escape sequence for c, or "" when colour is off. */
const char *ctl_color(CtlColor c);

/* "Sat 2025-11-22 10:00:00 UTC (in 29min)" for a CLOCK_REALTIME time in µs. */
char *ctl_format_timestamp(uint64_t realtime_usec);
/* "29min", "2h 5min", "3d 4h": a duration in µs, rounded for people. */
char *ctl_format_duration(uint64_t usec);

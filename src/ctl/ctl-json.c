/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>
#include <math.h>

#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl.h"
#include "log.h"

struct CtlJson {
        GString *text;
        /* Whether the next member or element follows another at its level, and so a comma. One
         * flag is enough: a container's first element never needs one, and a closed container is
         * itself an element of the one around it. */
        bool comma;
};

CtlJson *ctl_json_new(void) {
        CtlJson *j = g_new0(CtlJson, 1);

        j->text = g_string_sized_new(1024);
        return j;
}

CtlJson *ctl_json_free(CtlJson *j) {
        if (!j)
                return NULL;
        g_string_free(j->text, TRUE);
        g_free(j);
        return NULL;
}

/* RFC 8259, section 7: the quotation mark, the backslash and the control characters must be
 * escaped; everything else may pass. DEL is escaped too, as json-glib did, so that the output
 * has no control character at all; the short forms are used where JSON has them. */
static void append_escaped(GString *s, const char *str) {
        g_autofree char *valid = NULL;

        if (!g_utf8_validate(str, -1, NULL))
                str = valid = g_utf8_make_valid(str, -1);

        g_string_append_c(s, '"');
        for (const unsigned char *p = (const unsigned char *) str; *p; p++)
                switch (*p) {
                case '"':
                        g_string_append(s, "\\\"");
                        break;
                case '\\':
                        g_string_append(s, "\\\\");
                        break;
                case '\b':
                        g_string_append(s, "\\b");
                        break;
                case '\f':
                        g_string_append(s, "\\f");
                        break;
                case '\n':
                        g_string_append(s, "\\n");
                        break;
                case '\r':
                        g_string_append(s, "\\r");
                        break;
                case '\t':
                        g_string_append(s, "\\t");
                        break;
                default:
                        if (*p < 0x20 || *p == 0x7f)
                                g_string_append_printf(s, "\\u%04x", *p);
                        else
                                g_string_append_c(s, (char) *p);
                }
        g_string_append_c(s, '"');
}

/* Starts a member or element: the comma after the previous one, and the key inside an object. */
static void begin_value(CtlJson *j, const char *key) {
        if (j->comma)
                g_string_append_c(j->text, ',');
        if (key) {
                append_escaped(j->text, key);
                g_string_append_c(j->text, ':');
        }
        j->comma = true;
}

static void begin_container(CtlJson *j, const char *key, char open) {
        begin_value(j, key);
        g_string_append_c(j->text, open);
        j->comma = false;
}

static void end_container(CtlJson *j, char close) {
        g_string_append_c(j->text, close);
        j->comma = true;
}

void ctl_json_begin_object(CtlJson *j, const char *key) {
        begin_container(j, key, '{');
}

void ctl_json_end_object(CtlJson *j) {
        end_container(j, '}');
}

void ctl_json_begin_array(CtlJson *j, const char *key) {
        begin_container(j, key, '[');
}

void ctl_json_end_array(CtlJson *j) {
        end_container(j, ']');
}

void ctl_json_string(CtlJson *j, const char *key, const char *value) {
        if (!value) {
                ctl_json_null(j, key);
                return;
        }
        begin_value(j, key);
        append_escaped(j->text, value);
}

void ctl_json_null(CtlJson *j, const char *key) {
        begin_value(j, key);
        g_string_append(j->text, "null");
}

void ctl_json_uint(CtlJson *j, const char *key, uint64_t value) {
        begin_value(j, key);
        g_string_append_printf(j->text, "%" PRIu64, value);
}

void ctl_json_int(CtlJson *j, const char *key, int64_t value) {
        begin_value(j, key);
        g_string_append_printf(j->text, "%" PRId64, value);
}

void ctl_json_bool(CtlJson *j, const char *key, bool value) {
        begin_value(j, key);
        g_string_append(j->text, value ? "true" : "false");
}

void ctl_json_double(CtlJson *j, const char *key, double value) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];

        if (!isfinite(value)) {
                ctl_json_null(j, key);
                return;
        }
        if (value >= -0x1p63 && value < 0x1p63 && value == (double) (int64_t) value) {
                ctl_json_int(j, key, (int64_t) value);
                return;
        }
        /* The shortest text that reads back as the same double, whatever the locale's decimal
         * point: "0.5", "1.5e+20"; both are JSON numbers. */
        begin_value(j, key);
        g_string_append(j->text, g_ascii_dtostr(buf, sizeof buf, value));
}

void ctl_json_strv(CtlJson *j, const char *key, char *const *values) {
        ctl_json_begin_array(j, key);
        for (size_t i = 0; values && values[i]; i++)
                ctl_json_string(j, NULL, values[i]);
        ctl_json_end_array(j);
}

void ctl_json_raw(CtlJson *j, const char *key, const char *text) {
        begin_value(j, key);
        g_string_append(j->text, text);
}

void ctl_json_time(CtlJson *j, const char *key, uint64_t realtime_usec) {
        g_autofree char *usec_key = g_strconcat(key, "_usec", NULL);
        g_autofree char *iso = realtime_usec > 0 ? ctl_format_iso8601(realtime_usec) : NULL;

        if (!iso) {
                ctl_json_null(j, key);
                ctl_json_null(j, usec_key);
                return;
        }
        ctl_json_string(j, key, iso);
        ctl_json_uint(j, usec_key, realtime_usec);
}

const char *ctl_json_text(const CtlJson *j) {
        return j->text->str;
}

int ctl_json_print(CtlJson *j, FILE *f) {
        fwrite(j->text->str, 1, j->text->len, f);
        fputc('\n', f);
        if (fflush(f) != 0) {
                log_error_errno(errno, "Cannot write the output: %m");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

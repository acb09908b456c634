/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <math.h>
#include <string.h>

#include "ctl-format.h"
#include "ctl-json.h"
#include "ctl.h"
#include "log.h"

/* Strings from files and the bus go out as valid UTF-8, as JSON must be. */
static void member(JsonBuilder *b, const char *key) {
        g_autofree char *valid = NULL;

        if (!key)
                return;
        valid = g_utf8_make_valid(key, -1);
        json_builder_set_member_name(b, valid);
}

void ctl_json_begin_object(JsonBuilder *b, const char *key) {
        member(b, key);
        json_builder_begin_object(b);
}

void ctl_json_end_object(JsonBuilder *b) {
        json_builder_end_object(b);
}

void ctl_json_begin_array(JsonBuilder *b, const char *key) {
        member(b, key);
        json_builder_begin_array(b);
}

void ctl_json_end_array(JsonBuilder *b) {
        json_builder_end_array(b);
}

void ctl_json_string(JsonBuilder *b, const char *key, const char *value) {
        g_autofree char *valid = NULL;

        member(b, key);
        if (!value) {
                json_builder_add_null_value(b);
                return;
        }
        valid = g_utf8_make_valid(value, -1);
        json_builder_add_string_value(b, valid);
}

void ctl_json_null(JsonBuilder *b, const char *key) {
        member(b, key);
        json_builder_add_null_value(b);
}

void ctl_json_uint(JsonBuilder *b, const char *key, uint64_t value) {
        member(b, key);
        /* json-glib's integers are signed 64-bit; a larger value can only go as a double. */
        if (value > INT64_MAX)
                json_builder_add_double_value(b, (double) value);
        else
                json_builder_add_int_value(b, (gint64) value);
}

void ctl_json_int(JsonBuilder *b, const char *key, int64_t value) {
        member(b, key);
        json_builder_add_int_value(b, value);
}

void ctl_json_bool(JsonBuilder *b, const char *key, bool value) {
        member(b, key);
        json_builder_add_boolean_value(b, value);
}

void ctl_json_double(JsonBuilder *b, const char *key, double value) {
        char buf[G_ASCII_DTOSTR_BUF_SIZE];

        member(b, key);
        if (!isfinite(value))
                json_builder_add_null_value(b);
        /* json-glib 1.6 appends ".0" to a double printed without a point: "12.0" for 12, and
         * "1e+20.0", which is not JSON. A whole number goes in as an integer instead ("12", as
         * thpd-ctl always printed it); one too large for that, which only the exponent form can
         * spell, as null. */
        else if (value >= -0x1p63 && value < 0x1p63 && value == (double) (int64_t) value)
                json_builder_add_int_value(b, (gint64) value);
        else if (!strchr(g_ascii_dtostr(buf, sizeof buf, value), '.'))
                json_builder_add_null_value(b);
        else
                json_builder_add_double_value(b, value);
}

void ctl_json_strv(JsonBuilder *b, const char *key, char *const *values) {
        ctl_json_begin_array(b, key);
        for (size_t i = 0; values && values[i]; i++)
                ctl_json_string(b, NULL, values[i]);
        ctl_json_end_array(b);
}

void ctl_json_time(JsonBuilder *b, const char *key, uint64_t realtime_usec) {
        g_autofree char *usec_key = g_strconcat(key, "_usec", NULL);
        g_autofree char *iso = realtime_usec > 0 ? ctl_format_iso8601(realtime_usec) : NULL;

        if (!iso) {
                ctl_json_null(b, key);
                ctl_json_null(b, usec_key);
                return;
        }
        ctl_json_string(b, key, iso);
        ctl_json_uint(b, usec_key, realtime_usec);
}

char *ctl_json_to_string(JsonBuilder *b) {
        g_autoptr(JsonGenerator) generator = json_generator_new();
        g_autoptr(JsonNode) root = json_builder_get_root(b);

        json_generator_set_root(generator, root);
        return json_generator_to_data(generator, NULL);
}

int ctl_json_print(JsonBuilder *b, FILE *f) {
        g_autofree char *text = ctl_json_to_string(b);

        fputs(text, f);
        fputc('\n', f);
        if (fflush(f) != 0) {
                log_error_errno(errno, "Cannot write the output: %m");
                return CTL_EXIT_FAILURE;
        }
        return CTL_EXIT_OK;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <fcntl.h>
#include <ini.h>
#include <sys/stat.h>
#include <unistd.h>
#include <syslog.h>

#include "config.h"
#include "log.h"
#include "settings.h"
#include "util.h"

void settings_init(Settings *c) {
        *c = (Settings) {
                .restore_on_exit = true,
                .storm_watch = true,
                .pool_grace_usec = SETTINGS_DEFAULT_POOL_GRACE_USEC,
                .await_timeout_usec = SETTINGS_DEFAULT_AWAIT_TIMEOUT_USEC,
                .pool_alloc_retries = SETTINGS_DEFAULT_POOL_ALLOC_RETRIES,
                .log_level = -1,
                .drift = {
                        .max_restores = DRIFT_DEFAULT_MAX_RESTORES,
                        .restore_window_usec = DRIFT_DEFAULT_RESTORE_WINDOW_USEC,
                },
        };
        FOREACH_KNOB(k)
                c->baseline[k] = KNOB_VALUE_UNSET;
        storm_config_init_defaults(&c->storm);
}

void settings_done(Settings *c) {
        g_clear_pointer(&c->metrics_textfile, g_free);
}

static int parse_boolean(const char *s) {
        if (streq(s, "yes") || streq(s, "true") || streq(s, "on") || streq(s, "1"))
                return 1;
        if (streq(s, "no") || streq(s, "false") || streq(s, "off") || streq(s, "0"))
                return 0;
        return -EINVAL;
}

typedef struct ParseState {
        Settings *settings;
        const char *path;
        Diagnostics *diag;
        FILE *f;
        unsigned line;
} ParseState;

/* Hands inih one physical line per call, so the line number a setting is reported at is the
 * line it is on; an over-long line is reported and skipped instead of being split. */
static char *settings_reader(char *str, int num, void *stream) {
        ParseState *s = stream;
        _cleanup_free_ char *line = NULL;
        size_t allocated = 0;
        ssize_t n;

        n = getline(&line, &allocated, s->f);
        if (n < 0)
                return NULL;
        s->line++;
        if (n > num - 3) {
                diagnostics_add(s->diag, DIAGNOSTIC_ERROR, s->path, s->line, "line too long (%zd bytes), ignored", n);
                strcpy(str, "\n");
                return str;
        }
        memcpy(str, line, (size_t) n + 1);
        return str;
}

/* As storm_config_set(): -ENOENT for a key the section lacks, -EINVAL for a value it cannot take;
 * handler() reports both. */
static int daemon_setting(ParseState *s, const char *key, const char *value) {
        Settings *c = s->settings;
        uint64_t n;
        int r;

        if (streq(key, "RestoreOnExit")) {
                r = parse_boolean(value);
                if (r < 0)
                        return -EINVAL;
                c->restore_on_exit = r;
        } else if (streq(key, "PoolGracePeriod")) {
                if (parse_duration_usec(value, &n) < 0)
                        return -EINVAL;
                c->pool_grace_usec = n;
        } else if (streq(key, "AwaitTimeout")) {
                if (parse_duration_usec(value, &n) < 0 || n == 0)
                        return -EINVAL;
                c->await_timeout_usec = n;
        } else if (streq(key, "PoolAllocRetries")) {
                if (parse_u64(value, &n) < 0 || n > SETTINGS_MAX_POOL_ALLOC_RETRIES)
                        return -EINVAL;
                c->pool_alloc_retries = (unsigned) n;
        } else if (streq(key, "LogLevel")) {
                r = log_level_from_string(value);
                if (r < 0)
                        return -EINVAL;
                c->log_level = r;
        } else
                return -ENOENT;
        return 0;
}

static int baseline_setting(ParseState *s, const char *policy_section, const char *key, const char *value) {
        char accepted[96];
        Knob k;
        int r;

        if (knob_from_policy_key(policy_section, key, &k) < 0)
                return -ENOENT;

        r = knob_value_from_string(k, value, &s->settings->baseline[k]);
        if (r < 0)
                diagnostics_add(s->diag, DIAGNOSTIC_ERROR, s->path, s->line,
                                "invalid value for %s=: \"%s\" (accepted: %s)",
                                key, value, knob_describe_values(k, accepted));
        return 0;
}

/* node_exporter's textfile collector reads only *.prom files, and a relative path would depend
 * on thpd's working directory: anything else is a file nobody reads. */
static int metrics_setting(ParseState *s, const char *key, const char *value) {
        if (!streq(key, "TextfilePath"))
                return -ENOENT;

        if (value[0] == '\0') {
                g_clear_pointer(&s->settings->metrics_textfile, g_free);
                return 0;
        }
        if (value[0] != '/' || !g_str_has_suffix(value, ".prom") || g_str_has_suffix(value, "/.prom")) {
                diagnostics_add(s->diag, DIAGNOSTIC_ERROR, s->path, s->line,
                                "invalid value for %s=: \"%s\" (an absolute path ending in .prom, "
                                "in node_exporter's --collector.textfile.directory)", key, value);
                return 0;
        }
        g_free(s->settings->metrics_textfile);
        s->settings->metrics_textfile = g_strdup(value);
        return 0;
}

/* Returns as daemon_setting(). */
static int drift_setting(ParseState *s, const char *key, const char *value) {
        DriftSettings *d = &s->settings->drift;
        uint64_t n;

        if (streq(key, "MaxRestores")) {
                if (parse_u64(value, &n) < 0 || n > SETTINGS_MAX_DRIFT_RESTORES)
                        return -EINVAL;
                d->max_restores = (unsigned) n;
        } else if (streq(key, "RestoreWindowSec")) {
                /* 0 would let any writer win at once whatever MaxRestores= says: not a window. */
                if (parse_duration_usec(value, &n) < 0 || n == 0)
                        return -EINVAL;
                d->restore_window_usec = n;
        } else
                return -ENOENT;
        return 0;
}

static int handler(void *userdata, const char *section, const char *key, const char *value) {
        ParseState *s = userdata;
        int r = -ENOENT;

        if (streq(section, "Daemon"))
                r = daemon_setting(s, key, value);
        else if (streq(section, "BaselineTransparentHugePages"))
                r = baseline_setting(s, "TransparentHugePages", key, value);
        else if (streq(section, "BaselineKhugepaged"))
                r = baseline_setting(s, "Khugepaged", key, value);
        else if (streq(section, "Metrics"))
                r = metrics_setting(s, key, value);
        else if (streq(section, "Drift"))
                r = drift_setting(s, key, value);
        else if (streq(section, "Storm")) {
                if (streq(key, "Watch")) {
                        r = parse_boolean(value);
                        if (r >= 0)
                                s->settings->storm_watch = r;
                } else
                        r = storm_config_set(&s->settings->storm, key, value);
        }

        if (r == -EINVAL || r == -ERANGE)
                diagnostics_add(s->diag, DIAGNOSTIC_ERROR, s->path, s->line,
                                "invalid value for %s=: \"%s\"%s", key, value,
                                r == -ERANGE ? " (out of range)" : "");
        else if (r == -ENOENT)
                diagnostics_add(s->diag, DIAGNOSTIC_WARNING, s->path, s->line,
                                "unknown setting [%s] %s=, ignored", section, key);
        return 1;
}

int settings_load_files(Settings *c, const char *const *paths, Diagnostics *diag) {
        for (size_t i = 0; paths && paths[i]; i++) {
                _cleanup_fclose_ FILE *f = NULL;
                ParseState state;
                struct stat st;
                int fd, r;

                /* O_NONBLOCK and the type check: a FIFO (or a directory) named as the settings
                 * file must be reported, not hang the daemon in open() before it runs. */
                fd = open(paths[i], O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
                if (fd < 0) {
                        if (errno == ENOENT)
                                continue;
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, paths[i], 0, "cannot open: %s", strerror(errno));
                        continue;
                }
                if (fstat(fd, &st) >= 0 && (S_ISDIR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))) {
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, paths[i], 0, "not a regular file, ignored");
                        (void) close(fd);
                        continue;
                }
                f = fdopen(fd, "r");
                if (!f) {
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, paths[i], 0, "cannot open: %s", strerror(errno));
                        (void) close(fd);
                        continue;
                }

                state = (ParseState) { .settings = c, .path = paths[i], .diag = diag, .f = f };
                r = ini_parse_stream(settings_reader, &state, handler, &state);
                if (r > 0)
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, paths[i], (unsigned) r, "syntax error");
        }
        return 0;
}

int settings_default_paths(char ***ret) {
        g_autoptr(GPtrArray) paths = g_ptr_array_new_with_free_func(g_free);
        g_autofree char *dropin_dir = g_build_filename(THPD_SYSCONFDIR, "thpd", "thpd.conf.d", NULL);
        g_autoptr(GDir) dir = NULL;
        g_autoptr(GPtrArray) dropins = g_ptr_array_new_with_free_func(g_free);
        const char *name;

        g_ptr_array_add(paths, g_build_filename(THPD_SYSCONFDIR, "thpd", "thpd.conf", NULL));

        dir = g_dir_open(dropin_dir, 0, NULL);
        while (dir && (name = g_dir_read_name(dir)))
                if (g_str_has_suffix(name, ".conf"))
                        g_ptr_array_add(dropins, g_build_filename(dropin_dir, name, NULL));
        g_ptr_array_sort(dropins, compare_strings);
        for (guint i = 0; i < dropins->len; i++)
                g_ptr_array_add(paths, g_strdup(g_ptr_array_index(dropins, i)));

        g_ptr_array_add(paths, NULL);
        *ret = (char **) g_ptr_array_free(TAKE_PTR(paths), FALSE);
        return 0;
}

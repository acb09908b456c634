/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <sys/stat.h>

#include "unit-files.h"
#include "util.h"

static const char *const system_path[] = {
        "/etc/systemd/system.control",
        "/run/systemd/system.control",
        "/run/systemd/transient",
        "/etc/systemd/system",
        "/etc/systemd/system.attached",
        "/run/systemd/system",
        "/run/systemd/system.attached",
        "/usr/local/lib/systemd/system",
        "/lib/systemd/system",
        "/usr/lib/systemd/system",
};

static void add(GPtrArray *a, char *dir) {
        g_ptr_array_add(a, dir);
}

char **unit_search_path(bool user) {
        GPtrArray *a = g_ptr_array_new();
        const char *e = getenv("THPD_UNIT_PATH");

        if (e) {
                g_ptr_array_unref(a);
                return g_strsplit(e, ":", -1);
        }
        if (!user)
                for (size_t i = 0; i < ELEMENTSOF(system_path); i++)
                        add(a, g_strdup(system_path[i]));
        else {
                add(a, g_build_filename(g_get_user_config_dir(), "systemd", "user.control", NULL));
                add(a, g_build_filename(g_get_user_runtime_dir(), "systemd", "user.control", NULL));
                add(a, g_build_filename(g_get_user_runtime_dir(), "systemd", "transient", NULL));
                add(a, g_build_filename(g_get_user_config_dir(), "systemd", "user", NULL));
                add(a, g_strdup("/etc/systemd/user"));
                add(a, g_build_filename(g_get_user_runtime_dir(), "systemd", "user", NULL));
                add(a, g_strdup("/run/systemd/user"));
                add(a, g_build_filename(g_get_user_data_dir(), "systemd", "user", NULL));
                add(a, g_strdup("/usr/local/lib/systemd/user"));
                add(a, g_strdup("/usr/lib/systemd/user"));
        }
        g_ptr_array_add(a, NULL);
        return (char **) g_ptr_array_free(a, false);
}

GPtrArray *unit_files_list_services(char *const *search_path) {
        g_autoptr(GHashTable) seen = g_hash_table_new(g_str_hash, g_str_equal);
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);

        for (char *const *dir = search_path; *dir; dir++) {
                g_autoptr(GDir) d = g_dir_open(*dir, 0, NULL);
                const char *name;

                /* A missing directory is the usual case for most of the path. */
                while (d && (name = g_dir_read_name(d))) {
                        char *copy;

                        if (!g_str_has_suffix(name, ".service") || g_hash_table_contains(seen, name))
                                continue;
                        copy = g_strdup(name);
                        g_ptr_array_add(names, copy);
                        g_hash_table_add(seen, copy);
                }
        }
        g_ptr_array_sort(names, compare_strings);
        return names;
}

/* "foo@bar.service" -> "foo@.service"; NULL for a name that is not an instance. */
static char *template_of(const char *unit) {
        const char *at = strchr(unit, '@'), *dot = strrchr(unit, '.');

        if (!at || !dot || dot < at || at + 1 == dot)
                return NULL;
        return g_strdup_printf("%.*s%s", (int) (at - unit + 1), unit, dot);
}

/* The names whose ".d" directories hold drop-ins for unit, weakest first as systemd orders
 * them; only the file names decide the order of application, this one only which directories. */
static GPtrArray *dropin_names(const char *unit) {
        GPtrArray *names = g_ptr_array_new_with_free_func(g_free);
        const char *dot = strrchr(unit, '.');
        g_autofree char *template = template_of(unit);

        /* "service.d" for every service, and "a-.service.d", "a-b-.service.d" for "a-b-c.service". */
        g_ptr_array_add(names, g_strdup(dot + 1));
        for (const char *dash = strchr(unit, '-'); dash && dash < dot; dash = strchr(dash + 1, '-'))
                g_ptr_array_add(names, g_strdup_printf("%.*s%s", (int) (dash - unit + 1), unit, dot));
        if (template)
                g_ptr_array_add(names, g_steal_pointer(&template));
        g_ptr_array_add(names, g_strdup(unit));
        return names;
}

static bool is_masked(const char *path) {
        struct stat st;

        return stat(path, &st) == 0 && S_ISCHR(st.st_mode);
}

static char *find_fragment(char *const *search_path, const char *unit) {
        g_autofree char *template = template_of(unit);

        for (char *const *dir = search_path; *dir; dir++) {
                g_autofree char *path = g_build_filename(*dir, unit, NULL);

                if (g_file_test(path, G_FILE_TEST_EXISTS) || is_masked(path))
                        return g_steal_pointer(&path);
        }
        return template ? find_fragment(search_path, template) : NULL;
}

/* basename -> path of every drop-in, the highest directory winning per basename. */
static GPtrArray *find_dropins(char *const *search_path, const char *unit) {
        g_autoptr(GPtrArray) names = dropin_names(unit);
        g_autoptr(GHashTable) by_base = g_hash_table_new_full(g_str_hash, g_str_equal, g_free, g_free);
        GPtrArray *paths = g_ptr_array_new_with_free_func(g_free);
        g_autoptr(GList) bases = NULL;

        for (char *const *dir = search_path; *dir; dir++)
                for (guint i = 0; i < names->len; i++) {
                        g_autofree char *d_path = g_strdup_printf("%s/%s.d", *dir, (char *) g_ptr_array_index(names, i));
                        g_autoptr(GDir) d = g_dir_open(d_path, 0, NULL);
                        const char *name;

                        while (d && (name = g_dir_read_name(d)))
                                if (g_str_has_suffix(name, ".conf") && !g_hash_table_contains(by_base, name))
                                        g_hash_table_insert(by_base, g_strdup(name),
                                                            g_build_filename(d_path, name, NULL));
                }

        bases = g_list_sort(g_hash_table_get_keys(by_base), (GCompareFunc) strcmp);
        for (GList *l = bases; l; l = l->next)
                g_ptr_array_add(paths, g_strdup(g_hash_table_lookup(by_base, l->data)));
        return paths;
}

static int apply_file(UnitExec *u, const char *path) {
        g_autofree char *text = NULL;
        g_autoptr(GError) error = NULL;

        /* A drop-in masked by /dev/null reads as empty, which is what masking means. */
        if (!g_file_get_contents(path, &text, NULL, &error))
                return g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_NOENT) ? -ENOENT
                       : g_error_matches(error, G_FILE_ERROR, G_FILE_ERROR_ACCES) ? -EACCES : -EIO;
        unit_exec_apply_text(u, text);
        return 0;
}

static void unit_exec_donep(UnitExec *u) {
        unit_exec_done(u);
}

int unit_files_load_exec(char *const *search_path, const char *unit, UnitExec *ret, char **ret_fragment) {
        g_autofree char *fragment = find_fragment(search_path, unit);
        _cleanup_(unit_exec_donep) UnitExec u;
        g_autoptr(GPtrArray) dropins = NULL;
        int r;

        unit_exec_init(&u);
        if (!fragment)
                return -ENOENT;
        if (is_masked(fragment))
                return -ERFKILL;

        r = apply_file(&u, fragment);
        if (r < 0)
                return r;
        dropins = find_dropins(search_path, unit);
        for (guint i = 0; i < dropins->len; i++) {
                r = apply_file(&u, g_ptr_array_index(dropins, i));
                if (r < 0)
                        return r;
        }
        *ret = u;
        u.exec_start = NULL;
        if (ret_fragment)
                *ret_fragment = g_steal_pointer(&fragment);
        return 0;
}

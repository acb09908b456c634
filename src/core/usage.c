/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <glib.h>

#include "usage.h"
#include "util.h"

static const char *const source_names[_USAGE_SOURCE_MAX] = {
        [USAGE_SOURCE_NONE] = "",
        [USAGE_SOURCE_CGROUP_V2] = "cgroup-v2",
        [USAGE_SOURCE_CGROUP_V1] = "cgroup-v1",
        [USAGE_SOURCE_SMAPS] = "smaps",
};

const char *usage_source_to_string(UsageSource s) {
        return s >= 0 && s < _USAGE_SOURCE_MAX ? source_names[s] : "";
}

uint64_t usage_add(uint64_t a, uint64_t b) {
        if (a == USAGE_UNKNOWN || b == USAGE_UNKNOWN)
                return USAGE_UNKNOWN;
        /* One below "unknown": a sum that big is wrong anyway, but must not read as unknown. */
        return b >= USAGE_UNKNOWN - a ? USAGE_UNKNOWN - 1 : a + b;
}

/* memory.stat: "name value" lines. Finds the values of names[i] into values[i] (untouched when
 * absent). Any other line shape means the file is not memory.stat. */
static int parse_stat_lines(const char *content, const char *const *names, uint64_t *values, bool *found, size_t n) {
        g_auto(GStrv) lines = NULL;

        if (!content)
                return -EINVAL;
        lines = g_strsplit(content, "\n", -1);
        for (char **l = lines; *l; l++) {
                const char *space = strchr(*l, ' ');

                if ((*l)[0] == '\0')
                        continue;
                if (!space || space == *l)
                        return -EBADMSG;
                for (size_t i = 0; i < n; i++) {
                        size_t len = strlen(names[i]);
                        uint64_t v;

                        if ((size_t) (space - *l) != len || strncmp(*l, names[i], len) != 0)
                                continue;
                        if (parse_u64(space + 1, &v) < 0)
                                return -EBADMSG;
                        values[i] = v;
                        found[i] = true;
                }
        }
        return 0;
}

/* Both cgroup versions' memory.stat: anon names the anonymous THP field, which must be there;
 * shmem the shmem THP field, NULL where the version has none (v1), unknown where it is absent. */
static int parse_memory_stat(const char *content, const char *anon, const char *shmem, UsageSource source, UnitUsage *ret) {
        const char *const names[] = { anon, shmem };
        uint64_t values[2] = {};
        bool found[2] = {};
        int r;

        r = parse_stat_lines(content, names, values, found, shmem ? 2 : 1);
        if (r < 0)
                return r;
        if (!found[0])
                return -ENODATA;
        *ret = (UnitUsage) {
                .anon_thp_bytes = values[0],
                .shmem_thp_bytes = found[1] ? values[1] : USAGE_UNKNOWN,
                .source = source,
        };
        return 0;
}

int usage_parse_memory_stat_v2(const char *content, UnitUsage *ret) {
        return parse_memory_stat(content, "anon_thp", "shmem_thp", USAGE_SOURCE_CGROUP_V2, ret);
}

int usage_parse_memory_stat_v1(const char *content, UnitUsage *ret) {
        return parse_memory_stat(content, "total_rss_huge", NULL, USAGE_SOURCE_CGROUP_V1, ret);
}

/* "AnonHugePages:    262144 kB" -> bytes. */
static int parse_kb_field(const char *rest, uint64_t *ret) {
        g_autofree char *number = NULL;
        const char *end;
        uint64_t kb;

        rest += strspn(rest, " \t");
        end = rest + strspn(rest, "0123456789");
        if (end == rest || !streq(end, " kB"))
                return -EBADMSG;
        number = g_strndup(rest, (size_t) (end - rest));
        if (parse_u64(number, &kb) < 0 || kb > UINT64_MAX / 1024)
                return -EBADMSG;
        *ret = kb * 1024;
        return 0;
}

int usage_parse_smaps_rollup(const char *content, uint64_t *ret_anon, uint64_t *ret_shmem) {
        g_auto(GStrv) lines = NULL;
        uint64_t anon = 0, shmem = USAGE_UNKNOWN;
        bool have_anon = false;

        if (!content)
                return -EINVAL;
        if (content[0] == '\0') {
                *ret_anon = 0;
                *ret_shmem = 0;
                return 0;
        }
        lines = g_strsplit(content, "\n", -1);
        for (char **l = lines; *l; l++) {
                int r;

                /* The first line is the "[rollup]" mapping header, not a field. */
                if (g_str_has_prefix(*l, "AnonHugePages:")) {
                        r = parse_kb_field(*l + strlen("AnonHugePages:"), &anon);
                        if (r < 0)
                                return r;
                        have_anon = true;
                } else if (g_str_has_prefix(*l, "ShmemPmdMapped:")) {
                        r = parse_kb_field(*l + strlen("ShmemPmdMapped:"), &shmem);
                        if (r < 0)
                                return r;
                }
        }
        if (!have_anon)
                return -ENODATA;
        *ret_anon = anon;
        *ret_shmem = shmem;
        return 0;
}

static bool has_controller(const char *list, const char *controller) {
        g_auto(GStrv) names = g_strsplit(list, ",", -1);

        return g_strv_contains((const char *const *) names, controller);
}

int usage_parse_pid_cgroup(const char *content, const char *controller, char **ret) {
        g_auto(GStrv) lines = NULL;

        if (!content)
                return -EINVAL;
        lines = g_strsplit(content, "\n", -1);
        for (char **l = lines; *l; l++) {
                g_auto(GStrv) fields = NULL;

                if ((*l)[0] == '\0')
                        continue;
                /* "ID:CONTROLLERS:PATH"; the path may itself contain ':'. */
                fields = g_strsplit(*l, ":", 3);
                if (g_strv_length(fields) != 3 || fields[2][0] != '/')
                        return -EBADMSG;
                if (controller ? has_controller(fields[1], controller) : streq(fields[0], "0") && fields[1][0] == '\0') {
                        *ret = g_strdup(fields[2]);
                        return 0;
                }
        }
        return -ENOENT;
}

static bool cgroup_path_valid(const char *path) {
        g_auto(GStrv) parts = NULL;

        if (!path || path[0] != '/')
                return false;
        parts = g_strsplit(path, "/", -1);
        for (char **p = parts; *p; p++)
                if (streq(*p, ".") || streq(*p, ".."))
                        return false;
        return true;
}

bool usage_cgroup_contains(const char *parent, const char *path) {
        size_t len = strlen(parent);

        /* "/" holds everything; "/a/b" holds "/a/b" and "/a/b/c", not "/a/bc". */
        if (len > 0 && parent[len - 1] == '/')
                len--;
        return strncmp(parent, path, len) == 0 && (path[len] == '\0' || path[len] == '/');
}

char *usage_common_cgroup(char *const *paths, size_t n) {
        g_autofree char *common = NULL;

        if (n == 0)
                return NULL;
        for (size_t i = 0; i < n; i++)
                if (!cgroup_path_valid(paths[i]))
                        return NULL;

        common = g_strdup(paths[0]);
        for (size_t i = 1; i < n; i++)
                while (!usage_cgroup_contains(common, paths[i])) {
                        char *slash = strrchr(common, '/');

                        /* Always found: common starts with '/', and "/" contains every path. */
                        slash[slash == common ? 1 : 0] = '\0';
                }
        return TAKE_PTR(common);
}

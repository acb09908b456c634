/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <glib.h>
#include <stddef.h>

#include "procfs-parse.h"
#include "util.h"

/* Names as arrays, not pointers, like the other constant tables: see KnobInfo in knob.h. */
static const struct {
        char name[26];
        size_t offset;
} vmstat_fields[] = {
        { "compact_stall",             offsetof(VmStat, compact_stall) },
        { "compact_fail",              offsetof(VmStat, compact_fail) },
        { "compact_success",           offsetof(VmStat, compact_success) },
        { "compact_migrate_scanned",   offsetof(VmStat, compact_migrate_scanned) },
        { "compact_free_scanned",      offsetof(VmStat, compact_free_scanned) },
        { "compact_daemon_wake",       offsetof(VmStat, compact_daemon_wake) },
        { "thp_fault_alloc",           offsetof(VmStat, thp_fault_alloc) },
        { "thp_fault_fallback",        offsetof(VmStat, thp_fault_fallback) },
        { "thp_collapse_alloc",        offsetof(VmStat, thp_collapse_alloc) },
        { "thp_collapse_alloc_failed", offsetof(VmStat, thp_collapse_alloc_failed) },
        { "thp_split_page",            offsetof(VmStat, thp_split_page) },
};

int procfs_parse_vmstat(const char *content, VmStat *ret) {
        g_auto(GStrv) lines = NULL;
        VmStat v = {};
        bool any = false;

        if (!content || !ret)
                return -EINVAL;

        lines = g_strsplit(content, "\n", -1);
        for (char **l = lines; *l; l++) {
                const char *space;
                g_autofree char *name = NULL;
                uint64_t n;

                if ((*l)[0] == '\0')
                        continue;

                /* Every line is "name value"; anything else means this is not /proc/vmstat. */
                space = strchr(*l, ' ');
                if (!space || space == *l)
                        return -EBADMSG;
                if (parse_u64(space + 1, &n) < 0)
                        return -EBADMSG;
                name = g_strndup(*l, (size_t) (space - *l));
                any = true;

                /* Summed because the kernel splits it per zone, and a storm in any zone counts. */
                if (g_str_has_prefix(name, "allocstall")) {
                        v.allocstall += n;
                        continue;
                }

                for (size_t i = 0; i < ELEMENTSOF(vmstat_fields); i++)
                        if (streq(name, vmstat_fields[i].name)) {
                                *(uint64_t *) ((uint8_t *) &v + vmstat_fields[i].offset) = n;
                                break;
                        }
        }

        if (!any)
                return -EBADMSG;

        *ret = v;
        return 0;
}

static int parse_pressure_line(const char *line, PressureLine *ret) {
        g_auto(GStrv) words = g_strsplit(line, " ", -1);
        bool have_avg10 = false, have_avg60 = false, have_avg300 = false, have_total = false;
        PressureLine p = { .present = true };

        /* words[0] is "some" or "full", checked by the caller. */
        for (char **w = words + 1; *w; w++) {
                const char *eq = strchr(*w, '=');
                const char *value;

                if (!eq)
                        return -EBADMSG;
                value = eq + 1;

                if (g_str_has_prefix(*w, "total=")) {
                        if (parse_u64(value, &p.total_usec) < 0)
                                return -EBADMSG;
                        have_total = true;
                } else {
                        double *target;
                        bool *seen;
                        char *end = NULL;
                        double d;

                        if (g_str_has_prefix(*w, "avg10=")) {
                                target = &p.avg10;
                                seen = &have_avg10;
                        } else if (g_str_has_prefix(*w, "avg60=")) {
                                target = &p.avg60;
                                seen = &have_avg60;
                        } else if (g_str_has_prefix(*w, "avg300=")) {
                                target = &p.avg300;
                                seen = &have_avg300;
                        } else
                                continue; /* a field added by a newer kernel */

                        /* The kernel prints "%lu.%02lu" regardless of locale. */
                        if (!isdigit((unsigned char) value[0]))
                                return -EBADMSG;
                        d = g_ascii_strtod(value, &end);
                        if (end == value || *end != '\0' || d > 100.0)
                                return -EBADMSG;
                        *target = d;
                        *seen = true;
                }
        }

        if (!have_avg10 || !have_avg60 || !have_avg300 || !have_total)
                return -EBADMSG;

        *ret = p;
        return 0;
}

int procfs_parse_pressure(const char *content, Pressure *ret) {
        g_auto(GStrv) lines = NULL;
        Pressure p = {};
        int r;

        if (!content || !ret)
                return -EINVAL;

        lines = g_strsplit(content, "\n", -1);
        for (char **l = lines; *l; l++) {
                PressureLine *target;

                if ((*l)[0] == '\0')
                        continue;
                if (g_str_has_prefix(*l, "some "))
                        target = &p.some;
                else if (g_str_has_prefix(*l, "full "))
                        target = &p.full;
                else
                        return -EBADMSG;

                if (target->present)
                        return -EBADMSG;
                r = parse_pressure_line(*l, target);
                if (r < 0)
                        return r;
        }

        /* The irq file has only "full"; every file thpd reads has "some". */
        if (!p.some.present)
                return -EBADMSG;

        *ret = p;
        return 0;
}

int procfs_parse_pid_stat(const char *content, ProcStat *ret) {
        g_auto(GStrv) fields = NULL;
        g_autofree char *rest = NULL;
        const char *open, *close;
        ProcStat s = {};
        uint64_t n;
        size_t len;

        if (!content || !ret)
                return -EINVAL;

        /* comm may itself contain spaces and parentheses, so it ends at the last ')'. */
        open = strchr(content, '(');
        close = strrchr(content, ')');
        if (!open || !close || close < open || open == content || open[-1] != ' ')
                return -EBADMSG;

        {
                g_autofree char *pid = g_strndup(content, (size_t) (open - 1 - content));

                if (parse_u64(pid, &n) < 0 || n == 0 || n > INT32_MAX)
                        return -EBADMSG;
                s.pid = (pid_t) n;
        }

        len = MIN((size_t) (close - open - 1), sizeof(s.comm) - 1);
        memcpy(s.comm, open + 1, len);
        s.comm[len] = '\0';

        if (close[1] != ' ')
                return -EBADMSG;
        /* fields[0] is field 3 (state); utime and stime are fields 14 and 15. */
        rest = g_strchomp(g_strdup(close + 2));
        fields = g_strsplit(rest, " ", 14);
        if (g_strv_length(fields) < 13)
                return -EBADMSG;

        if (strlen(fields[0]) != 1)
                return -EBADMSG;
        s.state = fields[0][0];

        if (parse_u64(fields[1], &n) < 0 || n > INT32_MAX)
                return -EBADMSG;
        s.ppid = (pid_t) n;

        if (parse_u64(fields[6], &n) < 0 || n > UINT32_MAX)
                return -EBADMSG;
        s.flags = (unsigned) n;

        if (parse_u64(fields[11], &s.utime_ticks) < 0 || parse_u64(fields[12], &s.stime_ticks) < 0)
                return -EBADMSG;

        *ret = s;
        return 0;
}

/* The value of "KEY:" in a status file, up to the end of its line; NULL when there is none. */
static const char *status_field(const char *status, const char *key, size_t *ret_len) {
        size_t key_len = strlen(key);

        for (const char *line = status; line; line = strchr(line, '\n') ? strchr(line, '\n') + 1 : NULL)
                if (strncmp(line, key, key_len) == 0 && line[key_len] == ':') {
                        const char *v = line + key_len + 1;

                        v += strspn(v, " \t");
                        *ret_len = strcspn(v, "\n");
                        return v;
                }
        return NULL;
}

int procfs_parse_thp_status(const char *status, ProcThpStatus *ret) {
        ProcThpStatus s = {};
        const char *v;
        size_t len;

        v = status_field(status, "THP_enabled", &len);
        if (!v)
                return -ENODATA;
        if (len != 1 || (*v != '0' && *v != '1'))
                return -EBADMSG;
        s.thp_enabled = *v == '1';

        v = status_field(status, "Name", &len);
        if (!v || len >= sizeof s.name)
                return -EBADMSG;
        memcpy(s.name, v, len);

        *ret = s;
        return 0;
}

bool procfs_is_khugepaged_comm(const char *comm) {
        return streq_ptr(comm, "khugepaged");
}

bool procfs_is_kcompactd_comm(const char *comm) {
        return comm && g_str_has_prefix(comm, "kcompactd") && string_is_digits(comm + strlen("kcompactd"));
}

int procfs_parse_cgroup_unit(const char *content, char **ret_unit) {
        g_auto(GStrv) lines = g_strsplit(content, "\n", -1);

        for (size_t i = 0; lines[i]; i++) {
                g_auto(GStrv) parts = NULL;

                if (!g_str_has_prefix(lines[i], "0::/"))
                        continue;
                parts = g_strsplit(lines[i] + strlen("0::/"), "/", -1);
                for (size_t n = g_strv_length(parts); n > 0; n--)
                        if (g_str_has_suffix(parts[n - 1], ".service") || g_str_has_suffix(parts[n - 1], ".scope")) {
                                *ret_unit = g_strdup(parts[n - 1]);
                                return 0;
                        }
                return -ENOENT;
        }
        return -EBADMSG;
}

/* Whether mount_point is path or one of its parents, component-wise ("/sys" holds
 * "/sys/kernel", not "/sysfoo"). */
static bool mount_holds(const char *mount_point, const char *path) {
        size_t n = strlen(mount_point);

        if (streq(mount_point, "/"))
                return path[0] == '/';
        return strncmp(path, mount_point, n) == 0 && (path[n] == '\0' || path[n] == '/');
}

int procfs_parse_path_read_only(const char *mountinfo, const char *path, bool *ret) {
        g_auto(GStrv) lines = NULL;
        size_t best = 0;
        bool found = false, read_only = false;

        if (!mountinfo || !path || !ret)
                return -EINVAL;

        /* "36 35 98:0 /mnt1 /mnt2 ro,noatime master:1 - ext3 /dev/root rw": the fifth field
         * is where it is mounted, the sixth the options of the mount itself. */
        lines = g_strsplit(mountinfo, "\n", -1);
        for (char **l = lines; *l; l++) {
                g_auto(GStrv) fields = NULL;
                size_t n;

                if (**l == '\0')
                        continue;
                fields = g_strsplit(*l, " ", 7);
                if (g_strv_length(fields) < 7)
                        return -EBADMSG;
                if (!mount_holds(fields[4], path))
                        continue;
                n = strlen(fields[4]);
                if (found && n < best)
                        continue;
                best = n;
                found = true;
                read_only = false;
                for (const char *o = fields[5]; *o;) {
                        size_t k = strcspn(o, ",");

                        if (k == 2 && strncmp(o, "ro", 2) == 0)
                                read_only = true;
                        o += k + (o[k] == ',');
                }
        }
        if (!found)
                return -ENOENT;
        *ret = read_only;
        return 0;
}

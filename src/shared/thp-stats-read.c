/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <glib.h>

#include "log.h"
#include "sysfs.h"
#include "thp-stats-read.h"
#include "util.h"

static int compare_size(gconstpointer a, gconstpointer b) {
        const ThpSizeStats *x = a, *y = b;

        return x->size_kb < y->size_kb ? -1 : x->size_kb > y->size_kb;
}

static void read_size(const char *stats_dir, uint32_t mask, ThpSizeStats *s) {
        for (ThpStat stat = 0; stat < _THP_STAT_MAX; stat++) {
                g_autofree char *path = NULL;
                _cleanup_free_ char *text = NULL;
                int r;

                if (!(mask & (1u << stat)))
                        continue;
                path = g_build_filename(stats_dir, thp_stat_to_string(stat), NULL);
                r = read_small_file(path, &text);
                if (r == -ENOENT)
                        continue;
                if (r >= 0)
                        r = thp_size_stats_set(s, thp_stat_to_string(stat), text);
                if (r < 0)
                        log_debug_errno(r, "Cannot read %s, left out: %m", path);
        }
}

int thp_stats_read_some(const char *sysfs_root, uint32_t mask, ThpSizeStats **ret, size_t *ret_n) {
        g_autofree char *dir = NULL;
        g_autoptr(GArray) sizes = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        struct dirent *de;

        assert(sysfs_root);
        assert(ret);
        assert(ret_n);

        sizes = g_array_new(FALSE, TRUE, sizeof(ThpSizeStats));
        dir = g_build_filename(sysfs_root, SYSFS_THP_DIR, NULL);
        d = opendir(dir);
        if (!d && errno != ENOENT)
                return -errno;

        while (d && (errno = 0, de = readdir(d))) {
                g_autofree char *stats_dir = NULL;
                ThpSizeStats s = {};

                if (thp_size_dir_parse(de->d_name, &s.size_kb) < 0)
                        continue;
                stats_dir = g_build_filename(dir, de->d_name, "stats", NULL);
                if (access(stats_dir, F_OK) < 0)
                        continue;
                read_size(stats_dir, mask, &s);
                g_array_append_val(sizes, s);
        }
        if (d && errno != 0)
                return -errno;

        g_array_sort(sizes, compare_size);
        *ret_n = sizes->len;
        *ret = (ThpSizeStats *) (void *) g_array_free(g_steal_pointer(&sizes), FALSE);
        return 0;
}

int thp_stats_read(const char *sysfs_root, ThpSizeStats **ret, size_t *ret_n) {
        return thp_stats_read_some(sysfs_root, UINT32_MAX, ret, ret_n);
}

int thp_stats_read_pmd_size_kb(const char *sysfs_root, uint64_t *ret) {
        g_autofree char *path = NULL;
        _cleanup_free_ char *text = NULL;
        uint64_t bytes;
        int r;

        assert(sysfs_root);
        assert(ret);

        path = g_build_filename(sysfs_root, SYSFS_THP_DIR, "hpage_pmd_size", NULL);
        r = read_small_file(path, &text);
        if (r < 0)
                return r;
        r = sysfs_parse_pool_number(text, &bytes);
        if (r < 0)
                return r;
        if (bytes < 1024)
                return -EBADMSG;

        *ret = bytes / 1024;
        return 0;
}

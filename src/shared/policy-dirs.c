/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <assert.h>
#include <dirent.h>
#include <fcntl.h>
#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "config.h"
#include "log.h"
#include "policy-dirs.h"
#include "util.h"

const char *const policy_default_dirs[] = {
        "/etc/thpd/policy.d",
        "/run/thpd/policy.d",
        "/usr/local/lib/thpd/policy.d",
        THPD_VENDOR_POLICY_DIR,
        THPD_DEFAULT_POLICY_DIR,
        NULL,
};

uid_t policy_trusted_uid(void) {
        const char *e = getenv("THPD_TRUSTED_UID");
        uint64_t uid;

        if (!e)
                return 0;
        if (parse_u64(e, &uid) < 0 || uid >= (uid_t) -1) {
                log_warning("Ignoring invalid THPD_TRUSTED_UID=%s, trusting uid 0 only", e);
                return 0;
        }
        return (uid_t) uid;
}

PolicyFile *policy_file_free(PolicyFile *f) {
        if (!f)
                return NULL;
        g_free(f->name);
        g_free(f->path);
        g_free(f->masked_by);
        if (f->shadowed)
                g_ptr_array_unref(f->shadowed);
        g_free(f);
        return NULL;
}

void policy_file_free_void(void *p) {
        policy_file_free(p);
}

/* Anyone who can write a policy can change kernel memory settings for the whole machine, so a
 * policy counts only if the trusted uid owns it and nobody else can write it. */
static bool check_trusted(const char *path, const char *what, const struct stat *st, uid_t uid, DiagnosticLevel level,
                          Diagnostics *diag) {
        /* A warning is for a file outside the policy directories (a package's build tree): it
         * is the place thpd would not trust, the file may well be installed right. */
        const char *verdict = level == DIAGNOSTIC_ERROR ? "not trusted, ignored" : "thpd would not trust it there";

        if (st->st_uid != uid) {
                diagnostics_add(diag, level, path, 0, "%s is owned by uid %u, not %u: %s", what, (unsigned) st->st_uid,
                                (unsigned) uid, verdict);
                return false;
        }
        if (st->st_mode & (S_IWGRP | S_IWOTH)) {
                diagnostics_add(diag, level, path, 0, "%s is writable by group or others (mode %04o): %s", what,
                                (unsigned) (st->st_mode & 07777), verdict);
                return false;
        }
        return true;
}

/* A symlink may lead out of the policy directory, so the directory that really holds the file
 * must be trusted too. */
static bool file_is_trusted(const char *path, const struct stat *st, uid_t uid, DiagnosticLevel level,
                            Diagnostics *diag) {
        /* Resolved on the heap: a PATH_MAX buffer here was the deepest frame of the daemon's
         * stack, whose pages the kernel never takes back. */
        _cleanup_free_ char *real = NULL;
        g_autofree char *parent = NULL, *what = NULL;
        struct stat parent_st;

        if (!check_trusted(path, "file", st, uid, level, diag))
                return false;

        real = realpath(path, NULL);
        if (!real) {
                diagnostics_add(diag, level, path, 0, "cannot resolve: %s", g_strerror(errno));
                return false;
        }
        parent = g_path_get_dirname(real);
        if (stat(parent, &parent_st) < 0) {
                diagnostics_add(diag, level, path, 0, "cannot stat %s: %s", parent, g_strerror(errno));
                return false;
        }
        what = g_strdup_printf("directory %s", parent);
        return check_trusted(path, what, &parent_st, uid, level, diag);
}

bool policy_file_check_trusted(const char *path, DiagnosticLevel level, Diagnostics *diag) {
        struct stat st;

        if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                /* policy_load() names what is wrong with it. */
                return false;
        return file_is_trusted(path, &st, policy_trusted_uid(), level, diag);
}

static bool is_policy_name(const char *name) {
        return name[0] != '.' && g_str_has_suffix(name, ".conf") && strlen(name) > strlen(".conf");
}

static bool is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && st->st_rdev == makedev(1, 3);
}

static void enumerate_dir(const char *dir, uid_t uid, GHashTable *by_name, GPtrArray *files, Diagnostics *diag) {
        _cleanup_closedir_ DIR *d = NULL;
        g_autoptr(GPtrArray) names = g_ptr_array_new_with_free_func(g_free);
        struct dirent *de;
        struct stat st;

        d = opendir(dir);
        if (!d) {
                if (errno != ENOENT)
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, dir, 0, "cannot open directory: %s", g_strerror(errno));
                return;
        }
        if (fstat(dirfd(d), &st) < 0) {
                diagnostics_add(diag, DIAGNOSTIC_ERROR, dir, 0, "cannot stat directory: %s", g_strerror(errno));
                return;
        }
        if (!check_trusted(dir, "directory", &st, uid, DIAGNOSTIC_ERROR, diag))
                return;

        errno = 0;
        while ((de = readdir(d)))
                if (is_policy_name(de->d_name))
                        g_ptr_array_add(names, g_strdup(de->d_name));
        if (errno != 0) {
                diagnostics_add(diag, DIAGNOSTIC_ERROR, dir, 0, "cannot read directory: %s", g_strerror(errno));
                return;
        }

        for (guint i = 0; i < names->len; i++) {
                const char *name = g_ptr_array_index(names, i);
                g_autofree char *path = g_build_filename(dir, name, NULL);
                PolicyFile *f = g_hash_table_lookup(by_name, name);

                if (f) {
                        g_ptr_array_add(f->shadowed, g_steal_pointer(&path));
                        continue;
                }

                /* A file we cannot use does not claim its name: a lower directory's file of the
                 * same name still applies, as if the bad one were not there. */
                if (fstatat(dirfd(d), name, &st, 0) < 0) {
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, path, 0, "cannot stat (dangling symlink?): %s, ignored",
                                        g_strerror(errno));
                        continue;
                }
                if (!is_dev_null(&st) && !S_ISREG(st.st_mode)) {
                        diagnostics_add(diag, DIAGNOSTIC_ERROR, path, 0, "not a regular file, ignored");
                        continue;
                }
                if (S_ISREG(st.st_mode) && !file_is_trusted(path, &st, uid, DIAGNOSTIC_ERROR, diag))
                        continue;

                f = g_new0(PolicyFile, 1);
                f->name = g_strdup(name);
                f->shadowed = g_ptr_array_new_with_free_func(g_free);
                if (is_dev_null(&st) || st.st_size == 0)
                        f->masked_by = g_steal_pointer(&path);
                else
                        f->path = g_steal_pointer(&path);
                g_ptr_array_add(files, f);
                g_hash_table_insert(by_name, f->name, f);
        }
}

static gint compare_policy_files(gconstpointer a, gconstpointer b) {
        const PolicyFile *x = *(PolicyFile *const *) a, *y = *(PolicyFile *const *) b;

        return strcmp(x->name, y->name);
}

int policy_dirs_enumerate(const char *const *dirs, Diagnostics *diag, GPtrArray **ret) {
        g_autoptr(GHashTable) by_name = g_hash_table_new(g_str_hash, g_str_equal);
        g_autoptr(GPtrArray) files = g_ptr_array_new_with_free_func(policy_file_free_void);
        uid_t uid = policy_trusted_uid();

        assert(dirs);
        assert(ret);

        for (size_t i = 0; dirs[i]; i++) {
                bool seen = false;

                /* With --prefix=/usr/local the vendor directory is also the local one. */
                for (size_t j = 0; j < i; j++)
                        if (streq(dirs[i], dirs[j]))
                                seen = true;
                if (!seen)
                        enumerate_dir(dirs[i], uid, by_name, files, diag);
        }

        g_ptr_array_sort(files, compare_policy_files);
        *ret = g_steal_pointer(&files);
        return 0;
}

int policy_dirs_load(const char *const *dirs, Diagnostics *diag, GPtrArray **ret) {
        g_autoptr(GPtrArray) files = NULL;
        g_autoptr(GPtrArray) policies = g_ptr_array_new_with_free_func(policy_free_void);
        int r;

        r = policy_dirs_enumerate(dirs, diag, &files);
        if (r < 0)
                return r;

        for (guint i = 0; i < files->len; i++) {
                const PolicyFile *f = g_ptr_array_index(files, i);
                Policy *p;

                if (!f->path)
                        continue;
                /* A bad file is reported in diag and skipped; the others still load. */
                if (policy_load(f->path, 0, diag, &p) >= 0)
                        g_ptr_array_add(policies, p);
        }

        *ret = g_steal_pointer(&policies);
        return 0;
}

#define POLICY_READ_CHUNK 16384

int policy_load(const char *path, PolicyParseFlags flags, Diagnostics *diag, Policy **ret) {
        g_autoptr(PolicyParser) parser = NULL;
        _cleanup_close_ int fd = -1;
        /* On the heap: 16 kB on the stack would be the deepest point of the daemon's stack, whose
         * pages the kernel never takes back. */
        g_autofree char *buf = g_malloc(POLICY_READ_CHUNK);
        int r;

        /* O_NONBLOCK: a FIFO swapped in after the directory scan checked the file must not hang
         * the daemon (it reads as empty); nothing changes for a regular file. */
        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0) {
                r = -errno;
                diagnostics_add(diag, DIAGNOSTIC_ERROR, path, 0, "cannot open: %s", g_strerror(-r));
                return r;
        }

        r = policy_parser_new(path, flags, diag, &parser);
        if (r < 0)
                return r;

        /* Read only as long as the parser wants more: a huge file that is no policy is given up
         * on after a few lines, not read to its end at every reload. */
        for (;;) {
                ssize_t n = read(fd, buf, POLICY_READ_CHUNK);

                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        policy_parser_read_error(parser, errno);
                        break;
                }
                if (n == 0)
                        break;
                r = policy_parser_feed(parser, buf, (size_t) n);
                if (r < 0)
                        return r;
                if (r == 0)
                        break;
        }
        return policy_parser_finish(parser, ret);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <inttypes.h>

#include "log.h"
#include "manager-ownership.h"
#include "manager-pools.h"
#include "pool-ops.h"
#include "pool-plan.h"
#include "pools.h"
#include "sysfs.h"
#include "util.h"

void manager_record_pool_baselines(Manager *m, Baseline *b) {
        g_autofree uint64_t *sizes = NULL;
        size_t n_sizes = 0;

        if (sysfs_list_hugetlb_sizes(m->sysfs_root, &sizes, &n_sizes) < 0)
                return;
        for (size_t i = 0; i < n_sizes; i++) {
                PoolState state;

                if (baseline_find_pool(b, sizes[i], POOL_NODE_ANY))
                        continue;
                if (pool_files_read(&m->pool_files, m->sysfs_root, sizes[i], POOL_NODE_ANY, &state) >= 0)
                        (void) baseline_set_pool(b, sizes[i], POOL_NODE_ANY, state.nr);
        }
}

char *manager_pool_item(uint64_t page_size_kb, int node) {
        if (node == POOL_NODE_ANY)
                return g_strdup_printf("hugepages-%" PRIu64 "kB/nr_hugepages", page_size_kb);
        return g_strdup_printf("node%d/hugepages-%" PRIu64 "kB/nr_hugepages", node, page_size_kb);
}

char *manager_pool_holders(const Manager *m, uint64_t page_size_kb, int node, bool by_name) {
        g_autoptr(GString) s = g_string_new(NULL);

        for (guint i = 0; i < m->policies->len; i++) {
                const Policy *p = g_ptr_array_index(m->policies, i);
                const PolicyRuntime *rt = g_hash_table_lookup(m->plan.policy_runtime, p->name);

                if (!p->has_pool || p->pool.page_size_kb != page_size_kb || p->pool.node != node || !rt)
                        continue;
                if (rt->active)
                        g_string_append_printf(s, "%s%s for %s", s->len > 0 ? ", " : "", by_name ? p->name : p->path,
                                               (const char *) g_ptr_array_index(rt->units, 0));
                else if (rt->pool_grace_until > 0)
                        g_string_append_printf(s, "%s%s, held after its unit stopped", s->len > 0 ? ", " : "",
                                               by_name ? p->name : p->path);
        }
        if (s->len == 0)
                return NULL;
        return g_string_free(g_steal_pointer(&s), false);
}

char *manager_pool_reason(Manager *m, uint64_t page_size_kb, int node) {
        return manager_pool_holders(m, page_size_kb, node, false) ?: g_strdup("baseline, no policy holds it");
}

/* What pool_plan_step() needs, read now. */
static void observe_pool(Manager *m, const PoolTarget *t, const PoolBaseline *b, PoolObservation *ret,
                         PoolState *ret_state, int *ret_read_error) {
        size_t bi = b ? (size_t) (b - m->baseline.pools) : 0;
        PoolState state = {};
        int r;

        r = pool_files_read(&m->pool_files, m->sysfs_root, t->page_size_kb, t->node, &state);
        *ret = (PoolObservation) {
                .has_baseline = b != NULL,
                .baseline = b ? b->pages : 0,
                .readable = r >= 0,
                .current = r >= 0 ? state.nr : 0,
                .owned = b && m->own.pools[bi] != OWNER_BASELINE,
                .yielded = b && m->own.pools[bi] == OWNER_WRITER,
        };
        *ret_state = state;
        *ret_read_error = r;
}

/* Carries out a RESIZE or OWN step; returns whether the write succeeded, with what it left. */
static bool resize(Manager *m, const PoolTarget *t, const PoolStep *step, const char *size, PoolStatus *status,
                   unsigned *errors, uint64_t *ret_allocated) {
        PoolRoots roots = { .sysfs_root = m->sysfs_root, .procfs_root = m->procfs_root };
        PoolOps ops = pool_ops_sysfs(&roots);
        g_autofree char *reason = manager_pool_reason(m, t->page_size_kb, t->node);
        PoolResult res;
        int r;

        r = pool_resize(&ops, t->page_size_kb, t->node, step->target, m->settings.pool_alloc_retries, &res);
        if (r < 0) {
                log_error_errno(r, "hugetlb %s pool: cannot set %" PRIu64 " pages (%s): %m", size, step->target, reason);
                status->shortfall = g_strdup_printf("the kernel refused %" PRIu64 " pages: %s", step->target, strerror(-r));
                (*errors)++;
                return false;
        }
        if (res.allocated < step->target) {
                status->shortfall = g_strdup_printf("%" PRIu64 " of %" PRIu64 " pages after %u attempt(s)", res.allocated,
                                                    step->target, res.attempts);
                log_warning("hugetlb %s pool: %" PRIu64 " -> %" PRIu64 " pages, %" PRIu64 " short of %" PRIu64
                            " after %u attempt(s) and %u compaction(s) (%s)",
                            size, step->current, res.allocated, step->target - res.allocated, step->target,
                            res.attempts, res.compactions, reason);
        } else
                log_info("hugetlb %s pool: %" PRIu64 " -> %" PRIu64 " pages (%s)", size, step->current, res.allocated,
                         reason);
        *ret_allocated = res.allocated;
        return true;
}

unsigned manager_apply_pools(Manager *m) {
        unsigned errors = 0;

        g_array_set_size(m->pools, 0);
        for (size_t i = 0; i < m->target.n_pools; i++) {
                const PoolTarget *t = &m->target.pools[i];
                const PoolBaseline *b = baseline_find_pool(&m->baseline, t->page_size_kb, t->node);
                PoolStatus status = { .page_size_kb = t->page_size_kb, .node = t->node, .target = t->pages };
                g_autofree char *item = manager_pool_item(t->page_size_kb, t->node);
                g_autofree char *value = NULL;
                const DriftConflict *conflict;
                Owner *owner;
                PoolObservation o;
                PoolState state;
                PoolStep step;
                uint64_t allocated = 0;
                bool resized = false;
                char size[24];
                int r;

                format_page_size(t->page_size_kb, size);
                observe_pool(m, t, b, &o, &state, &r);
                pool_plan_step(t, &o, &step);
                status.target = step.target;

                /* Before any write it protects: a thpd killed after the write must still know
                 * what to give back. */
                if (step.persist_baseline) {
                        if (baseline_set_pool(&m->baseline, t->page_size_kb, t->node, step.baseline) < 0) {
                                status.shortfall = g_strdup_printf("cannot record the baseline of the %s pool", size);
                                g_array_append_val(m->pools, status);
                                errors++;
                                continue;
                        }
                        manager_save_baseline(m);
                        b = baseline_find_pool(&m->baseline, t->page_size_kb, t->node);
                }

                switch (step.action) {
                case POOL_ACTION_MISSING:
                        status.shortfall = t->node == POOL_NODE_ANY
                                                   ? g_strdup_printf("this kernel has no %s hugetlb pages", size)
                                                   : g_strdup_printf("no %s pool on NUMA node %d", size, t->node);
                        g_array_append_val(m->pools, status);
                        continue;
                case POOL_ACTION_UNREADABLE:
                        status.shortfall = g_strdup_printf("cannot read the pool: %s", strerror(-r));
                        g_array_append_val(m->pools, status);
                        errors++;
                        continue;
                case POOL_ACTION_YIELD:
                        conflict = drift_conflict(&m->drift, item);
                        status.shortfall = g_strdup_printf("left at %" PRIu64 " pages to %s, which keeps resizing it",
                                                           step.current,
                                                           conflict && conflict->writer ? conflict->writer
                                                                                        : "an unknown writer");
                        break;
                case POOL_ACTION_OWN:
                case POOL_ACTION_RESIZE:
                        if (step.current == step.target)
                                break;
                        /* Recorded first, as for knobs (ownership-record.h). */
                        value = g_strdup_printf("%" PRIu64, step.target);
                        manager_ownership_want(m, item, value);
                        manager_ownership_flush(m);
                        resized = resize(m, t, &step, size, &status, &errors, &allocated);
                        break;
                default:
                        break;
                }

                /* What the resize left: read again only when there was one. */
                if (resized && pool_files_read(&m->pool_files, m->sysfs_root, t->page_size_kb, t->node, &state) < 0)
                        state = (PoolState) {};
                /* A write that failed left the pages it found. */
                owner = &m->own.pools[(size_t) (b - m->baseline.pools)];
                *owner = ownership_pool_step(*owner, t, &step, resized ? allocated : step.current);
                g_free(value);
                value = g_strdup_printf("%" PRIu64, resized ? state.nr : step.current);
                manager_ownership_note(m, item, *owner, value);
                manager_ownership_pool_judged(m, item, &step);
                status.allocated = state.nr;
                status.free = state.free;
                g_array_append_val(m->pools, status);
        }
        return errors;
}

int manager_restore_pools(Manager *m) {
        int failed = 0;

        for (size_t i = 0; i < m->baseline.n_pools; i++) {
                const PoolBaseline *p = &m->baseline.pools[i];
                PoolState state;
                uint64_t got;
                char size[24];
                int r;

                if (pool_files_read(&m->pool_files, m->sysfs_root, p->page_size_kb, p->node, &state) < 0)
                        continue;
                format_page_size(p->page_size_kb, size);
                switch (ownership_at_stop(m->own.pools[i], state.nr == p->pages)) {
                case OWNERSHIP_STOP_LEAVE: {
                        g_autofree char *item = manager_pool_item(p->page_size_kb, p->node);
                        const DriftConflict *c = drift_conflict(&m->drift, item);

                        log_notice("hugetlb %s pool: leaving %" PRIu64 " pages, the size %s set, which thpd yielded to "
                                   "(the baseline is %" PRIu64 ")",
                                   size, state.nr, c && c->writer ? c->writer : "an unknown writer", p->pages);
                        continue;
                }
                case OWNERSHIP_STOP_RESTORE:
                        break;
                default:
                        continue;
                }
                r = sysfs_write_pool(m->sysfs_root, p->page_size_kb, p->node, p->pages, &got);
                if (r < 0) {
                        log_error_errno(r, "hugetlb %s pool: cannot restore %" PRIu64 " pages: %m", size, p->pages);
                        failed = r;
                        continue;
                }
                log_info("hugetlb %s pool: %" PRIu64 " -> %" PRIu64 " pages (restoring the baseline)", size, state.nr, got);
        }
        return failed;
}

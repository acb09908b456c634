/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "pool-plan.h"
#include "util.h"

static const char *const pool_action_table[_POOL_ACTION_MAX] = {
        [POOL_ACTION_MISSING] = "missing",
        [POOL_ACTION_UNREADABLE] = "unreadable",
        [POOL_ACTION_FOLLOW] = "follow",
        [POOL_ACTION_ADOPT] = "adopt",
        [POOL_ACTION_OWN] = "own",
        [POOL_ACTION_YIELD] = "yield",
        [POOL_ACTION_GRACE] = "grace",
        [POOL_ACTION_KEEP] = "keep",
        [POOL_ACTION_RESIZE] = "resize",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(pool_action, PoolAction);

void pool_plan_step(const PoolTarget *t, const PoolObservation *o, PoolStep *ret) {
        PoolStep step = {
                .current = o->current,
                .target = t->pages,
                .baseline = o->baseline,
        };

        if (!o->has_baseline && (t->node == POOL_NODE_ANY || !o->readable)) {
                /* Every global pool this kernel has got its baseline when thpd started: one
                 * without is a page size it lacks. A per-node one gets its baseline at first
                 * use, and is missing only if it cannot be read either. */
                step.action = POOL_ACTION_MISSING;
                step.target = t->pages;
        } else if (!o->readable)
                step.action = POOL_ACTION_UNREADABLE;
        else if (!o->has_baseline) {
                step.action = POOL_ACTION_OWN;
                step.baseline = o->current;
                step.target = add_saturating(o->current, t->requested);
                step.persist_baseline = true;
        } else if (t->requested == 0 && !o->owned) {
                /* Not ours: the baseline follows the admin, as with knobs. */
                step.action = o->current != o->baseline ? POOL_ACTION_ADOPT : POOL_ACTION_FOLLOW;
                step.baseline = o->current;
                step.target = o->current;
                step.persist_baseline = step.action == POOL_ACTION_ADOPT;
        } else if (o->current != t->pages)
                /* Resizing it back would only start another round of a fight thpd gave up. */
                step.action = o->yielded ? POOL_ACTION_YIELD : POOL_ACTION_RESIZE;
        else if (t->requested > 0 && t->n_in_grace == t->n_policies)
                step.action = POOL_ACTION_GRACE;
        else
                step.action = POOL_ACTION_KEEP;
        *ret = step;
}

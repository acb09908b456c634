/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "ownership.h"
#include "util.h"

static const char *const owner_table[_OWNER_MAX] = {
        [OWNER_BASELINE] = "baseline",
        [OWNER_THPD] = "thpd",
        [OWNER_WRITER] = "writer",
};

DEFINE_STRING_TABLE_LOOKUP_TO_STRING(owner, Owner);

void ownership_init(Ownership *o) {
        FOREACH_KNOB(k) {
                o->knobs[k] = OWNER_BASELINE;
                o->knobs_unjudged[k] = false;
        }
        for (size_t i = 0; i < RESOLVE_MAX_POOLS; i++)
                o->pools[i] = OWNER_BASELINE;
}

void ownership_plan_flags(const Ownership *o, bool units_known, bool ret_owned[_KNOB_MAX], bool ret_yielded[_KNOB_MAX]) {
        FOREACH_KNOB(k) {
                ret_owned[k] = o->knobs[k] != OWNER_BASELINE || (o->knobs_unjudged[k] && !units_known);
                ret_yielded[k] = o->knobs[k] == OWNER_WRITER;
        }
}

Owner ownership_after_write(Owner before, bool held, bool at_baseline) {
        if (before == OWNER_WRITER)
                return OWNER_WRITER;
        return held || !at_baseline ? OWNER_THPD : OWNER_BASELINE;
}

bool ownership_knob_commit(Ownership *o, Knob k, const KnobStep *step, bool write_failed, KnobValue baseline,
                           KnobValue *applied, KnobValue *recorded) {
        Owner *owner = &o->knobs[k];
        bool changed = false, owned = *owner != OWNER_BASELINE;

        if (step->action != KNOB_ACTION_HOLD && step->action != KNOB_ACTION_UNREADABLE)
                o->knobs_unjudged[k] = false;

        if (!write_failed)
                changed = plan_knob_commit(step, applied, &owned, recorded);
        switch (step->action) {
        case KNOB_ACTION_ADOPT:
        case KNOB_ACTION_FOLLOW:
                *owner = OWNER_BASELINE;
                break;
        case KNOB_ACTION_YIELD:
                *owner = OWNER_WRITER;
                break;
        case KNOB_ACTION_KEEP:
        case KNOB_ACTION_WRITE:
                *owner = ownership_after_write(*owner, step->owned, *applied == baseline);
                break;
        default:
                /* Nothing written and nothing learnt (HOLD: the unit list is not in yet). */
                break;
        }
        return changed;
}

Owner ownership_pool_step(Owner before, const PoolTarget *t, const PoolStep *step, uint64_t pages) {
        switch (step->action) {
        case POOL_ACTION_FOLLOW:
        case POOL_ACTION_ADOPT:
                return OWNER_BASELINE;
        case POOL_ACTION_YIELD:
                return OWNER_WRITER;
        case POOL_ACTION_OWN:
        case POOL_ACTION_GRACE:
        case POOL_ACTION_KEEP:
        case POOL_ACTION_RESIZE:
                return ownership_after_write(before, t->requested > 0, pages == step->baseline);
        default:
                return before;
        }
}

bool ownership_knob_held(Owner o, SourceKind source, bool pinned) {
        return source != SOURCE_BASELINE || o != OWNER_BASELINE || pinned;
}

bool ownership_pool_held(Owner o, uint64_t requested) {
        return requested > 0 || o != OWNER_BASELINE;
}

Owner ownership_after_drift(Owner before, DriftAction action) {
        switch (action) {
        case DRIFT_ACTION_ADOPT:
                return OWNER_BASELINE;
        case DRIFT_ACTION_YIELD:
                return OWNER_WRITER;
        default:
                return before;
        }
}

Owner ownership_conflict(Owner before, bool in_conflict) {
        if (in_conflict)
                return OWNER_WRITER;
        return before == OWNER_WRITER ? OWNER_THPD : before;
}

Owner ownership_at_start(const OwnershipStart *s, bool *ret_while_down) {
        bool while_down = !s->yielded && !s->at_baseline && s->recorded && !s->thpd_left;

        *ret_while_down = while_down;
        if (s->yielded)
                return OWNER_WRITER;
        if (s->at_baseline || while_down)
                return OWNER_BASELINE;
        return OWNER_THPD;
}

OwnershipStop ownership_at_stop(Owner o, bool at_baseline) {
        if (at_baseline)
                return OWNERSHIP_STOP_NOTHING;
        switch (o) {
        case OWNER_THPD:
                return OWNERSHIP_STOP_RESTORE;
        case OWNER_WRITER:
                return OWNERSHIP_STOP_LEAVE;
        default:
                return OWNERSHIP_STOP_NOTHING;
        }
}

bool ownership_keep_records(const Ownership *o, size_t n_pools) {
        FOREACH_KNOB(k)
                if (o->knobs[k] == OWNER_WRITER)
                        return true;
        for (size_t i = 0; i < n_pools && i < RESOLVE_MAX_POOLS; i++)
                if (o->pools[i] == OWNER_WRITER)
                        return true;
        return false;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gitem.c - see coord_gitem.h.
 */
#include "coord_gitem.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "coord_state.h"
#include "coord_policy.h"
#include "log.h"

coord_gitem *coord_gitem_of(coord_item *it)
{
    if (it->g == NULL) {
        it->g = esc_xcalloc(1, sizeof *it->g);
        it->g->intent_peer = -1;
        it->g->intent_why = "auto";
    }
    return it->g;
}

void coord_gitem_free_all(coord_cat *cat)
{
    for (size_t i = 0; i < cat->nitems; i++) {
        if (cat->items[i]->g != NULL) {
            free(cat->items[i]->g->intent_req);
        }
        free(cat->items[i]->g);
        cat->items[i]->g = NULL;
    }
}

int64_t coord_gitem_remaining(coord *c, coord_item *it)
{
    static coord_pseg segs[ESC_SEGMENTS_PER_ITEM_MAX];
    coord_pitem in;
    coord_cat_snapshot(&c->cat, it, c->cfg.collapse_pct, c->cfg.low_water_pct, esc_mono_us(), segs,
                       &in);
    return coord_policy_remaining(&in);
}

void coord_gitem_view(coord *c, const region_cfg *cfg, size_t npeers, coord_item *it,
                      wire_quota_item *out)
{
    static coord_pseg segs[ESC_SEGMENTS_PER_ITEM_MAX];
    coord_pitem in;
    coord_cat_snapshot(&c->cat, it, c->cfg.collapse_pct, c->cfg.low_water_pct, esc_mono_us(), segs,
                       &in);
    memset(out, 0, sizeof *out);
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", it->tenant_id);
    snprintf(out->item_id, sizeof out->item_id, "%s", it->item_id);
    double demand = 0;
    for (size_t i = 0; i < in.nsegs; i++) {
        demand += segs[i].demand;
    }
    int64_t unused = coord_policy_remaining(&in) - it->reduce_pending;
    out->quota = it->total;
    out->unused = unused > 0 ? unused : 0;
    out->demand_milli = (int64_t)(demand * 1000.0);
    out->floor = region_cfg_floor(cfg, it->tenant_id, it->item_id);
    out->share = cfg->share;
    coord_gitem *g = coord_gitem_of(it);
    for (size_t i = 0; i < npeers; i++) {
        out->in_flight += g->in_flight_to[i];
    }
    for (size_t i = 0; i < it->nsegs; i++) {
        const coord_seg *s = it->segs[i];
        bool rep = s->reported && s->rep_epoch == s->epoch;
        out->held += rep ? s->held : s->db_held;
        out->sold += rep ? s->sold : s->db_sold;
    }
    out->reduce_pending = it->reduce_pending;
    out->changes = g->own_changes;
    out->change_sum = g->own_delta;
    out->known = it->state != COORD_ITEM_RETIRED;
}

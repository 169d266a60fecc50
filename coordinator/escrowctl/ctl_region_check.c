/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_check.c - see ctl_region_check.h.
 */
#include "ctl_region_check.h"

#include <inttypes.h>
#include <string.h>

#include "ctl_json.h"
#include "ctl_region_show.h"
#include "ctl_region_view.h"
#include "escrow_errors.h"

/* region_self must name the file's region once the region holds anything. */
static void check_self(const ctl_region_set *set, ctl_region_view *v)
{
    for (size_t r = 0; r < set->n; r++) {
        const ctl_region *g = &set->r[r];
        if (strcmp(g->self, g->cfg.name) == 0) {
            continue;
        }
        if (g->self[0] != '\0') {
            ctl_region_view_note(v, true,
                                 "region %s: its database belongs to region '%s' (region_self)",
                                 g->cfg.name, g->self);
        }
    }
}

static void print_check_json(const ctl_region_set *set, const ctl_region_view *v,
                             const char *verdict, FILE *out)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_str(&j, "global", verdict);
    ctl_json_begin_arr(&j, "regions");
    for (size_t r = 0; r < set->n; r++) {
        const ctl_region_view_region *vr = &v->reg[r];
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "region", set->r[r].cfg.name);
        ctl_json_str(&j, "region_self", set->r[r].self);
        ctl_json_str(&j, "conservation",
                     vr->local_items_violated + vr->local_segments_violated == 0 ? "ok"
                                                                                 : "VIOLATED");
        ctl_json_i64(&j, "items_violated", vr->local_items_violated);
        ctl_json_i64(&j, "segments_violated", vr->local_segments_violated);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "items");
    for (size_t i = 0; i < v->nitems; i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", v->items[i].tenant);
        ctl_json_str(&j, "item", v->items[i].item);
        ctl_region_show_totals(&j, &v->items[i]);
        ctl_json_bool(&j, "ok", v->items[i].ok);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "notes");
    for (size_t i = 0; i < v->nnotes; i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "kind", v->notes[i].violation ? "violation" : "cannot_judge");
        ctl_json_str(&j, "message", v->notes[i].text);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static void print_check(const ctl_region_set *set, const ctl_region_view *v, const char *verdict,
                        FILE *out)
{
    int64_t sent = 0, received = 0, refused = 0, applied = 0;
    fprintf(out, "== global\n");
    for (size_t i = 0; i < v->nnotes; i++) {
        fprintf(out, "%s %s\n", v->notes[i].violation ? "VIOLATION" : "CANNOT JUDGE",
                v->notes[i].text);
    }
    if ((size_t)(v->violations + v->cannot_judge) > v->nnotes) {
        fprintf(out, "(only the first %d are shown)\n", CTL_VIEW_NOTES_MAX);
    }
    for (size_t r = 0; r < set->n; r++) {
        sent += v->reg[r].xfers_sent;
        received += v->reg[r].xfers_received;
        refused += v->reg[r].xfers_refused;
        applied += v->reg[r].receipts_applied;
    }
    ctl_region_show_table(v, out);
    fprintf(out,
            "checked %zu regions, %zu global items, quota transfers: %" PRId64 " sent, %" PRId64
            " received, %" PRId64 " refused; %" PRId64 " receipts applied\n",
            set->n, v->nitems, sent, received, refused, applied);
    fprintf(out, "global=%s\n", verdict);
}

int ctl_region_check(ctl_region_set *set, const ctl_args *a, FILE *out, bool *violated)
{
    for (size_t r = 0; r < set->n; r++) {
        int rc = ctl_region_set_open(&set->r[r]);
        if (rc != 0) {
            fprintf(stderr, "escrowctl: cannot judge: region %s cannot be read\n",
                    set->r[r].cfg.name);
            return ESC_EUNAVAILABLE;
        }
    }
    ctl_region_view v;
    int rc =
        ctl_region_view_read(set, a, CTL_VIEW_MATCH | CTL_VIEW_CHECK, a->json ? NULL : out, &v);
    if (rc != 0) {
        return rc;
    }
    check_self(set, &v);
    bool local_bad = false;
    for (size_t r = 0; r < set->n; r++) {
        local_bad =
            local_bad || v.reg[r].local_items_violated > 0 || v.reg[r].local_segments_violated > 0;
    }
    const char *verdict = v.violations > 0 || local_bad ? "VIOLATED"
                          : v.cannot_judge > 0          ? "CANNOT-JUDGE"
                                                        : "ok";
    if (a->json) {
        print_check_json(set, &v, verdict, out);
    } else {
        print_check(set, &v, verdict, out);
    }
    *violated = v.violations > 0 || local_bad;
    rc = !*violated && v.cannot_judge > 0 ? ESC_EUNAVAILABLE : 0;
    ctl_region_view_free(&v);
    return rc;
}

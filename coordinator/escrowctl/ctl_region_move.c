/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_move.c - see ctl_region_move.h.
 */
#include "ctl_region_move.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_json.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "wire.h"

static void print_move(const ctl_args *a, const char *url, const wire_reply *rep, FILE *out)
{
    const char *msg = ctl_rpc_message(rep);
    const wire_quota_item *q = rep->nquota > 0 ? &rep->quota[0] : NULL;
    if (a->json) {
        ctl_json j;
        ctl_rpc_json_begin(&j, out, rep);
        ctl_json_str(&j, "region", rep->region);
        if (q != NULL) {
            ctl_json_begin_obj(&j, "donor");
            ctl_json_i64(&j, "quota", q->quota);
            ctl_json_i64(&j, "unused", q->unused);
            ctl_json_i64(&j, "in_flight", q->in_flight);
            ctl_json_i64(&j, "floor", q->floor);
            ctl_json_end_obj(&j);
        }
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    }
    if (rep->status != 0) {
        fprintf(stderr, "escrowctl: the coordinator of region %s at %s refused: %s (%s)\n",
                a->from_region, url, msg, esc_err_name(rep->status));
    } else if (!a->json) {
        fprintf(out, "%s\n", msg);
    }
    if (!a->json && q != NULL) {
        fprintf(rep->status != 0 ? stderr : out,
                "region %s now: quota=%" PRId64 " unused=%" PRId64 " in_flight=%" PRId64
                " floor=%" PRId64 "\n",
                a->from_region, q->quota, q->unused, q->in_flight, q->floor);
    }
}

int ctl_region_move(ctl_region_set *set, const ctl_args *a, FILE *out, bool *refused)
{
    int d = ctl_region_set_find(set, a->from_region);
    if (d < 0) {
        fprintf(stderr, "escrowctl: --from %s: no --config describes that region\n",
                a->from_region);
        return ESC_EINVAL;
    }
    const region_cfg *c = &set->r[d].cfg;
    if (region_cfg_peer(c, a->to_region) == NULL) {
        fprintf(stderr, "escrowctl: --to %s: region %s has no such peer (%s [peers])\n",
                a->to_region, c->name, c->path);
        return ESC_EINVAL;
    }
    /* --coordinator stands for the region's endpoint when there is one region */
    const char *url = set->n == 1 && a->coordinator_given ? a->coordinator : c->coordinator;
    wire_quota *q = calloc(1, sizeof *q);
    if (q == NULL) {
        return ESC_ENOMEM;
    }
    q->kind = WIRE_QUOTA_MOVE;
    snprintf(q->to_region, sizeof q->to_region, "%s", a->to_region);
    wire_reply rep = {0};
    wire_quota_item item;
    bool sent = false;
    int rc = ctl_rpc_quota(url, a->tenant, q, a->item, a->qty, a->timeout_ms, &rep, &item, &sent);
    free(q);
    if (rc == ESC_ETIMEDOUT) {
        char who[CTL_REGION_LEN_MAX + 32];
        snprintf(who, sizeof who, "the coordinator of region %s", c->name);
        ctl_rpc_no_answer(who, url, a->timeout_ms, sent, true);
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot reach the coordinator of region %s at %s: %s\n", c->name,
                url, esc_strerror(rc));
        return rc;
    }
    print_move(a, url, &rep, out);
    if (rep.status != 0) {
        *refused = true;
        return rep.status;
    }
    return 0;
}

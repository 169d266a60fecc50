/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_request.c - libFuzzer target: any bytes into wire_decode_request, the
 * decoder and validator of every request a server accepts (reserve, confirm,
 * release, extend, get, stats, route, the node's heartbeat, escrowctl's
 * admin operations and the coordinators' quota messages). A frame that decodes must re-encode into a frame that
 * decodes to the same request: validation and encoding agree.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "wire.h"

static unsigned char out[ESC_FRAME_BYTES_MAX];

static void same(int cond)
{
    if (!cond) {
        abort(); /* libFuzzer reports the input */
    }
}

static void check_roundtrip(const wire_request *q)
{
    size_t n = 0;
    wire_request again;
    char why[WIRE_WHY_MAX];
    int rc;
    if (q->op == WIRE_OP_HEARTBEAT) {
        wire_heartbeat *hb = malloc(sizeof *hb);
        same(hb != NULL);
        memcpy(hb, q->hb, sizeof *hb); /* the decoder's storage is reused below */
        rc = wire_encode_heartbeat(q->corr_id, hb, out, sizeof out, &n);
        if (rc == 0) {
            same(wire_decode_request(out, n, &again, why) == 0);
            same(again.op == WIRE_OP_HEARTBEAT && again.hb->nsegs == hb->nsegs &&
                 again.hb->nxfers == hb->nxfers && again.hb->ndry == hb->ndry &&
                 again.hb->incarnation == hb->incarnation &&
                 strcmp(again.hb->node_id, hb->node_id) == 0);
        }
        free(hb);
        return;
    }
    if (q->op == WIRE_OP_ADMIN) {
        rc = wire_encode_admin(q->corr_id, q->tenant_id, q->admin_op, q->item_id, q->node_id,
                               q->qty, q->nsegments, out, sizeof out, &n);
        same(rc == 0);
        same(wire_decode_request(out, n, &again, why) == 0);
        same(again.admin_op == q->admin_op && again.qty == q->qty &&
             again.nsegments == q->nsegments && strcmp(again.item_id, q->item_id) == 0 &&
             strcmp(again.node_id, q->node_id) == 0);
        return;
    }
    if (q->op == WIRE_OP_QUOTA) {
        wire_quota *qq = malloc(sizeof *qq);
        same(qq != NULL);
        memcpy(qq, q->quota, sizeof *qq); /* the decoder's storage is reused below */
        rc = wire_encode_quota(q->corr_id, q->tenant_id, qq, q->item_id, q->qty, out, sizeof out,
                               &n);
        same(rc == 0);
        same(wire_decode_request(out, n, &again, why) == 0);
        same(again.op == WIRE_OP_QUOTA && again.quota->kind == qq->kind &&
             again.quota->nitems == qq->nitems && again.quota->transfer_id == qq->transfer_id &&
             again.qty == q->qty && strcmp(again.quota->from_region, qq->from_region) == 0 &&
             strcmp(again.quota->to_region, qq->to_region) == 0 &&
             (qq->nitems == 0 || again.quota->items[0].unused == qq->items[0].unused));
        free(qq);
        return;
    }
    rc = wire_encode_request(q, out, sizeof out, &n);
    same(rc == 0);
    same(wire_decode_request(out, n, &again, why) == 0);
    same(again.op == q->op && again.corr_id == q->corr_id && again.qty == q->qty &&
         again.hold_id == q->hold_id && again.segment_id == q->segment_id &&
         again.ttl_ms == q->ttl_ms && again.by_operator == q->by_operator &&
         strcmp(again.tenant_id, q->tenant_id) == 0 && strcmp(again.item_id, q->item_id) == 0 &&
         strcmp(again.buyer_id, q->buyer_id) == 0 && strcmp(again.key, q->key) == 0);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wire_request q;
    char why[WIRE_WHY_MAX];
    int rc = wire_decode_request(data, size, &q, why);
    if (rc == 0) {
        check_roundtrip(&q);
    } else {
        same(rc == ESC_EPROTO || rc == ESC_EINVAL || rc == ESC_ETOOBIG || rc == ESC_ENOMEM);
        same(why[0] != '\0'); /* every refusal says why */
    }
    return 0;
}

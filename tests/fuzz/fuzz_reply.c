/* SPDX-License-Identifier: Apache-2.0 */
/*
 * fuzz_reply.c - libFuzzer target: any bytes into the decoders a client and a
 * node trust least: wire_decode_reply (with its route and heartbeat-reply
 * parts) and wire_decode_route_pub (what arrives on the routes socket). A
 * reply (quota items included) that decodes must re-encode and decode to the same figures.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "wire.h"

static unsigned char out[2 * ESC_FRAME_BYTES_MAX];
static wire_seg_stats segs[ESC_STATS_SEGMENTS_MAX];
static wire_route route, route2;
static wire_hb_reply hb, hb2;
static wire_quota_item quota[ESC_QUOTA_ITEMS_MAX], quota2[ESC_QUOTA_ITEMS_MAX];

static void same(int cond)
{
    if (!cond) {
        abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.segs = segs;
    rep.segs_cap = ESC_STATS_SEGMENTS_MAX;
    rep.route = &route;
    rep.hb = &hb;
    rep.quota = quota;
    rep.quota_cap = ESC_QUOTA_ITEMS_MAX;
    size_t n = 0;
    if (wire_decode_reply(data, size, &rep) == 0) {
        wire_reply enc = rep;
        enc.route = rep.has_route ? &route : NULL;
        enc.hb = rep.has_hb ? &hb : NULL;
        int rc = wire_encode_reply(&enc, out, sizeof out, &n);
        same(rc == 0 || rc == ESC_ETOOBIG);
        if (rc == 0) {
            wire_reply again;
            memset(&again, 0, sizeof again);
            again.route = &route2;
            again.hb = &hb2;
            again.quota = quota2;
            again.quota_cap = ESC_QUOTA_ITEMS_MAX;
            same(wire_decode_reply(out, n, &again) == 0);
            same(again.nquota == rep.nquota && strcmp(again.region, rep.region) == 0);
            same(rep.nquota == 0 || quota2[0].unused == quota[0].unused);
            same(again.status == rep.status && again.corr_id == rep.corr_id &&
                 again.has_route == rep.has_route && again.has_hb == rep.has_hb);
            same(!rep.has_route ||
                 (route2.nsegs == route.nsegs && route2.version == route.version));
            same(!rep.has_hb || (hb2.nsegs == hb.nsegs && hb2.nxfers == hb.nxfers));
        }
    }
    if (wire_decode_route_pub(data, size, &route) == 0) {
        same(wire_encode_route_pub(&route, out, sizeof out, &n) == 0);
        same(wire_decode_route_pub(out, n, &route2) == 0);
        same(route2.nsegs == route.nsegs && route2.version == route.version &&
             route2.tail_segment == route.tail_segment && route2.sold_out == route.sold_out &&
             strcmp(route2.item_id, route.item_id) == 0);
    }
    return 0;
}

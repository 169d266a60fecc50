/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_route.c - an item's routing table on the wire (see wire.h): the
 * Route message a coordinator answers a RouteReq with (inside a Reply,
 * wire_reply.c) and publishes on its PUB socket as "tenant_id NUL Route",
 * so that a subscriber's topic filter is the tenant.
 */
#include "wire_route.h"

#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "wire_field.h"

int wire_route_to_pb(const wire_route *r, wire_route_pb *pb)
{
    escrow__route__init(&pb->msg);
    pb->segs = calloc(r->nsegs + 1, sizeof *pb->segs);
    pb->ptrs = calloc(r->nsegs + 1, sizeof *pb->ptrs);
    if (pb->segs == NULL || pb->ptrs == NULL) {
        return ESC_ENOMEM;
    }
    pb->msg.tenant_id = (char *)r->tenant_id;
    pb->msg.item_id = (char *)r->item_id;
    pb->msg.version = r->version;
    pb->msg.sold_out = r->sold_out;
    pb->msg.paused = r->paused;
    pb->msg.tail_segment = r->tail_segment;
    for (size_t i = 0; i < r->nsegs; i++) {
        Escrow__RouteSegment *g = &pb->segs[i];
        escrow__route_segment__init(g);
        g->segment_id = r->segs[i].segment_id;
        g->epoch = r->segs[i].epoch;
        g->endpoint = (char *)r->segs[i].endpoint;
        g->state = r->segs[i].state;
        pb->ptrs[i] = g;
    }
    pb->msg.n_segments = r->nsegs;
    pb->msg.segments = pb->ptrs;
    return 0;
}

void wire_route_pb_free(wire_route_pb *pb)
{
    free(pb->segs);
    free(pb->ptrs);
    pb->segs = NULL;
    pb->ptrs = NULL;
}

int wire_route_from_pb(const Escrow__Route *pb, wire_route *out)
{
    memset(out, 0, offsetof(wire_route, segs));
    if (!wire_id_valid(pb->tenant_id, ESC_TENANT_LEN_MAX) ||
        !wire_id_valid(pb->item_id, ESC_ITEM_LEN_MAX) || pb->n_segments > ESC_ROUTE_SEGMENTS_MAX ||
        (pb->tail_segment != 0 && !wire_segment_id_valid(pb->tail_segment))) {
        return ESC_EPROTO;
    }
    wire_copy_str(out->tenant_id, ESC_TENANT_LEN_MAX, pb->tenant_id);
    wire_copy_str(out->item_id, ESC_ITEM_LEN_MAX, pb->item_id);
    out->version = pb->version;
    out->sold_out = pb->sold_out;
    out->paused = pb->paused;
    out->tail_segment = pb->tail_segment;
    for (size_t i = 0; i < pb->n_segments; i++) {
        const Escrow__RouteSegment *g = pb->segments[i];
        const char *ep = g->endpoint != NULL ? g->endpoint : "";
        if (!wire_segment_id_valid(g->segment_id) || g->state > WIRE_SEG_RETIRED ||
            (ep[0] != '\0' && !wire_endpoint_valid(ep))) {
            return ESC_EPROTO;
        }
        out->segs[i].segment_id = g->segment_id;
        out->segs[i].epoch = g->epoch;
        out->segs[i].state = g->state;
        wire_copy_str(out->segs[i].endpoint, ESC_ENDPOINT_LEN_MAX, ep);
    }
    out->nsegs = pb->n_segments;
    return 0;
}

int wire_encode_route_pub(const wire_route *r, void *buf, size_t cap, size_t *len)
{
    if (r->nsegs > ESC_ROUTE_SEGMENTS_MAX || !wire_id_valid(r->tenant_id, ESC_TENANT_LEN_MAX)) {
        return ESC_EINVAL;
    }
    wire_route_pb pb;
    int rc = wire_route_to_pb(r, &pb);
    if (rc == 0) {
        size_t tlen = strlen(r->tenant_id) + 1;
        size_t n = escrow__route__get_packed_size(&pb.msg);
        if (tlen + n > cap || tlen + n > ESC_FRAME_BYTES_MAX) {
            rc = ESC_ETOOBIG;
        } else {
            memcpy(buf, r->tenant_id, tlen);
            *len = tlen + escrow__route__pack(&pb.msg, (uint8_t *)buf + tlen);
        }
    }
    wire_route_pb_free(&pb);
    return rc;
}

int wire_decode_route_pub(const void *buf, size_t len, wire_route *out)
{
    const unsigned char *p = buf;
    const unsigned char *nul =
        len > 0 ? memchr(p, '\0', len < ESC_TENANT_LEN_MAX + 1 ? len : ESC_TENANT_LEN_MAX + 1)
                : NULL;
    if (len > ESC_FRAME_BYTES_MAX || nul == NULL) {
        return ESC_EPROTO;
    }
    size_t tlen = (size_t)(nul - p) + 1;
    Escrow__Route *pb = escrow__route__unpack(NULL, len - tlen, p + tlen);
    if (pb == NULL) {
        return ESC_EPROTO;
    }
    int rc = wire_route_from_pb(pb, out);
    if (rc == 0 && strcmp(out->tenant_id, (const char *)p) != 0) {
        rc = ESC_EPROTO; /* the topic must name the route's own tenant */
    }
    escrow__route__free_unpacked(pb, NULL);
    return rc;
}

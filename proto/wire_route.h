/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_route.h - proto/'s Route <-> protobuf-c conversions, for the Reply
 * that carries a route (wire_reply.c); not for use outside proto/, whose
 * contract is wire.h (wire_encode_route_pub, wire_decode_route_pub).
 */
#ifndef ESC_WIRE_ROUTE_H
#define ESC_WIRE_ROUTE_H

#include "escrow.pb-c.h"
#include "wire.h"

/* A Route with the segment arrays it points into (owned; free with
 * wire_route_pb_free). Strings are borrowed from the wire_route. */
typedef struct wire_route_pb {
    Escrow__Route msg;
    Escrow__RouteSegment *segs, **ptrs;
} wire_route_pb;

/* Fills pb from r, whose nsegs the caller has bounded. Returns 0 or
 * ESC_ENOMEM; call wire_route_pb_free in both cases. */
int wire_route_to_pb(const wire_route *r, wire_route_pb *pb);
void wire_route_pb_free(wire_route_pb *pb);

/* Validates a received Route into out: ESC_EPROTO when it breaks a bound. */
int wire_route_from_pb(const Escrow__Route *pb, wire_route *out);

#endif

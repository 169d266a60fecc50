/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_cluster.h - proto/'s conversions of the cluster's own messages, for
 * wire_request.c and wire_reply.c; not for use outside proto/, whose
 * contract is wire.h. "From pb" functions validate like every decoder (0 or
 * ESC_E* with a sentence in why); "to pb" functions borrow the strings of
 * the domain struct they read.
 */
#ifndef ESC_WIRE_CLUSTER_H
#define ESC_WIRE_CLUSTER_H

#include <stddef.h>

#include "escrow.pb-c.h"
#include "wire.h"

/* A node's heartbeat into hb (borrowed, overwritten). */
int wire_heartbeat_from_pb(const Escrow__HeartbeatReq *h, wire_heartbeat *hb, char *why);
/* An AdminReq into out's admin_op, node_id, item_id, qty, nsegments. */
int wire_admin_from_pb(const Escrow__AdminReq *a, wire_request *out, char *why);
/* A QuotaReq into q (borrowed, overwritten) and out's item_id and qty. */
int wire_quota_from_pb(const Escrow__QuotaReq *r, wire_quota *q, wire_request *out, char *why);

/* One QuotaItem, in a QuotaReq or in a reply, into q. */
int wire_quota_item_from_pb(const Escrow__QuotaItem *e, wire_quota_item *q, char *why);
/* n QuotaItems from items: *arr and *ptrs are allocated, the caller frees
 * both (also on failure). Returns 0 or ESC_ENOMEM. */
int wire_quota_items_to_pb(const wire_quota_item *items, size_t n, Escrow__QuotaItem **arr,
                           Escrow__QuotaItem ***ptrs);

/* One segment's figures as a SegmentStats (in a heartbeat, in a stats reply). */
void wire_stats_to_pb(const wire_seg_stats *w, Escrow__SegmentStats *pb);

/* A heartbeat reply's part of a Reply, with the arrays it points into
 * (owned; wire_hb_reply_pb_free frees them). */
typedef struct wire_hb_reply_pb {
    Escrow__HeartbeatReply msg;
    Escrow__Assignment *as, **asp;
    Escrow__TransferCmd *xc, **xcp;
} wire_hb_reply_pb;

/* Fills pb from w. Returns 0, ESC_ETOOBIG (more entries than the limits) or
 * ESC_ENOMEM; call wire_hb_reply_pb_free in every case. */
int wire_hb_reply_to_pb(const wire_hb_reply *w, wire_hb_reply_pb *pb);
void wire_hb_reply_pb_free(wire_hb_reply_pb *pb);
/* A received heartbeat reply into out; ESC_EPROTO when it breaks a bound. */
int wire_hb_reply_from_pb(const Escrow__HeartbeatReply *pb, wire_hb_reply *out);

#endif

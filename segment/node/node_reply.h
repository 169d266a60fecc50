/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_reply.h - every answer the node sends on its REP socket: a hold, a
 * status (with a sentence when a decision has a more specific one), a
 * hold read from the database, or a tenant's segment stats. Each answer
 * is counted once, in the stats the node logs at stop and in its metrics.
 * A failed send is not retried: the client resends with the same key and
 * gets the same answer.
 */
#ifndef ESC_NODE_REPLY_H
#define ESC_NODE_REPLY_H

#include "node.h"

/* Sends one reply frame: status, hold (borrowed, may be NULL), message
 * (NULL: esc_strerror(status)). Counts nothing: the caller does. */
void node_reply_send(node *n, const nnx_hdr *hdr, uint64_t corr_id, int status,
                     const wire_hold *hold, const char *message);
/* Answers req with status and h (borrowed, may be NULL), counted. */
void node_reply_answer(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                       const seg_hold *h);
/* node_reply_answer with Reply.replay set to replay (a reserve answered
 * with the hold its key already had: seg_result.replay). */
void node_reply_decided(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                        const seg_hold *h, bool replay);
/* Answers req with status and message (static), counted. */
void node_reply_refuse(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                       const char *message);
/* Answers r with a hold as the database holds it (a lookup or a duplicate
 * reserve's verdict); counted in the metrics only. replay: a reserve
 * answered with the key's hold (the database does not say which call made
 * it, so such an answer is always a replay). */
void node_reply_row(node *n, const node_req *r, int status, const wire_hold *w, bool replay);
/* Answers every request of list with status and frees it (list transferred). */
void node_reply_all(node *n, node_req *list, int status);
/* One segment as a stats reply and a heartbeat carry it (held includes
 * returning; a fenced segment's state is 3). */
void node_reply_seg_stats(const seg_segment *s, wire_seg_stats *w);
/* Only its figures (the numbers: what hb_sync_stats_hash reads), not the
 * item's and tenant's names: a heartbeat's check of every segment. */
void node_reply_seg_figures(const seg_segment *s, wire_seg_stats *w);
/* Answers a stats request from memory: the tenant's segments served here. */
void node_reply_stats(node *n, const nnx_hdr *hdr, const wire_request *req);

#endif

/*
 * node_internal.h - what node.c and node_batch.c share. Not a public
 * contract: only the node's own files include it.
 */
#ifndef ESC_NODE_INTERNAL_H
#define ESC_NODE_INTERNAL_H

#include "node.h"

/* A request that waits: for a commit, a settled hold, or a database lookup. */
struct node_req {
    node_req *next; /* waiters list / lookup queue */
    nnx_hdr hdr;
    wire_request req;
    int status;   /* answer after commit */
    int attempts; /* failed batches it went through */
};

/* Requests decided again after failed batches before they get ESC_EUNAVAILABLE. */
#define NODE_REQ_ATTEMPTS_MAX 3

node_req *node_req_new(node *n, const nnx_hdr *hdr, const wire_request *req);
void node_req_free(node *n, node_req *r);
void node_dispatch(node *n, const nnx_hdr *hdr, const wire_request *q, node_req *r);
void node_wake(node *n, void *waiters);
void node_answer(node *n, const nnx_hdr *hdr, const wire_request *req, int status,
                 const seg_hold *h);
void node_send(node *n, const nnx_hdr *hdr, uint64_t corr_id, int status, const wire_hold *hold,
               const char *message);
void node_hold_to_wire(const seg_hold *h, wire_hold *w);
void node_reading(node *n, bool on);
void node_maybe_finish_stop(node *n);

/* node_batch.c */
void node_batch_init(node *n);
void node_batch_fini(node *n);
void node_batch_add(node *n, const seg_op *op);
bool node_batch_full(const node *n);
void node_batch_kick(node *n);
void node_batch_sweep(node *n, int64_t now_ms);
void node_lookup_enqueue(node *n, node_req *r);
void node_query_next(node *n);
int node_db_open(node *n);
void node_db_close(node *n);
/* Stops serving s now: the filling batch's ops on it are undone, every
 * request waiting on it is answered status (ESC_EFENCED when a newer owner
 * refused us, ESC_ENOT_OWNER when the coordinator took it away), its holds
 * leave memory. The inflight batch must not touch it (node_batch_touches). */
void node_batch_drop_segment(node *n, seg_segment *s, int status);
bool node_batch_touches(const node *n, const seg_segment *s);

/* node_hb.c (managed mode) */
int node_hb_open(node *n);
void node_hb_close(node *n);
void node_hb_fini(node *n);
/* A segment went dry or a transfer result is ready: heartbeat soon. */
void node_hb_soon(node *n);
/* Starts the next segment load on query_conn if one is wanted; true if it did. */
bool node_hb_load_next(node *n);
/* During a stop: true once the coordinator heard "stopping" (or gave up). */
bool node_hb_stop_done(node *n);
/* Transfers being executed or reported. */
node_xfer *node_xfer_find(node *n, uint64_t transfer_id);
void node_xfer_forget(node *n, uint64_t transfer_id);
/* The batch holding op settled: committed (outcome set from the database's
 * verdict beforehand) or not. Finishes op in seg_core and records the result. */
void node_xfer_settle(node *n, const seg_op *op, bool committed);

#endif

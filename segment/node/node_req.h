/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_req.h - a request that waits: for its batch to commit, for a hold
 * to settle (parked on hold->waiters), or for a database lookup. The node
 * answers at most ESC_PENDING_MAX of them at a time (n->pending_reqs);
 * each is answered exactly once and then freed.
 */
#ifndef ESC_NODE_REQ_H
#define ESC_NODE_REQ_H

#include "node.h"

/* Requests decided again after failed batches before they get ESC_EUNAVAILABLE. */
#define NODE_REQ_ATTEMPTS_MAX 3

struct node_req {
    node_req *next; /* waiters list / lookup queue */
    nnx_hdr hdr;
    wire_request req;
    int status;   /* answer after commit; INT32_MIN once the database's verdict answered it */
    int attempts; /* failed batches it went through */
};

/* A copy of hdr and req, counted in n->pending_reqs; the daemon aborts on
 * out-of-memory. */
node_req *node_req_new(node *n, const nnx_hdr *hdr, const wire_request *req);
/* Frees r (owned) and uncounts it. */
void node_req_free(node *n, node_req *r);
/* Unlinks the first request of *list and returns it (NULL when empty). */
node_req *node_req_pop(node_req **list);

#endif

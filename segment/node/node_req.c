/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_req.c - see node_req.h.
 */
#include "node_req.h"

#include <stdlib.h>

#include "log.h"

node_req *node_req_new(node *n, const nnx_hdr *hdr, const wire_request *req)
{
    node_req *r = esc_xmalloc(sizeof *r);
    r->next = NULL;
    r->hdr = *hdr;
    r->req = *req;
    r->status = 0;
    r->attempts = 0;
    n->pending_reqs++;
    return r;
}

void node_req_free(node *n, node_req *r)
{
    n->pending_reqs--;
    free(r);
}

node_req *node_req_pop(node_req **list)
{
    node_req *r = *list;
    if (r != NULL) {
        *list = r->next;
        r->next = NULL;
    }
    return r;
}

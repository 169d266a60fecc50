/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_admit.h - fair batch admission at a segment node: while more than
 * one tenant is active, each tenant gets at most NODE_ADMIT_SLOTS decisions
 * in the filling batch; its further requests wait, undecided, in its own
 * queue and are decided when the next batch opens, round robin over the
 * waiting tenants. So one tenant's flood cannot make the group commit that
 * every tenant waits for big (slow): the batch another tenant's request
 * rides in holds at most NODE_ADMIT_SLOTS of the flood's decisions, and the
 * flood waits its turn in its own queue. A tenant alone on the node is
 * never held back (the whole batch is its).
 *
 * A waiting request holds nothing (no units, no hold): it is decided when
 * it leaves the queue, against the state of then. Tenants are hashed (a
 * per-process random seed) into NODE_ADMIT_BUCKETS buckets: two tenants in
 * one bucket share its slots. Queued requests count in the node's
 * pending_reqs, so ESC_PENDING_MAX bounds them.
 */
#ifndef ESC_NODE_ADMIT_H
#define ESC_NODE_ADMIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "nnx.h"
#include "seg_share.h"
#include "wire.h"

#define NODE_ADMIT_BUCKETS 256u
/* Decisions per tenant per batch while another tenant is active, at most
 * (the share starts there): a batch of a few hundred rows commits in a few
 * milliseconds. The share then follows the commit round trip (seg_share.h):
 * a slow commit halves it, down to SEG_SHARE_SLOTS_MIN. */
#define NODE_ADMIT_SLOTS SEG_SHARE_SLOTS_MAX
/* A tenant with a write request in this window is active. */
#define NODE_ADMIT_ACTIVE_US 200000
/* How often the number of active tenants is counted again. */
#define NODE_ADMIT_RECOUNT_US 10000

typedef struct node node;
typedef struct node_req node_req;
typedef struct node_batch node_batch;

typedef struct node_admit {
    uint64_t seed;
    uint32_t in_batch[NODE_ADMIT_BUCKETS]; /* its decisions in the filling batch */
    int64_t last_us[NODE_ADMIT_BUCKETS];   /* its last write request (monotonic) */
    node_req *head[NODE_ADMIT_BUCKETS], *tail[NODE_ADMIT_BUCKETS];
    size_t waiting;     /* requests in the queues */
    uint32_t cursor;    /* the bucket the next round starts at */
    uint32_t active;    /* buckets active at the last count */
    int64_t counted_us; /* when they were counted */
    bool draining;
    uint64_t waited;                         /* requests that waited in a queue (counter) */
    seg_share share;                         /* each tenant's slots per batch while shared */
    uint32_t committing[NODE_ADMIT_BUCKETS]; /* its ops in batches committing now */
} node_admit;

/* share: the adaptive share's settings (copied); now_us: monotonic. */
void node_admit_init(node_admit *a, uint64_t seed, const seg_share_config *share, int64_t now_us);
/* Frees the requests still waiting (a stopped node). */
void node_admit_fini(node *n);
/* A fresh request (hdr and q borrowed): true if it was queued (it is
 * decided later); false: decide it now. */
bool node_admit_defer(node *n, const nnx_hdr *hdr, const wire_request *q, int64_t now_us);
/* A decision of tenant_id went into the filling batch. */
void node_admit_counted(node *n, const char *tenant_id);
/* A batch was sent from the filling batch (or it is empty): each tenant's
 * slots are counted again from the decisions still in it (those of
 * segments another stream commits), and the waiting requests are decided,
 * round robin, up to their slots. */
void node_admit_batch_opened(node *n);
/* A batch committed after rtt_us (at now_us): the share adapts. */
void node_admit_committed(node *n, int64_t rtt_us, int64_t now_us);
/* Decides waiting requests up to their tenants' free slots. */
void node_admit_drain(node *n);
/* The ops of b went to a commit stream, or came back settled. */
void node_admit_sent(node *n, const node_batch *b);
void node_admit_settled(node *n, const node_batch *b);
/* Whether an op of tenant_id may ride the node's last idle commit stream
 * (node_commit.h): that stream is kept for the tenants with nothing
 * committing, so a tenant whose flood keeps the other streams busy cannot
 * take it from another tenant, and a tenant alone commits on one stream
 * at a time. */
bool node_admit_lane_open(node *n, const char *tenant_id);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim.h - the deterministic simulation of the segment core (escrow-sim).
 *
 * One seeded world per run: a simulated PostgreSQL (sim_store.c: the rows of
 * escrow_commit_batch, the epoch fence, last_batch, transfers), one or two
 * node shells around real seg_core instances (sim_node.c: what the node's
 * node_commit.c does: group commit, settle, reconciliation after a lost reply,
 * fencing, recovery from stored rows), and clients, a network, a
 * coordinator for transfers and a nemesis (sim_main.c). Everything is driven
 * by one splitmix64 stream, so a seed replays byte for byte. Nothing here
 * reads the wall clock or calls rand().
 *
 * Invariants are checked inline after every step (sim_check.c); the same
 * world can write a Jepsen-style history and a final state dump for the
 * separate checker (tests/sim/check_history.py).
 */
#ifndef ESC_SIM_H
#define ESC_SIM_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "seg_core.h"

#define SIM_NSEG 2 /* segments of the one simulated item: ids 1 and 2 */
/* Hold sequence numbers per claim and per commit (ESC_HOLD_SEQ_RANGE in the
 * node): fewer here, so the store's per-segment index of hold seqs stays
 * small across many claims. */
#define SIM_SEQ_RANGE 4096
#define SIM_NPROC 6       /* client processes */
#define SIM_NBUYERS 4     /* processes share buyers */
#define SIM_BATCH_ROWS 48 /* rows per batch (the node: ESC_BATCH_ROWS_MAX) */
#define SIM_SWEEP_ROWS 16 /* expiries per sweep */
#define SIM_BATCH_CAP (SIM_BATCH_ROWS + SIM_SWEEP_ROWS)
#define SIM_REQS_MAX 512      /* requests a node holds at once (pool) */
#define SIM_XFERS_MAX 256     /* transfers a node instance remembers */
#define SIM_ATTEMPTS_MAX 3    /* node: re-dispatches of a request after failed batches */
#define SIM_TIMEOUT_STEPS 14  /* client: steps before a request is given up (info) */
#define SIM_RETAIN_MS 4000    /* node retention of ended holds (and what recovery loads) */
#define SIM_HOLD_TTL_MS 1200  /* item hold TTL */
#define SIM_MSGS_MAX 4096     /* network queue */
#define SIM_KEYS_PER_PROC 64  /* keys a process remembers for retries */
#define SIM_HOLDS_PER_PROC 32 /* acknowledged holds a process remembers */
#define SIM_T0_MS 1000000000000LL

enum sim_f { F_RESERVE = 1, F_CONFIRM, F_RELEASE, F_EXTEND, F_GET, F_NF };
enum sim_mutation {
    MUT_NONE = 0,
    MUT_FENCED_COMMIT,     /* store: accepts a commit from a fenced epoch */
    MUT_DOUBLE_TRANSFER,   /* store: applies a receive again when already received */
    MUT_LOST_AS_FAILED,    /* node: "committed, reply lost" settled as failed, no reconcile */
    MUT_ACK_BEFORE_COMMIT, /* node: answers before the batch outcome */
    MUT_STALE_CLOCK,       /* node: decides confirms with a clock 300 ms behind */
    MUT_NO_UNIQUE_KEY,     /* store: no UNIQUE (tenant_id, idempotency_key) */
    MUT_COUNT
};
enum sim_fault {
    FLT_NET_DROP = 0,
    FLT_NET_DUP,
    FLT_NET_DELAY,
    FLT_NET_STALE_ROUTE,
    FLT_DB_ERROR,
    FLT_DB_DELAY,
    FLT_DB_LOST_COMMITTED,
    FLT_DB_LOST_UNCOMMITTED,
    FLT_DB_QUERY_FAIL,
    FLT_CRASH,
    FLT_TAKEOVER,
    FLT_CLOCK_JUMP,
    FLT_COUNT
};

/* ---- the simulated PostgreSQL -------------------------------------------- */

enum st_xfer_state { XS_PLANNED = 0, XS_SENT, XS_RECEIVED, XS_CANCELLED };

typedef struct st_hold {
    uint64_t hold_id;
    int seg;
    uint32_t key_no;
    int buyer;
    int64_t qty, qty_sold;
    int state; /* seg_hold_state */
    int64_t expires_at_ms;
    bool extended;
    int64_t request_hash;
    int64_t ended_at_ms;   /* store clock at the final transition, 0 while held */
    int64_t decided_at_ms; /* the node's clock when it decided the final transition */
    uint64_t epoch;        /* epoch the hold was inserted under */
    uint64_t end_epoch;    /* epoch its final transition was committed under */
    int64_t created_step;
} st_hold;

typedef struct st_segment {
    uint64_t epoch;
    int64_t available, held, sold;
    uint64_t hold_seq;
    uint64_t last_batch;
    int64_t initial;            /* units given at the start */
    int64_t alloc;              /* initial + received - sent: kept apart from the counters */
    int64_t sum_held, sum_sold; /* from the hold rows, kept apart from the counters */
    uint32_t *by_seq;           /* hold seq -> index + 1 (owned) */
    size_t by_seq_cap;
} st_segment;

typedef struct st_xfer {
    uint64_t id;
    int from, to;
    int64_t qty;
    int state;
    uint64_t sent_batch, received_batch;
    int receives; /* times a receive was applied (exactly once is the point) */
} st_xfer;

typedef struct sim_store {
    int64_t total;
    st_segment segs[SIM_NSEG + 1]; /* index by segment id */
    st_hold *holds;                /* owned */
    size_t nholds, holds_cap;
    uint32_t *by_key; /* key_no -> hold index + 1 (owned) */
    size_t by_key_cap;
    st_xfer *xfers; /* owned */
    size_t nxfers, xfers_cap;
    uint64_t commits;
} sim_store;

/* One row of a batch, as node_commit.c's build_params flattens it. */
typedef struct sb_row {
    int kind; /* seg_op_kind */
    uint64_t hold_id;
    int seg;
    uint32_t key_no;
    int buyer;
    int64_t qty, sold, returned;
    int64_t request_hash;
    int64_t expires_at_ms, new_expires_at_ms;
    int64_t decided_at_ms;
    uint64_t epoch;
    uint64_t transfer_id;
} sb_row;

typedef struct sb_seg {
    int seg;
    uint64_t epoch;
    int64_t da, dh, ds;
    uint64_t seq_limit; /* the hold id limit the row asks for (seg_delta.h) */
} sb_seg;

typedef struct sim_batch {
    uint64_t batch_id;
    size_t nrows, nsegs;
    sb_row rows[SIM_BATCH_CAP];
    sb_seg segs[SIM_NSEG];
} sim_batch;

enum sb_outcome { SB_OK = 0, SB_FENCED, SB_DIVERGED, SB_CHECK, SB_ERROR };
enum sb_verdict { SV_NONE = 0, SV_DUPLICATE, SV_STALE, SV_SENT, SV_RECEIVED, SV_CANCELLED };

typedef struct sim_commit_result {
    int outcome;
    int verdict[SIM_BATCH_CAP]; /* per row: duplicate reserve, transfer verdicts */
    int64_t xfer_qty[SIM_BATCH_CAP];
    uint32_t dup_hold[SIM_BATCH_CAP]; /* duplicate: index + 1 of the existing hold */
} sim_commit_result;

/* ---- the node shell ------------------------------------------------------ */

typedef struct sim_req {
    int next; /* index in the pool, -1 = end (parking and re-dispatch lists) */
    bool used;
    int f; /* sim_f */
    int process;
    uint64_t corr;
    uint32_t key_no;
    int buyer;
    int64_t qty;
    uint64_t hold_id;
    uint32_t ttl_ms;
    int status;
    bool answered_by_db; /* a duplicate verdict answered it */
    int attempts;
} sim_req;

typedef struct sim_xfer_mem {
    uint64_t id;
    int kind; /* SEG_OP_GIVE or SEG_OP_RECEIVE */
    bool done;
    int verdict;
    int64_t qty;
} sim_xfer_mem;

enum inflight_state { IF_NONE = 0, IF_WAIT, IF_UNKNOWN };

typedef struct sim_node {
    int id; /* instance number: a restart or a takeover makes a new one */
    seg_core core;
    seg_item *item;
    sim_req reqs[SIM_REQS_MAX];
    seg_op filling[SIM_BATCH_CAP];
    int64_t filling_at[SIM_BATCH_CAP];
    size_t nfilling;
    seg_op inflight[SIM_BATCH_CAP];
    size_t ninflight;
    sim_batch batch; /* the inflight batch as sent */
    int if_state;
    int64_t if_reply_step;
    bool if_reply_lost;
    sim_commit_result if_result;
    bool rejected[SIM_BATCH_CAP];
    uint64_t next_batch_id;
    sim_xfer_mem xfers[SIM_XFERS_MAX];
    size_t nxfers;
} sim_node;

/* ---- the world ----------------------------------------------------------- */

enum msg_kind { MSG_REQ = 1, MSG_REPLY, MSG_GIVE, MSG_RECEIVE };

typedef struct sim_reply {
    int status;
    bool has_hold;
    uint64_t hold_id;
    int seg;
    int64_t qty, qty_sold;
    int state;
    int64_t expires_at_ms;
    bool extended;
    uint64_t epoch;
    uint64_t batch; /* the batch that committed it, 0 if answered from memory */
    int node;
} sim_reply;

typedef struct sim_msg {
    int kind;
    int64_t at_step;
    uint64_t seq;  /* ties broken by send order */
    int dest;      /* node instance (requests, commands) or process (replies) */
    sim_req req;   /* MSG_REQ */
    sim_reply rep; /* MSG_REPLY (corr in req.corr) */
    uint64_t transfer_id;
    int seg;
    int64_t qty;
} sim_msg;

typedef struct sim_known {
    uint64_t hold_id;
    int64_t qty;
    int64_t expires_at_ms;
} sim_known;

typedef struct sim_client {
    bool waiting;
    sim_req op; /* the outstanding op (corr, f, params) */
    int64_t deadline_step;
    uint32_t keys[SIM_KEYS_PER_PROC];
    int64_t key_qty[SIM_KEYS_PER_PROC];
    size_t nkeys;
    sim_known holds[SIM_HOLDS_PER_PROC];
    size_t nholds;
    bool has_timed_out;
    sim_req timed_out; /* the last op given up: retried later with the same key */
} sim_client;

typedef struct sim_stats {
    uint64_t runs, steps, ops, ok, fail, info, batches, commits, faults;
    uint64_t by_f[F_NF + 1];
    uint64_t fault[FLT_COUNT];
    uint64_t transfers_done, expiries, reconciles, fences, recoveries;
    uint64_t violations;
} sim_stats;

typedef struct sim_world {
    uint64_t seed, rng;
    int64_t step, steps, now_ms;
    int mutate;
    sim_store store;
    sim_node *cur, *zombie; /* owned */
    int next_node_id;
    int64_t down_until, zombie_until;
    sim_msg *msgs; /* owned */
    size_t nmsgs;
    uint64_t msg_seq, corr_seq, xfer_seq;
    uint32_t next_key;
    sim_client clients[SIM_NPROC];
    uint64_t *key_ack; /* key_no -> acknowledged hold id (owned) */
    size_t key_ack_cap;
    uint64_t xfer_active; /* the coordinator's transfer in progress, 0 = none */
    uint64_t xfer_last;   /* the last one finished, for stale repeats */
    bool quiet;           /* draining: no new ops, no faults */
    sim_stats st;
    bool violated;
    char violation[640];
    FILE *hist; /* borrowed; NULL unless --history */
    bool trace;
} sim_world;

/* sim_main.c */
uint64_t sim_rand(sim_world *w);
uint64_t sim_below(sim_world *w, uint64_t n);
bool sim_pct(sim_world *w, unsigned per_mille);
void sim_fault(sim_world *w, int kind);
void sim_event(sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_violation(sim_world *w, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void sim_send_reply(sim_world *w, int process, uint64_t corr, const sim_reply *rep);

/* sim_store.c */
int store_init(sim_store *s, int64_t a1, int64_t a2);
void store_fini(sim_store *s);
st_hold *store_hold(sim_store *s, uint64_t hold_id);
st_hold *store_hold_by_key(sim_store *s, uint32_t key_no);
st_xfer *store_xfer(sim_store *s, uint64_t id);
int store_plan_xfer(sim_store *s, uint64_t id, int from, int to, int64_t qty);
void store_commit(sim_world *w, const sim_batch *b, sim_commit_result *out);
bool store_committed(const sim_store *s, const sim_batch *b);
void store_claim(sim_world *w, sim_node *n);
void store_dump(const sim_world *w, FILE *f);

/* sim_node.c */
sim_node *node_start(sim_world *w, int id);
void node_free(sim_node *n);
void node_deliver(sim_world *w, sim_node *n, const sim_req *in, bool direct);
void node_command(sim_world *w, sim_node *n, int kind, uint64_t transfer_id, int seg, int64_t qty);
void node_tick(sim_world *w, sim_node *n);
bool node_quiescent(const sim_node *n);

/* sim_check.c */
void check_step(sim_world *w);
void check_reply(sim_world *w, const sim_req *op, const sim_reply *rep);
void check_commit_row(sim_world *w, const sb_row *r, const st_hold *h, uint64_t store_epoch);
void check_final(sim_world *w);

#endif

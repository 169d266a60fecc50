/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_state.h - the state of libescrow's asynchronous engine: the structs
 * that async.c and the async_*.c files share, and nothing else (each file's
 * functions are declared in its own header).
 *
 * The engine is cut by job (async.c has the paragraphs on how it works):
 *   async.c          the esc_async_* API and the client's life cycle
 *   async_slot.c     calls and the in-flight table (slots, corr_ids, frames)
 *   async_timer.c    the calls on a min-heap by due time, the timer and the idle handle
 *   async_conn.c     the sockets: open, send, receive, reconnect
 *   async_answer.c   what an answer does to a call: deliver, back off,
 *                    reroute, settle a reserve's "no"
 *   async_routing.c  routing mode: route fetches and pushes, where a call goes
 *
 * Invariants (asserted where they can break, ESC_ASSERT): every call is in
 * the slot table and in the heap, or in neither; slots[corr_id & mask] and
 * heap.nodes[due.idx] name the call itself; the calls in the table are as
 * many as the heap holds (cap - nfree == heap.len); a call's callback runs exactly once,
 * after the call left both, and never inside an esc_async_* function.
 */
#ifndef ESC_CLIENT_ASYNC_STATE_H
#define ESC_CLIENT_ASYNC_STATE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "escrow.h"
#include "heap.h"
#include "nnx.h"
#include "opts.h"
#include "route.h"
#include "wire.h"

#define CLI_SLOT_BITS 16
#define CLI_SLOT_MASK ((1u << CLI_SLOT_BITS) - 1u)
#define CLI_REQUEST_ID_MASK 0x7fffffffu
/* Table size of a new client; it doubles up to ESC_CLIENT_INFLIGHT_MAX. */
#define CLI_SLOTS_INITIAL 64u
/* conns[0] plus one per endpoint slot of the route cache. */
#define CLI_CONNS_MAX (1u + CLI_NODES_MAX)
/* Route fetches in flight at once (one per item or segment looked up);
 * calls needing more wait CLI_ROUTE_REFETCH_US and try again. */
#define CLI_FETCHES_MAX 256u

enum { CALL_USER, CALL_FETCH };
enum { PH_SENT, PH_PARKED, PH_DONE };

typedef struct conn {
    esc_async *a; /* borrowed back pointer */
    int sock;
    nnx_eids eid; /* the connecting endpoints, for nnx_reconnect */
    char url[CLI_ENDPOINT_LEN_MAX + 1];
    nnx_watch watch;      /* embedded; the conn is freed after the last close_cb */
    uint32_t calls;       /* calls whose frame is out on this socket */
    int64_t last_sent_us; /* a frame nanomsg accepted */
    int64_t last_reply_us;
    int64_t last_reconnect_us;
} conn;

/* Stray segments one reserve remembers (it tries at most a few segments). */
#define CLI_STRAYS_MAX 8

typedef struct call call;
struct call {
    uint64_t corr_id;
    int64_t deadline_us; /* monotonic */
    heap_node due;       /* in esc_async.heap; key: next resend, routing step or the deadline */
    uint32_t backoffs;   /* ESC_EBUSY / ESC_EUNAVAILABLE answers so far */
    uint32_t sends;      /* copies of the current frame nanomsg accepted */
    uint8_t kind;        /* CALL_USER / CALL_FETCH */
    uint8_t phase;       /* PH_* */
    wire_op op;
    int64_t qty;     /* confirm: units to sell, 0 = all */
    int last_status; /* definite answer being backed off from (or to give at the deadline), or 0 */
    esc_hold_cb cb;  /* CALL_USER */
    void *arg;       /* borrowed: the caller's */
    conn *target;    /* borrowed; where the frame is out (PH_SENT), else NULL */
    /* routing mode */
    uint64_t target_seg; /* the segment the frame is for */
    uint64_t hash;       /* reserve: cli_route_hash(tenant, item, buyer) */
    uint32_t empties;    /* reserve: SEGMENT_EMPTY answers so far */
    uint32_t answers;    /* replies to the current frame (to any of its copies) */
    /* reserve: a copy of the current frame went to an owner it then left
     * unanswered (in_doubt) */
    bool doubt;
    /* reserve: segments (0: the node, single-node mode) a frame of this call
     * went to in doubt; each is resolved before a "no" (settle) */
    uint64_t strays[CLI_STRAYS_MAX];
    uint8_t nstrays;
    bool strays_lost; /* more than CLI_STRAYS_MAX: a "no" becomes unknown */
    bool resolving;   /* the frame out is a resolve; verdict is the "no" to give */
    int verdict;
    call *fetch;         /* borrowed: the route fetch it waits for */
    call *wprev, *wnext; /* in fetch->waiters */
    call *waiters;       /* CALL_FETCH: calls waiting for it (borrowed) */
    call *fprev, *fnext; /* CALL_FETCH: in esc_async.fetches */
    wire_request *req;   /* owned; routing mode: re-encoded when the call moves */
    nnx_hdr hdr;         /* request id header, the same on every resend */
    size_t len;
    uint8_t *frame; /* owned: the encoded Request, resent unchanged */
};

struct esc_async {
    uv_loop_t *loop; /* borrowed; outlives us */
    cli_opts opts;
    conn *conns[CLI_CONNS_MAX]; /* owned */
    int sub;                    /* routes SUB socket, -1 without */
    nnx_watch sub_watch;        /* embedded */
    bool leaked;                /* sub_watch half-started: never freed */
    uv_timer_t timer;           /* embedded */
    int handles_open;           /* we are freed from the last close_cb */
    bool closing;
    bool in_api; /* inside an esc_async_* function: answers wait for the timer */
    bool timer_armed;
    /* Work due now (a call answered inside an esc_async_* function, e.g. a
     * cached SOLD_OUT) runs from this idle handle on the next loop turn, not
     * from a 0 ms timer: libuv 1.44 runs a 0 ms timer started inside a timer
     * callback again in the same pass, so a caller that reserves again from
     * its callback would spin there forever and starve every socket. */
    uv_idle_t idle;
    bool idle_inited;
    bool idle_on;
    int64_t timer_due_us;
    esc_close_cb close_cb;
    void *close_arg; /* borrowed */
    uint64_t seq;
    uint64_t attempt_seed; /* random: attempt numbers differ between clients */
    uint32_t cap;          /* entries in slots, free_slots and heap */
    call **slots;          /* owned; each non-NULL entry owned */
    uint32_t *free_slots;  /* owned; a stack of free slot indices */
    uint32_t nfree;
    heap heap; /* the calls by due time; its nodes are borrowed (the calls live in slots) */
    cli_route_cache *routes; /* owned; routing mode */
    wire_route *scratch;     /* owned; routing mode: decoding room for one route */
    call *fetches;           /* borrowed list of CALL_FETCH calls */
    uint32_t nfetches;
    esc_stats stats;
};

#endif

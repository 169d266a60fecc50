/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_inflight.h - esc_probe's in-flight loops: many libescrow calls in
 * flight at once on one libuv loop (the asynchronous API), in three shapes
 * the sub-commands need:
 *
 *   batches   submit N calls, then wait until every one has its outcome
 *             (same-key, cr-race, verify; reserve_many for the races)
 *   shots     releases fired by timers at given moments (rx-race)
 *   a pool    C slots, each running one story of calls after another until
 *             the sub-command says stop (record, fence-load)
 *
 * All three run on the shared in-flight driver (tests/tools/driver/driver.h,
 * as escrow-load, escrow-bench and the chaos client do): a batch is one
 * driver run with a lane per call, each lane submitting its call (a shot
 * first waits on its lane's timer) and ending when the call's outcome
 * arrives; a pool is a closed-loop run with a lane per slot, a job per
 * story. The sub-commands say which calls to make and judge what comes back.
 *
 * Single-threaded: everything runs on the loop's thread. Callbacks given to
 * this module run from the loop, exactly once per submitted call.
 */
#ifndef ESC_PROBE_INFLIGHT_H
#define ESC_PROBE_INFLIGHT_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "driver.h"
#include "esc_limits.h"
#include "escrow.h"
#include "probe_args.h"

typedef struct probe_call probe_call;

typedef struct probe_async {
    uv_loop_t loop; /* embedded */
    esc_async *a;   /* owned until closed */
    esc_async *a2;  /* owned until closed: a second connection (cr-race), or a */
    /* the batch: calls submitted since the last probe_async_wait, which runs
     * them; owned */
    probe_call *calls;
    uint32_t ncalls, cap;
    bool batch_ended; /* the batch's driver called its end */
} probe_async;

/* Opens the loop and the client. two: a second connection to the same node
 * (cr-race needs it; ESC_PROBE_TWO_CLIENTS=1 forces it everywhere, which is
 * how the reconnect stall after a node restart reported with crash.sh
 * reproduces). Dies on failure. */
void probe_async_open(probe_async *p, const probe_args *args, bool two);
/* Closes the clients and the loop; dies if a handle is left behind. */
void probe_async_close(probe_async *p);
/* Runs the batch (every call submitted or shot armed since the last wait),
 * all in flight at once in the order they were submitted, and turns the
 * loop until each has its outcome (uv_run(UV_RUN_DEFAULT) is no way to
 * wait: libescrow's resend timer stays armed up to resend_ms after the last
 * reply). Dies if libescrow refuses a call locally. */
void probe_async_wait(probe_async *p);

/* The outcome of one asynchronous call. */
typedef struct probe_outcome {
    bool done;
    int status;
    bool has_hold;
    esc_hold hold;
    int64_t at_wall_ms; /* when the reply arrived */
} probe_outcome;

/* Adds one reserve to the batch (the strings are copied); its outcome lands
 * in *o (borrowed until it is done). Reserves alternate between the two
 * connections, so both are up before any race that uses them. */
void probe_submit_reserve(probe_async *p, const char *item, const char *buyer, const char *key,
                          int64_t qty, uint32_t ttl_ms, uint32_t deadline_ms, probe_outcome *o);
/* Adds a confirm (of the whole hold, on the first connection) or a release
 * (on the second) to the batch; the outcome lands in *o. */
void probe_submit_hold_op(probe_async *p, bool confirm, uint64_t hold_id, uint32_t deadline_ms,
                          probe_outcome *o);
/* n reserves of args->qty with keys "<prefix>-<i>" (buyer = key), all in
 * flight at once, waited for; dies unless every one is held. Returns the
 * outcomes (owned: free). */
probe_outcome *probe_reserve_many(probe_async *p, const probe_args *args, uint32_t ttl_ms);

/* ---- shots: a release fired by a timer ----------------------------------- */

typedef struct probe_shot {
    uint64_t hold_id; /* the hold it releases */
    probe_outcome o;  /* the release's outcome */
} probe_shot;

/* The wall clock in ms, with the loop's cached time brought up to it:
 * timers count from the loop's time, so take delays from this. */
int64_t probe_async_now_ms(probe_async *p);
/* Adds to the batch a release of hold_id fired delay_ms after the batch
 * starts (on its lane's timer, even for 0); s (borrowed until its outcome is
 * done) gets the outcome. */
void probe_shot_arm(probe_async *p, probe_shot *s, uint64_t hold_id, uint32_t deadline_ms,
                    uint64_t delay_ms);

/* ---- a pool of slots running stories ------------------------------------- */

typedef struct probe_pool probe_pool;

/* One slot: the story it runs now. */
typedef struct probe_slot {
    probe_pool *pool; /* borrowed */
    uint32_t lane;    /* the driver's lane the slot is */
    uint64_t index;   /* the story's number: 0, 1, 2 ... */
    uint64_t hold_id; /* the story's hold, 0 until reserved */
    int64_t sent_ms;  /* wall clock when its call in progress was made */
    char key[ESC_ID_MAX + 1];
} probe_slot;

/* A story: a reserve of 1 unit of args->item under key "<prefix>-<index>"
 * (buyer = key, ttl args->ttl_ms), its answer counted in by_status; a
 * reserve without a hold ends the story, one with a hold goes on with
 * whatever reserved decides. more says whether another story may start
 * (asked before each); reserved (with the hold) and ended (with the reply
 * to probe_slot_confirm / probe_slot_release) end the story with
 * probe_slot_next or go on with another call. arg is passed through. */
typedef struct probe_story {
    bool (*more)(const probe_pool *pool, void *arg);
    void (*reserved)(probe_slot *s, const esc_hold *hold, void *arg);
    void (*ended)(probe_slot *s, int status, const esc_hold *hold, void *arg);
    void *arg;
} probe_story;

struct probe_pool {
    probe_async p;
    driver *d;              /* owned while it runs: a lane per slot, a job per story */
    const probe_args *args; /* borrowed */
    probe_story story;
    probe_slot *slots;      /* owned: args->concurrency */
    uint64_t next;          /* stories started so far */
    uint64_t by_status[32]; /* answers counted by -status (probe_pool_count) */
};

/* Opens the pool's client (its loop is p.loop: add timers before run). */
void probe_pool_open(probe_pool *pool, const probe_args *args, const probe_story *story);
/* Starts args->concurrency slots (a closed-loop driver run), turns the loop
 * until nothing is left to do (no story running, no timer armed), closes
 * the client, frees the slots. */
void probe_pool_run(probe_pool *pool);
/* Confirms (of the whole hold) / releases the slot's hold; story.ended gets
 * the reply. Dies if libescrow refuses the call locally. */
void probe_slot_confirm(probe_slot *s);
void probe_slot_release(probe_slot *s);
/* Ends the slot's story and starts the next one, if story.more says so. */
void probe_slot_next(probe_slot *s);
/* Counts an answer in pool->by_status. */
void probe_pool_count(probe_pool *pool, int status);
/* "STATUS <name> <count>" for every status counted (index = -status). */
void probe_print_status_counts(const uint64_t by_status[32]);

#endif

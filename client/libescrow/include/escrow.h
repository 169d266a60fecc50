/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow.h - libescrow, the client library for checkout code.
 *
 * A hold reserves qty units of an item for one checkout until it expires;
 * confirm sells it (or part of it), release gives it back, extend buys a slow
 * payer time once. Every reserve carries an idempotency key: a retry with the
 * same key gets the first answer (the same hold), never a second unit. The
 * library retries lost requests itself, within the caller's deadline, always
 * with the same key; ESC_ETIMEDOUT means "outcome unknown, retry with the same
 * key", never "nothing happened".
 *
 * Three APIs over one engine:
 *   - blocking (esc_client_*): one call, one answer; safe to use from one
 *     thread at a time per client (give each thread its own client);
 *   - asynchronous (esc_async_*): callbacks on the caller's libuv loop, for
 *     thousands of requests in flight from one thread;
 *   - threaded (esc_threaded_*): the engine on a thread of its own; blocking
 *     calls from any number of threads at once, and queued calls whose
 *     answers are collected through a file descriptor, for event loops that
 *     are not libuv (Python's asyncio, epoll, kqueue).
 *
 * Two ways to reach the stock (esc_options):
 *   - single-node mode (endpoint): every call goes to one segment node;
 *   - routing mode (coordinator, optionally routes): the library fetches each
 *     item's routing table from the coordinator (RouteReq), keeps it fresh
 *     from the coordinator's PUB socket (routes) and talks to the segment
 *     nodes directly, one socket per node.
 *
 * Routing mode, in detail:
 *   - reserve: an item whose cached route says sold out is answered
 *     ESC_ESOLD_OUT at once, with no round trip (esc_stats.sold_out_cached);
 *     a paused item ESC_EPAUSED; a collapsed item (tail segment) goes to its
 *     tail; otherwise the buyer goes to one of the item's active segments,
 *     ordered by segment id, by esc_route_slot(tenant, item, buyer, n). The
 *     request carries that segment as its hint and keeps its idempotency key
 *     wherever it goes.
 *   - ESC_ESEGMENT_EMPTY is never returned: the reserve moves on to the next
 *     segments in ring order (at most 4 segments per call, each node also
 *     asks the coordinator for a refill). When every tried segment is empty
 *     the answer is ESC_ESOLD_OUT if a fresh route (fetched at most 100 ms
 *     ago, or kept by pushes) says sold out, else ESC_ETRY_LATER (units are
 *     held, in flight between segments, or elsewhere: retry with the same
 *     key after a short wait). A route that is not fresh is fetched first.
 *   - ESC_ENOT_OWNER, ESC_EFENCED or a segment with no owner: the route is
 *     fetched again (at most once per 50 ms per item) and the call retried,
 *     same key, inside its deadline. A node that does not answer within
 *     resend_ms: the route is fetched again and the request resent to the
 *     owner of the SAME segment (a request in flight never moves to another
 *     segment: the first may have committed it).
 *   - confirm/release/extend/get go to the owner of the hold's segment
 *     (hold_id >> 40); a segment not in the cache is looked up by segment id.
 *   - carts route each line on its own; all-or-nothing as in single-node mode.
 *
 * Every function returns 0 or a negative ESC_E* code (escrow_errors.h);
 * esc_strerror() gives a sentence, esc_err_name() the code's name; every
 * code each call can answer, and what to do, is the Answers table of
 * docs/libescrow.md. The library never aborts its host and logs only
 * through the callback given in esc_options. It does not link libpq.
 *
 * Link: pkg-config --cflags --libs escrow, or CMake's find_package(escrow)
 * and the target escrow::escrow. ESC_VERSION_* (escrow_version.h) name the
 * headers' version, esc_version() the library's.
 */
#ifndef ESCROW_H
#define ESCROW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#include "escrow_errors.h"
#include "escrow_version.h"

#ifdef __cplusplus
extern "C" {
#endif

#define ESC_ID_MAX 128 /* longest item, buyer or key, in bytes */

/* The library's version, "MAJOR.MINOR.PATCH" (ESC_VERSION_STRING of the
 * headers it was built with); compare with ESC_VERSION_STRING to see which
 * headers a program was compiled against. */
ESC_EXPORT const char *esc_version(void);

typedef enum esc_hold_state {
    ESC_HOLD_UNKNOWN = 0,
    ESC_HOLD_HELD = 1,
    ESC_HOLD_CONVERTED = 2, /* sold; qty_sold units, the rest returned */
    ESC_HOLD_CANCELLED = 3, /* released by a caller */
    ESC_HOLD_EXPIRED = 4,   /* lapsed */
} esc_hold_state;

/* "held", "converted", "cancelled", "expired" or "unknown". */
ESC_EXPORT const char *esc_hold_state_name(esc_hold_state state);

typedef struct esc_hold {
    uint64_t hold_id; /* names the hold and its segment */
    uint64_t segment_id;
    char item_id[ESC_ID_MAX + 1];
    char buyer_id[ESC_ID_MAX + 1];
    int64_t qty;
    int64_t qty_sold;
    esc_hold_state state;
    int64_t expires_at_ms; /* unix time, milliseconds */
    bool extended;
    /* Reserve (and each line of a cart): the key already had this hold
     * before this call, i.e. an earlier call with the same key made it (the
     * hold is shown as it is now). False when this call made it. A node
     * that took the segment over from a failed one cannot tell which call
     * made a hold it loaded, and says true. Always false for the other
     * calls. (It sits in what was padding: the struct's size and the
     * other fields' offsets are what they were without it.) */
    bool replayed;
} esc_hold;

/* level: 0 error, 1 warn, 2 info, 3 debug ; line is valid
 * only during the call. Runs on the loop's thread. */
typedef void (*esc_log_fn)(int level, const char *line, void *arg);

/* Exactly one of endpoint and coordinator. Strings are borrowed (copied by
 * esc_client_new / esc_async_new). */
typedef struct esc_options {
    const char *
        endpoint; /* segment node, e.g. "tcp://127.0.0.1:7101" or "ipc:///run/esc.sock"; borrowed */
    /* routing mode: the coordinator's request endpoint; borrowed. A region
     * with a standby coordinator: both, comma-separated (the leader answers) */
    const char *coordinator;
    const char *routes; /* routing mode, optional: its route PUB endpoint(s), likewise; borrowed */
    const char *tenant_id; /* every request is scoped by it; borrowed */
    uint32_t deadline_ms;  /* default per-call deadline; 0 = 5000 */
    uint32_t resend_ms;    /* resend an unanswered request after this long; 0 = 500 */
    esc_log_fn log_fn;     /* optional; the library is silent without it */
    void *log_arg;
    /* optional: the tenant's key ("esk_<key id>_<secret>", from escrowctl key
     * create): it signs every request and opens the routing updates sealed
     * for it; the text itself is never sent. Needed when the daemons run with
     * --auth on (else every request is answered ESC_EAUTH). Parsed when the
     * handle is made (a text that is not a key: ESC_EINVAL); NULL or "" =
     * none. */
    const char *credential;
} esc_options;

typedef struct esc_reserve_req {
    const char *item_id;         /* borrowed */
    const char *buyer_id;        /* borrowed */
    int64_t qty;                 /* 1..10000 */
    const char *idempotency_key; /* borrowed; required, printable ASCII, <= 128 bytes */
    uint32_t ttl_ms;             /* 0 = the item's hold ttl */
} esc_reserve_req;

typedef struct esc_cart_line {
    const char *item_id; /* borrowed */
    int64_t qty;
} esc_cart_line;

/* What a client did so far (counters only grow). */
typedef struct esc_stats {
    uint64_t frames_sent;     /* request frames handed to the network, resends included */
    uint64_t sold_out_cached; /* reserves answered ESC_ESOLD_OUT from a cached route */
    uint64_t route_fetches;   /* RouteReqs sent to the coordinator (not resends) */
    uint64_t route_pushes;    /* route updates received for cached items (routes socket) */
    uint64_t retargets;       /* frames re-encoded for another try: SEGMENT_EMPTY, NOT_OWNER... */
    uint64_t resolves;        /* segments asked to resolve a key before a "no" */
} esc_stats;

/* The segment slot 0..nslots-1 that routing mode gives (tenant, item, buyer)
 * when the item has nslots active segments and is not collapsed (slot k is
 * the k-th active segment by segment id). Stable across versions and
 * machines; load generators use it to skew demand. 0 when nslots is 0. */
ESC_EXPORT uint32_t esc_route_slot(const char *tenant_id, const char *item_id, const char *buyer_id,
                                   uint32_t nslots);

/* ---- blocking API ---------------------------------------------------- */

typedef struct esc_client esc_client;

/* Creates a client (copies what opts points to). Returns 0 and sets *out, or
 * ESC_EINVAL / ESC_ENOMEM / ESC_EIO. */
ESC_EXPORT int esc_client_new(const esc_options *opts, esc_client **out);
ESC_EXPORT void esc_client_free(esc_client *c);
/* Copies the client's counters into *out. Returns 0 or ESC_EINVAL. */
ESC_EXPORT int esc_client_stats(esc_client *c, esc_stats *out);

/* Each call waits at most deadline_ms (0 = the client's default). On 0 the
 * hold is written to *out; on ESC_EIDEMPOTENCY_MISMATCH and the sold-out
 * family *out is untouched. For confirm/release/extend/get on a hold that is
 * no longer held, *out carries its final state. */
ESC_EXPORT int esc_reserve(esc_client *c, const esc_reserve_req *req, uint32_t deadline_ms,
                           esc_hold *out);
/* qty 0 sells the whole hold; 0 < qty < hold.qty sells qty and returns the rest. */
ESC_EXPORT int esc_confirm(esc_client *c, uint64_t hold_id, int64_t qty, uint32_t deadline_ms,
                           esc_hold *out);
ESC_EXPORT int esc_release(esc_client *c, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out);
ESC_EXPORT int esc_extend(esc_client *c, uint64_t hold_id, uint32_t ttl_ms, uint32_t deadline_ms,
                          esc_hold *out);
ESC_EXPORT int esc_get(esc_client *c, uint64_t hold_id, uint32_t deadline_ms, esc_hold *out);

/* All-or-nothing cart: one hold per distinct item (lines for the same item are
 * summed), keys derived from cart_key ("<cart_key>/<item_id>"). On 0,
 * holds[0..*nholds) are written (holds must have room for nlines). Else
 * *failed_line is the index of the line that decided the answer:
 *   - ESC_ETIMEDOUT / ESC_ECLOSED: that line's outcome is unknown; the holds
 *     the cart got are kept: retry with the SAME cart key (it gets them
 *     back and completes the cart), or let them lapse at their ttl;
 *   - ESC_ECART_ENDED / ESC_EEXPIRED: a hold of this cart key was already
 *     sold or released / lapsed: the other holds are released; start again
 *     with a NEW cart key;
 *   - any other line error (ESC_ESOLD_OUT, ESC_ETRY_LATER, a limit ...):
 *     the holds the cart got are released; a new attempt needs a NEW cart
 *     key. */
ESC_EXPORT int esc_reserve_cart(esc_client *c, const char *buyer_id, const esc_cart_line *lines,
                                size_t nlines, const char *cart_key, uint32_t ttl_ms,
                                uint32_t deadline_ms, esc_hold *holds, size_t *nholds,
                                size_t *failed_line);

/* ---- asynchronous API ------------------------------------------------ */

typedef struct esc_async esc_async;

/* Runs exactly once per accepted call, on the loop's thread. hold is valid
 * only during the callback (NULL when status has no hold to show). */
typedef void (*esc_hold_cb)(int status, const esc_hold *hold, void *arg);
typedef void (*esc_cart_cb)(int status, const esc_hold *holds, size_t nholds, size_t failed_line,
                            void *arg);
typedef void (*esc_close_cb)(void *arg);

/* Creates an asynchronous client on loop (borrowed; must outlive it). */
ESC_EXPORT int esc_async_new(uv_loop_t *loop, const esc_options *opts, esc_async **out);
/* Fails every pending call with ESC_ECLOSED, then frees the client and calls
 * close_cb (if any) from the loop. */
ESC_EXPORT void esc_async_close(esc_async *a, esc_close_cb close_cb, void *arg);
/* Copies the client's counters into *out. */
ESC_EXPORT void esc_async_stats(const esc_async *a, esc_stats *out);

/* Each returns 0 and calls cb exactly once later, or returns an error and
 * never calls cb. */
ESC_EXPORT int esc_async_reserve(esc_async *a, const esc_reserve_req *req, uint32_t deadline_ms,
                                 esc_hold_cb cb, void *arg);
ESC_EXPORT int esc_async_confirm(esc_async *a, uint64_t hold_id, int64_t qty, uint32_t deadline_ms,
                                 esc_hold_cb cb, void *arg);
ESC_EXPORT int esc_async_release(esc_async *a, uint64_t hold_id, uint32_t deadline_ms,
                                 esc_hold_cb cb, void *arg);
ESC_EXPORT int esc_async_extend(esc_async *a, uint64_t hold_id, uint32_t ttl_ms,
                                uint32_t deadline_ms, esc_hold_cb cb, void *arg);
ESC_EXPORT int esc_async_get(esc_async *a, uint64_t hold_id, uint32_t deadline_ms, esc_hold_cb cb,
                             void *arg);
ESC_EXPORT int esc_async_reserve_cart(esc_async *a, const char *buyer_id,
                                      const esc_cart_line *lines, size_t nlines,
                                      const char *cart_key, uint32_t ttl_ms, uint32_t deadline_ms,
                                      esc_cart_cb cb, void *arg);

/* ---- threaded API ---------------------------------------------------- */

/* A threaded client runs the engine on a libuv loop of its own, on a thread
 * of its own. Every function below may be called from any thread, by many
 * threads at once (esc_threaded_free excepted). Two ways to call:
 *   - blocking (esc_threaded_reserve, ...): as esc_reserve and friends, but
 *     any number of threads may wait on one client at once, each for its own
 *     answer, sharing the client's sockets and routes;
 *   - queued (esc_threaded_submit_*): returns at once; the answer becomes an
 *     esc_completion carrying the caller's tag, collected with
 *     esc_threaded_poll. esc_threaded_fd is readable while completions wait,
 *     so an event loop watches it and drains them in batches. No caller code
 *     ever runs on the client's thread.
 * Calls beyond the engine's in-flight maximum wait inside the client, in
 * order, until there is room. The log callback (esc_options.log_fn) runs on
 * the client's thread. */
typedef struct esc_threaded esc_threaded;

/* The answer to one queued call. */
typedef struct esc_completion {
    uint64_t tag;       /* the caller's, as given to esc_threaded_submit_* */
    int status;         /* 0 or a negative ESC_E* code */
    bool has_hold;      /* hold is set: what esc_reserve & co. write to *out */
    esc_hold hold;      /* single-hold calls */
    size_t nholds;      /* carts, status 0: holds written to the caller's array */
    size_t failed_line; /* carts, status < 0: the failing line (nlines: none in particular) */
} esc_completion;

/* Creates a client and starts its thread (copies what opts points to).
 * Returns 0 and sets *out, or ESC_EINVAL / ESC_ENOMEM / ESC_EIO. */
ESC_EXPORT int esc_threaded_new(const esc_options *opts, esc_threaded **out);
/* Fails every pending call with ESC_ECLOSED (a caller blocked in a call
 * returns it at once; queued calls not yet polled are dropped), stops the
 * thread and frees the client. No call on t may start once it began. */
ESC_EXPORT void esc_threaded_free(esc_threaded *t);
/* Copies the client's counters into *out. Returns 0, ESC_EINVAL or ESC_ECLOSED. */
ESC_EXPORT int esc_threaded_stats(esc_threaded *t, esc_stats *out);

/* Blocking calls: exactly esc_reserve ... esc_reserve_cart (same arguments,
 * same answers, same rules for *out), safe from any number of threads. */
ESC_EXPORT int esc_threaded_reserve(esc_threaded *t, const esc_reserve_req *req,
                                    uint32_t deadline_ms, esc_hold *out);
ESC_EXPORT int esc_threaded_confirm(esc_threaded *t, uint64_t hold_id, int64_t qty,
                                    uint32_t deadline_ms, esc_hold *out);
ESC_EXPORT int esc_threaded_release(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms,
                                    esc_hold *out);
ESC_EXPORT int esc_threaded_extend(esc_threaded *t, uint64_t hold_id, uint32_t ttl_ms,
                                   uint32_t deadline_ms, esc_hold *out);
ESC_EXPORT int esc_threaded_get(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms,
                                esc_hold *out);
ESC_EXPORT int esc_threaded_reserve_cart(esc_threaded *t, const char *buyer_id,
                                         const esc_cart_line *lines, size_t nlines,
                                         const char *cart_key, uint32_t ttl_ms,
                                         uint32_t deadline_ms, esc_hold *holds, size_t *nholds,
                                         size_t *failed_line);

/* Queued calls: each copies its arguments and returns 0, after which exactly
 * one completion with tag arrives (errors found later, such as an invalid
 * item id, arrive as its status); or returns ESC_EINVAL (t NULL, a cart
 * without holds), ESC_ENOMEM or ESC_ECLOSED, and no completion comes. */
ESC_EXPORT int esc_threaded_submit_reserve(esc_threaded *t, const esc_reserve_req *req,
                                           uint32_t deadline_ms, uint64_t tag);
ESC_EXPORT int esc_threaded_submit_confirm(esc_threaded *t, uint64_t hold_id, int64_t qty,
                                           uint32_t deadline_ms, uint64_t tag);
ESC_EXPORT int esc_threaded_submit_release(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms,
                                           uint64_t tag);
ESC_EXPORT int esc_threaded_submit_extend(esc_threaded *t, uint64_t hold_id, uint32_t ttl_ms,
                                          uint32_t deadline_ms, uint64_t tag);
ESC_EXPORT int esc_threaded_submit_get(esc_threaded *t, uint64_t hold_id, uint32_t deadline_ms,
                                       uint64_t tag);
/* holds: borrowed, room for nlines; the cart's holds are written there before
 * its completion is queued, so it must stay valid until that completion was
 * polled (or esc_threaded_free returned). */
ESC_EXPORT int esc_threaded_submit_reserve_cart(esc_threaded *t, const char *buyer_id,
                                                const esc_cart_line *lines, size_t nlines,
                                                const char *cart_key, uint32_t ttl_ms,
                                                uint32_t deadline_ms, esc_hold *holds,
                                                uint64_t tag);

/* A descriptor that is readable while completions wait to be polled (watch
 * it for reading; never read it yourself). Valid until esc_threaded_free. */
ESC_EXPORT int esc_threaded_fd(const esc_threaded *t);
/* Moves up to max waiting completions into out[0..n) in the order they
 * finished and returns n (0 when none waits). */
ESC_EXPORT size_t esc_threaded_poll(esc_threaded *t, esc_completion *out, size_t max);

#ifdef __cplusplus
}
#endif

#endif

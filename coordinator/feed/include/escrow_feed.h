/* SPDX-License-Identifier: Apache-2.0 */
/*
 * escrow_feed.h - the event feed: how an order system consumes escrow's outbox.
 *
 * Static library escrow_feed (links libpq; libescrow never does). A consumer
 * is a named cursor of one tenant (table feed_consumers, migration 0006),
 * optionally restricted to one item. escrowctl events --follow is built on it.
 *
 * Guarantees:
 *   * At least once: every event committed to the outbox for the tenant (and
 *     the item filter) is returned by feed_poll, to a consumer that keeps
 *     polling, at least once. Events of transactions that rolled back are
 *     never returned.
 *   * Order: events come in feed order, (txid, event_id): all events written
 *     by one transaction together and in event_id order; transactions in the
 *     order of their transaction ids. For one item this is the order its
 *     changes happened in: a change that depends on an earlier one (a hold's
 *     converted/cancelled/expired/extended after its held; transfer_received
 *     after transfer_sent; a node's next batch after the previous one) is
 *     written by a transaction that began after the earlier one committed,
 *     so it has a larger txid. event_id is unique but NOT monotonic in feed
 *     order across transactions; it is the dedup key, not the order key.
 *   * Commit-safe: an event is returned only once every transaction that
 *     might still write an earlier event has ended (txid below the oldest
 *     running transaction's id), so a cursor never moves past an event that
 *     commits later (the outbox pitfall: ids are assigned at INSERT, commits
 *     happen out of order). The price: a transaction that stays open (idle
 *     in transaction anywhere in the cluster) holds the feed back until it
 *     ends. Delivery lag is then the poll interval plus the longest running
 *     writing transaction.
 *   * The cursor is committed by the consumer (feed_commit), only forward;
 *     committing the same or an older position again changes nothing.
 *
 * How a consumer stays idempotent (at-least-once means duplicates happen):
 *   1. Process, then commit: apply a batch of events to your system first,
 *      then feed_commit the last one. Never commit before processing, or a
 *      crash in between loses those events for you.
 *   2. After a crash between the two, the events after the committed cursor
 *      (at most the batches processed but not committed) are returned again.
 *      Make applying an event twice harmless: event_id is the dedup key
 *      (unique forever within the database); keep the event_ids you applied
 *      (e.g. a UNIQUE column written in the same transaction as the effect,
 *      or the highest event_id applied per hold_id, since one hold's events
 *      come in order), and skip an event_id you already applied.
 *   3. Or store the cursor yourself in the transaction that applies the
 *      batch, when your data lives in the same database: that is
 *      exactly-once without any dedup.
 *   4. One process per consumer name. Two processes with the same name both
 *      see every event (each from where it started); the cursor stays
 *      monotonic. Use different names for independent readers.
 *
 * Thread safety: a feed is used by one thread at a time.
 */
#ifndef ESC_FEED_H
#define ESC_FEED_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "esc_limits.h"

/* Consumer names: like tenant ids, 1..64 printable ASCII bytes. */
#define FEED_CONSUMER_LEN_MAX 64
/* Events per feed_poll: the batch bounds. */
#define FEED_BATCH_MAX 10000
/* How often an idle feed_poll asks PostgreSQL again: one indexed query on an
 * idle tenant costs ~0.1 ms, so 150 ms is negligible load and adds at most
 * 150 ms of delivery latency. */
#define FEED_POLL_INTERVAL_MS_DEFAULT 150
#define FEED_POLL_INTERVAL_MS_MIN 10
#define FEED_POLL_INTERVAL_MS_MAX 10000
/* Longest feed_poll wait. */
#define FEED_TIMEOUT_MS_MAX 3600000
/* Room for one error sentence. */
#define FEED_WHY_MAX 256
/* outbox.kind and outbox.actor values are written by escrow itself; longer
 * ones are refused as a schema mismatch, never truncated. */
#define FEED_KIND_LEN_MAX 32
#define FEED_ACTOR_LEN_MAX 32
/* ISO-8601 UTC with milliseconds: 2026-12-01T05:09:21.123Z. */
#define FEED_AT_LEN_MAX 32

typedef struct feed feed;

/* Where a consumer that does not exist yet starts. An existing consumer
 * always resumes after its committed cursor and ignores this. */
typedef enum feed_start {
    FEED_START_BEGINNING = 0, /* every event still in the outbox */
    FEED_START_AFTER,         /* after the event start_after_event_id, in feed order */
} feed_start;

typedef struct feed_opts {
    const char *dsn;      /* borrowed; a libpq conninfo string or URI */
    const char *tenant;   /* borrowed; 1..ESC_TENANT_LEN_MAX */
    const char *consumer; /* borrowed; 1..FEED_CONSUMER_LEN_MAX */
    const char *item;     /* borrowed; NULL or "" = every item of the tenant */
    feed_start start;
    int64_t start_after_event_id; /* FEED_START_AFTER: an event of this tenant */
    int poll_interval_ms;         /* 0 = FEED_POLL_INTERVAL_MS_DEFAULT */
    /* borrowed, may be NULL: feed_poll stops waiting (returns 0 events) soon
     * after *stop becomes non-zero, e.g. from a signal handler */
    const volatile sig_atomic_t *stop;
} feed_opts;

/* A position in feed order. (0, 0) is before every event. */
typedef struct feed_cursor {
    uint64_t txid;
    int64_t event_id;
} feed_cursor;

/* One outbox row. Strings are NUL-terminated; "" for SQL NULL, and 0 for a
 * NULL segment_id or hold_id. */
typedef struct feed_event {
    int64_t event_id; /* the dedup key */
    uint64_t txid;    /* the writing transaction: (txid, event_id) is the feed position */
    char item[ESC_ITEM_LEN_MAX + 1];
    char kind[FEED_KIND_LEN_MAX + 1]; /* held, converted, cancelled, expired, extended,
                                         transfer_sent, transfer_received, restocked, ... */
    int64_t qty;
    int64_t segment_id;
    int64_t hold_id;
    char buyer[ESC_BUYER_LEN_MAX + 1];
    char actor[FEED_ACTOR_LEN_MAX + 1]; /* "" = the buyer or the sweeper */
    char at[FEED_AT_LEN_MAX + 1];
} feed_event;

/* Connects, creates the consumer if it does not exist (at o->start), and
 * loads its committed cursor: the first feed_poll returns the events after
 * it. o and its strings are borrowed for the call only (stop is kept).
 * Returns 0 and *out (owned by the caller: feed_close); or ESC_EINVAL (bad
 * options), ESC_EUNAVAILABLE (cannot connect), ESC_ENOT_FOUND (no event
 * start_after_event_id for this tenant, or it is not yet final), ESC_ECONFLICT
 * (the consumer exists with another item filter), ESC_EDB, ESC_ENOMEM; with a
 * sentence in why. *created tells whether the consumer was new (may be NULL). */
int feed_open(const feed_opts *o, feed **out, bool *created, char why[FEED_WHY_MAX]);

/* Events stay in the outbox (nothing deletes them). A retention job, if one
 * is ever added, must keep every row after the slowest consumer's cursor
 * (escrowctl consumers shows it), or that consumer silently misses events. */

/* Closes the connection and frees f (NULL is fine). Uncommitted progress is
 * simply not committed: the next open resumes after the committed cursor. */
void feed_close(feed *f);

/* Waits up to timeout_ms (0 = do not wait) for events after the position
 * (the last event returned by feed_poll, or the committed cursor right after
 * feed_open), and writes up to cap of them (1..FEED_BATCH_MAX) to events
 * (caller storage, cap entries) in feed order. Returns 0 with *n_out = 0 on
 * timeout or stop; 0 with *n_out >= 1 and the position moved to the last
 * one; ESC_EUNAVAILABLE when the connection is lost (the next call
 * reconnects; the position is kept), ESC_EDB, ESC_EINVAL. */
int feed_poll(feed *f, feed_event *events, int cap, int timeout_ms, int *n_out);

/* Commits the cursor through ev (borrowed; inclusive): ev must have been
 * returned by feed_poll of this feed. Only forward: a cursor at or before the committed
 * one changes nothing and returns 0 (idempotent). Returns 0, ESC_EINVAL (ev
 * is after the position: it was never returned), ESC_ENOT_FOUND (the
 * consumer was deleted), ESC_EUNAVAILABLE, ESC_EDB. */
int feed_commit(feed *f, const feed_event *ev);

/* Moves the position to just after the event event_id (of this feed's
 * tenant and item filter, and final: its transaction ended), so the next
 * feed_poll returns the events after it: how a reader that remembers the
 * last event it saw (an SSE client's Last-Event-ID) resumes there. Never
 * before the committed cursor: an older event resumes at the cursor.
 * Returns 0, ESC_ENOT_FOUND (no such event for this feed), ESC_EINVAL
 * (event_id < 1), ESC_EUNAVAILABLE or ESC_EDB (feed_why says why). */
int feed_seek(feed *f, int64_t event_id);

/* Commits consumer o->consumer's cursor through the event event_id without
 * a feed of one's own (a reader that acknowledges events it was sent by
 * another process: escrow-gateway's cursor endpoint). The consumer must
 * exist; the event must be final and of the consumer's tenant and item
 * filter (o->item and o->start are ignored: the consumer's own filter
 * applies). Only forward, as feed_commit. Connects, commits, disconnects.
 * Returns 0 (*moved: the cursor moved, false when it was there or past it
 * already; may be NULL), ESC_EINVAL, ESC_ENOT_FOUND (no such consumer, or
 * no such event for it), ESC_EUNAVAILABLE, ESC_EDB; with a sentence in why. */
int feed_commit_event(const feed_opts *o, int64_t event_id, bool *moved, char why[FEED_WHY_MAX]);

/* The committed cursor as last known by this feed, and the position. */
feed_cursor feed_committed(const feed *f);
feed_cursor feed_position(const feed *f);

/* The sentence for the last error of feed_poll / feed_commit ("" if none). */
const char *feed_why(const feed *f);

/* -1, 0 or 1 as a is before, at or after b in feed order. */
int feed_cursor_cmp(feed_cursor a, feed_cursor b);

#endif

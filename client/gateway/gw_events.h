/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_events.h - the event feed over HTTP: GET /v1/events as Server-Sent
 * Events, and POST /v1/consumers/{name}/cursor.
 *
 * A stream is a named consumer of the tenant (escrow_feed.h: at least
 * once, in feed order, so in order per item), optionally of one item. It
 * starts after the consumer's committed cursor, or after the event a
 * Last-Event-ID header (or last_event_id argument) names; a consumer that
 * does not exist yet is created with its cursor at the beginning. The
 * stream never commits: the reader commits what it processed with POST
 * /v1/consumers/{name}/cursor {event_id}, so a reader that crashes and
 * reconnects without Last-Event-ID gets everything after its last commit
 * again.
 *
 * escrow_feed is synchronous libpq, so each stream has a thread of its own
 * (at most streams_max): it polls the feed, formats frames (gw_sse.h) into
 * the stream's buffer and wakes the loop (uv_async); the loop hands the
 * bytes to libmicrohttpd, suspending the connection while the buffer is
 * empty. A full buffer (a slow reader) makes the thread wait: memory per
 * stream is bounded by GW_STREAM_BUFFER_BYTES. An idle stream sends a
 * keep-alive comment every GW_STREAM_KEEPALIVE_MS, which is also how a
 * reader that went away is noticed. Cursor commits run on libuv's thread
 * pool (feed_commit_event: one short connection each).
 */
#ifndef ESC_GW_EVENTS_H
#define ESC_GW_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "gw_http.h"

#define GW_STREAM_BUFFER_BYTES (256 * 1024)
#define GW_STREAM_KEEPALIVE_MS 15000
/* Events per feed_poll of a stream. */
#define GW_STREAM_BATCH 64

typedef struct gw_stream gw_stream;

typedef struct gw_events {
    uv_loop_t *loop;     /* borrowed */
    const char *dsn;     /* borrowed */
    gw_http *http;       /* borrowed */
    gw_metrics *metrics; /* borrowed */
    uint32_t max;
    uint32_t open;              /* streams not freed yet */
    gw_stream *list;            /* every stream not freed */
    void (*drained)(void *arg); /* gw_events_stop_all's: the last stream freed */
    void *drained_arg;
} gw_events;

void gw_events_init(gw_events *e, uv_loop_t *loop, const char *dsn, gw_http *http,
                    gw_metrics *metrics, uint32_t streams_max);

/* GET /v1/events for r (authenticated: r->who). Answers r itself. */
void gw_events_stream(gw_events *e, gw_req *r);
/* POST /v1/consumers/{name}/cursor for r. Answers r itself. */
void gw_events_cursor(gw_events *e, gw_req *r);

/* r completed: its stream (if any) lets go of it and ends. */
void gw_events_request_done(gw_events *e, gw_req *r);

/* Ends every stream; drained(arg) runs once every stream is freed (at
 * once when there is none). */
void gw_events_stop_all(gw_events *e, void (*drained)(void *arg), void *arg);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_sse.h - Server-Sent Events frames for the event feed over HTTP
 * (GET /v1/events): one feed event per frame, the event id as the SSE id
 * (what a client sends back as Last-Event-ID to resume), the event's kind
 * as the SSE event name (held, converted, cancelled, expired ...), its
 * JSON (gw_json_event) as data. Pure: no I/O.
 */
#ifndef ESC_GW_SSE_H
#define ESC_GW_SSE_H

#include <stddef.h>
#include <stdint.h>

#include "escrow_feed.h"

/* Room one frame can need: the event's JSON with every string at its
 * bound, and the SSE lines around it. */
#define GW_SSE_FRAME_MAX 2048
/* A comment line: keeps an idle stream (and proxies on the way) alive and
 * lets the gateway notice a client that went away. */
#define GW_SSE_KEEPALIVE ": keep-alive\n\n"
/* Sent first: how long a client's EventSource waits before reconnecting. */
#define GW_SSE_RETRY_MS 1000

/* Writes "id: <event_id>\nevent: <kind>\ndata: <json>\n\n" into buf.
 * Returns its length, or 0 if it did not fit in cap (or no memory). */
size_t gw_sse_frame(const feed_event *e, char *buf, size_t cap);

/* Parses a Last-Event-ID (decimal, 1..INT64_MAX, surrounding blanks
 * ignored). Returns 0 and *out, or ESC_EINVAL. */
int gw_sse_last_event_id(const char *s, int64_t *out);

#endif

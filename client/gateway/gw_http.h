/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_http.h - escrow-gateway's HTTP(S) server: libmicrohttpd driven from
 * the gateway's libuv loop, and the request each connection is working on.
 *
 * libmicrohttpd runs in its "external" epoll mode: its epoll descriptor is
 * polled by a uv_poll, its timeouts by a uv_timer, and MHD_run is called
 * from those callbacks, so every handler, every libescrow callback and
 * every answer happen on one thread, the loop's, with no locks. A request
 * whose answer comes later (from the cluster, the database, an event
 * stream) is suspended (MHD_suspend_connection) and its response queued
 * and resumed when the answer is there. TLS is libmicrohttpd's (GnuTLS):
 * no hand-written TLS or HTTP here.
 *
 * Bounds: connections_max open connections (libmicrohttpd refuses more),
 * body_bytes_max per request body (more is answered 413), headers within
 * libmicrohttpd's per-connection memory (32 KiB: over it, 431), an idle
 * connection closed after GW_HTTP_IDLE_S.
 */
#ifndef ESC_GW_HTTP_H
#define ESC_GW_HTTP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <microhttpd.h>
#include <uv.h>

#include "escrow.h"
#include "gw_auth.h"
#include "gw_config.h"
#include "gw_idem.h"
#include "gw_json.h"
#include "gw_metrics.h"
#include "gw_route.h"

#define GW_HTTP_IDLE_S 60
/* Certificate and key files: PEM text, at most this long each. */
#define GW_HTTP_PEM_BYTES_MAX (1024 * 1024)

typedef struct gw_http gw_http;
typedef struct gw_req gw_req;
struct gw_client;
struct gw_stream;

/* One request, from its first byte to its answer (owned by gw_http; freed
 * when libmicrohttpd says the request completed). */
struct gw_req {
    gw_http *h;                  /* borrowed */
    struct MHD_Connection *conn; /* borrowed; valid until completed */
    gw_route route;
    int64_t t0_us;
    char *body; /* owned; len bytes (NUL-terminated for convenience) */
    size_t len, cap;
    bool too_big;
    bool dispatched;
    bool suspended;
    bool answered;
    bool replay;
    unsigned http; /* the status answered */
    /* what the endpoint works with */
    gw_principal who;
    struct gw_client *client; /* borrowed: a call is in flight on it */
    gw_op op;
    int64_t qty;
    size_t nlines; /* a cart's lines */
    bool keyed;
    struct gw_stream *stream; /* GET /v1/events; the stream detaches at completion */
    void *work;               /* owned: a job on the thread pool (gw_events.c) */
};

/* Called once per request when its body is complete (on the loop). It
 * answers (gw_http_json, gw_http_error, gw_http_queue) now or suspends the
 * request and answers later. */
typedef void (*gw_dispatch_fn)(gw_req *r, void *arg);
/* Called once per request when it completed, before it is freed (on the
 * loop): what the request still points at lets go of it. */
typedef void (*gw_done_fn)(gw_req *r, void *arg);

struct gw_http {
    struct MHD_Daemon *d; /* owned */
    uv_loop_t *loop;      /* borrowed */
    uv_poll_t poll;       /* embedded: libmicrohttpd's epoll descriptor */
    uv_timer_t timer;     /* embedded: its next timeout */
    uv_idle_t idle;       /* embedded: run it again on the next loop turn */
    int handles_open;
    bool kicked; /* gw_http_kick since the last MHD_run began */
    void (*closed)(void *arg);
    void *closed_arg;
    char *tls_cert, *tls_key; /* owned PEM text; NULL in plain mode */
    gw_dispatch_fn dispatch;
    gw_done_fn done;
    void *dispatch_arg;  /* passed to both */
    gw_metrics *metrics; /* borrowed */
    uint32_t body_max;
    uint32_t waiting;     /* suspended requests (streams not counted) */
    uint32_t requests;    /* begun and not completed: an answer still being written counts */
    uint32_t connections; /* open */
    bool tls;
    bool stopping; /* answers say Connection: close */
    uint16_t port;
    char host[ESC_ENDPOINT_LEN_MAX + 1];
};

/* Starts serving per cfg on loop. Returns 0, or ESC_ECONFIG (TLS files
 * unreadable, TLS not in this libmicrohttpd), ESC_EIO (cannot listen) with
 * a sentence in why. */
int gw_http_start(gw_http *h, uv_loop_t *loop, const gw_config *cfg, gw_metrics *metrics,
                  gw_dispatch_fn dispatch, gw_done_fn done, void *arg, char *why, size_t why_len);
/* Stops accepting connections; requests on open ones are still served
 * (answered with Connection: close). */
void gw_http_quiesce(gw_http *h);
/* Stops libmicrohttpd (no request may be suspended) and closes the
 * handles; closed(arg) runs once they are closed. */
void gw_http_close(gw_http *h, void (*closed)(void *arg), void *arg);
void gw_http_fini(gw_http *h);

/* A request header or query argument (borrowed from libmicrohttpd, valid
 * during the request), or NULL. */
const char *gw_http_header(const gw_req *r, const char *name);
const char *gw_http_arg(const gw_req *r, const char *name);

/* Parks r until its answer comes (counted in waiting). */
void gw_http_suspend(gw_req *r);
/* Answers r with resp (borrowed: destroyed by the caller after the call)
 * and status; resumes r if it waited. */
void gw_http_queue(gw_req *r, unsigned status, struct MHD_Response *resp);

/* Headers an answer may carry. */
typedef struct gw_reply_opts {
    bool replay;              /* Idempotent-Replayed: true */
    uint64_t location_hold;   /* Location: /v1/holds/<id>; 0 = none */
    unsigned retry_after_s;   /* Retry-After; 0 = none */
    const char *allow;        /* Allow (405); NULL = none */
    const char *content_type; /* NULL = application/json */
} gw_reply_opts;

/* Answers r with status and body (owned: taken; NULL = out of memory,
 * answered 500). */
void gw_http_json(gw_req *r, unsigned status, char *body, const gw_reply_opts *o);
/* Answers r with err's row of the answer table, message (NULL: the code's
 * sentence), the field to blame and the cart line (NULL, -1: none) and
 * the hold (may be NULL). */
void gw_http_error(gw_req *r, int err, const char *message, const char *field, long line,
                   const esc_hold *hold);

/* Makes libmicrohttpd run again on the next loop turn (after a resume). */
void gw_http_kick(gw_http *h);

#endif

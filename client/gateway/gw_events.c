/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_events.c - see gw_events.h.
 *
 * A stream's life, and who may touch what:
 *   the loop makes it (buffer primed with the SSE retry line), suspends
 *   the request and starts the thread; the thread opens the feed and
 *   reports (phase); the loop answers the open's result: an error, or the
 *   200 with a callback response reading the buffer (stream_read);
 *   the thread appends frames, the loop's stream_read takes them; both
 *   under mu. reader_waiting says the connection is suspended for data;
 *   the thread then wakes the loop (async) to resume it;
 *   the end: the request completes (the reader went away, or the stream
 *   ended) -> detach sets stop; the thread ends -> ended, thread_done; the
 *   loop joins it. The stream is freed once the request let go of it, the
 *   thread was joined and libmicrohttpd freed the response.
 */
#include "gw_events.h"

#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "escrow_feed.h"
#include "gw_answer.h"
#include "gw_record.h"
#include "gw_sse.h"
#include "log.h"
#include "wire.h"

enum { PHASE_OPENING, PHASE_FAILED, PHASE_STREAMING };

struct gw_stream {
    gw_events *ev;               /* borrowed */
    gw_stream *prev, *next;      /* in ev->list */
    gw_req *r;                   /* borrowed until the request completed; then NULL */
    struct MHD_Connection *conn; /* the same */
    uv_thread_t thread;
    uv_async_t async; /* embedded: the thread's news */
    uv_mutex_t mu;
    uv_cond_t cond;             /* room in the buffer, or stop */
    volatile sig_atomic_t stop; /* the thread should end (feed_opts.stop) */
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char consumer[GW_CONSUMER_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    int64_t last_id; /* resume after it; 0 = the committed cursor */
    /* under mu */
    int phase;
    int open_rc;
    char why[FEED_WHY_MAX];
    char *buf; /* owned, GW_STREAM_BUFFER_BYTES */
    size_t off, len;
    bool ended;       /* the thread wrote its last byte */
    bool thread_done; /* it returned */
    bool reader_waiting;
    /* the loop's */
    bool answered_open;
    bool response_live; /* libmicrohttpd holds the response */
    bool joined;
    bool freeing;
};

static void stream_free_maybe(gw_stream *s);

/* ---- the thread ------------------------------------------------------------ */

/* Appends n bytes, waiting for room while the reader is slow. Returns
 * false when the stream must end instead. */
static bool append(gw_stream *s, const char *data, size_t n)
{
    uv_mutex_lock(&s->mu);
    while (!s->stop && GW_STREAM_BUFFER_BYTES - (s->len - s->off) < n) {
        if (s->off > 0) {
            memmove(s->buf, s->buf + s->off, s->len - s->off);
            s->len -= s->off;
            s->off = 0;
            continue;
        }
        (void)uv_cond_timedwait(&s->cond, &s->mu, 1000000000ULL);
    }
    bool go = !s->stop;
    bool wake = false;
    if (go) {
        if (s->len + n > GW_STREAM_BUFFER_BYTES) {
            memmove(s->buf, s->buf + s->off, s->len - s->off);
            s->len -= s->off;
            s->off = 0;
        }
        memcpy(s->buf + s->len, data, n);
        s->len += n;
        wake = s->reader_waiting;
    }
    uv_mutex_unlock(&s->mu);
    if (wake) {
        (void)uv_async_send(&s->async);
    }
    return go;
}

/* Sleeps up to ms, or until stop. */
static void nap(gw_stream *s, uint64_t ms)
{
    uv_mutex_lock(&s->mu);
    if (!s->stop) {
        (void)uv_cond_timedwait(&s->cond, &s->mu, ms * 1000000ULL);
    }
    uv_mutex_unlock(&s->mu);
}

static void report_open(gw_stream *s, int rc, const char *why)
{
    uv_mutex_lock(&s->mu);
    s->open_rc = rc;
    s->phase = rc == 0 ? PHASE_STREAMING : PHASE_FAILED;
    snprintf(s->why, sizeof s->why, "%s", why);
    uv_mutex_unlock(&s->mu);
    (void)uv_async_send(&s->async);
}

/* Polls and frames until stop or a lasting error. */
static void pump(gw_stream *s, feed *f, feed_event *evs)
{
    char frame[GW_SSE_FRAME_MAX];
    while (!s->stop) {
        int n = 0;
        int rc = feed_poll(f, evs, GW_STREAM_BATCH, GW_STREAM_KEEPALIVE_MS, &n);
        if (s->stop) {
            return;
        }
        if (rc == ESC_EUNAVAILABLE) {
            ESC_LOG(ESC_LOG_WARN, "GW-STREAM", "tenant=%s consumer=%s: %s; retrying", s->tenant,
                    s->consumer, feed_why(f));
            nap(s, 1000);
            continue;
        }
        if (rc != 0) {
            ESC_LOG(ESC_LOG_WARN, "GW-STREAM", "tenant=%s consumer=%s: %s; ending the stream",
                    s->tenant, s->consumer, feed_why(f));
            return;
        }
        if (n == 0 && !append(s, GW_SSE_KEEPALIVE, sizeof GW_SSE_KEEPALIVE - 1)) {
            return;
        }
        for (int i = 0; i < n; i++) {
            size_t len = gw_sse_frame(&evs[i], frame, sizeof frame);
            if (len == 0) {
                ESC_LOG(ESC_LOG_ERROR, "GW-STREAM", "event=%" PRId64 " does not fit a frame",
                        evs[i].event_id);
                return;
            }
            if (!append(s, frame, len)) {
                return;
            }
            if (gw_record_on()) {
                char *data = gw_json_event(&evs[i]);
                gw_record_event(gw_route_name(GW_ROUTE_EVENTS), data);
                free(data);
            }
        }
    }
}

static void stream_main(void *arg)
{
    gw_stream *s = arg;
    feed_opts o = {.dsn = s->ev->dsn,
                   .tenant = s->tenant,
                   .consumer = s->consumer,
                   .item = s->item,
                   .start = FEED_START_BEGINNING,
                   .stop = &s->stop};
    feed *f = NULL;
    char why[FEED_WHY_MAX];
    int rc = feed_open(&o, &f, NULL, why);
    if (rc == 0 && s->last_id > 0 && (rc = feed_seek(f, s->last_id)) != 0) {
        snprintf(why, sizeof why, "%s", feed_why(f));
    }
    report_open(s, rc, rc != 0 ? why : "");
    feed_event *evs = rc == 0 ? malloc(GW_STREAM_BATCH * sizeof *evs) : NULL;
    if (evs != NULL) {
        pump(s, f, evs);
    }
    free(evs);
    feed_close(f);
    uv_mutex_lock(&s->mu);
    s->ended = true;
    s->thread_done = true;
    uv_mutex_unlock(&s->mu);
    (void)uv_async_send(&s->async);
}

/* ---- the loop's side ---------------------------------------------------------- */

static ssize_t stream_read(void *cls, uint64_t pos, char *out, size_t max)
{
    (void)pos;
    gw_stream *s = cls;
    uv_mutex_lock(&s->mu);
    size_t n = s->len - s->off < max ? s->len - s->off : max;
    if (n > 0) {
        memcpy(out, s->buf + s->off, n);
        s->off += n;
        if (s->off == s->len) {
            s->off = s->len = 0;
        }
        uv_cond_signal(&s->cond);
        uv_mutex_unlock(&s->mu);
        return (ssize_t)n;
    }
    bool ended = s->ended;
    s->reader_waiting = !ended && s->conn != NULL;
    uv_mutex_unlock(&s->mu);
    if (ended || s->conn == NULL) {
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    MHD_suspend_connection(s->conn); /* resumed by on_news when there is more */
    return 0;
}

static void on_response_freed(void *cls)
{
    gw_stream *s = cls;
    s->response_live = false;
    stream_free_maybe(s);
}

/* The feed opened (or not): the request's answer. */
static void answer_open(gw_stream *s, int rc, const char *why)
{
    gw_req *r = s->r;
    if (rc != 0) {
        gw_http_error(r, rc, why, rc == ESC_EINVAL ? "last_event_id" : NULL, -1, NULL);
        return;
    }
    struct MHD_Response *resp = MHD_create_response_from_callback(
        MHD_SIZE_UNKNOWN, 16 * 1024, stream_read, s, on_response_freed);
    if (resp == NULL) {
        gw_http_error(r, ESC_ENOMEM, NULL, NULL, -1, NULL);
        return;
    }
    (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CACHE_CONTROL, "no-store");
    (void)MHD_add_response_header(resp, "X-Accel-Buffering", "no"); /* proxies: do not buffer */
    s->response_live = true;
    static const char *const hs[] = {MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream", NULL};
    gw_record_answer(gw_route_name(r->route.kind), 200, "text/event-stream", hs, NULL);
    gw_http_queue(r, 200, resp);
    MHD_destroy_response(resp);
}

static void on_news(uv_async_t *a)
{
    gw_stream *s = a->data;
    uv_mutex_lock(&s->mu);
    int phase = s->phase, rc = s->open_rc;
    char why[FEED_WHY_MAX];
    snprintf(why, sizeof why, "%s", s->why);
    bool resume = s->reader_waiting && (s->len > s->off || s->ended) && s->conn != NULL;
    if (resume) {
        s->reader_waiting = false;
    }
    bool done = s->thread_done;
    uv_mutex_unlock(&s->mu);
    if (!s->answered_open && phase != PHASE_OPENING && s->r != NULL) {
        s->answered_open = true;
        answer_open(s, rc, why);
    }
    if (resume) {
        MHD_resume_connection(s->conn);
        gw_http_kick(s->ev->http);
    }
    if (done && !s->joined) {
        (void)uv_thread_join(&s->thread);
        s->joined = true;
        stream_free_maybe(s);
    }
}

static void on_async_closed(uv_handle_t *h)
{
    gw_stream *s = h->data;
    gw_events *e = s->ev;
    if (s->prev != NULL) {
        s->prev->next = s->next;
    } else {
        e->list = s->next;
    }
    if (s->next != NULL) {
        s->next->prev = s->prev;
    }
    uv_cond_destroy(&s->cond);
    uv_mutex_destroy(&s->mu);
    free(s->buf);
    free(s);
    e->open--;
    metrics_gauge_add(e->metrics->streams, -1);
    if (e->open == 0 && e->drained != NULL) {
        void (*done)(void *) = e->drained;
        e->drained = NULL;
        done(e->drained_arg);
    }
}

static void stream_free_maybe(gw_stream *s)
{
    if (s->r == NULL && !s->response_live && s->joined && !s->freeing) {
        s->freeing = true;
        uv_close((uv_handle_t *)&s->async, on_async_closed);
    }
}

/* Tells the thread to end (and a waiting append to give up). */
static void stream_stop(gw_stream *s)
{
    uv_mutex_lock(&s->mu);
    s->stop = 1;
    uv_cond_broadcast(&s->cond);
    uv_mutex_unlock(&s->mu);
}

/* ---- the endpoints ------------------------------------------------------------ */

void gw_events_init(gw_events *e, uv_loop_t *loop, const char *dsn, gw_http *http,
                    gw_metrics *metrics, uint32_t streams_max)
{
    memset(e, 0, sizeof *e);
    e->loop = loop;
    e->dsn = dsn;
    e->http = http;
    e->metrics = metrics;
    e->max = streams_max;
}

/* The stream's arguments from the request; 0, or an answer was given. */
static int stream_args(gw_req *r, gw_stream *s)
{
    const char *consumer = gw_http_arg(r, "consumer");
    const char *item = gw_http_arg(r, "item");
    const char *last = gw_http_header(r, "Last-Event-ID");
    const char *field = "last_event_id";
    if (last == NULL) {
        last = gw_http_arg(r, "last_event_id");
    } else {
        field = "Last-Event-ID";
    }
    if (consumer == NULL || !wire_id_valid(consumer, GW_CONSUMER_LEN_MAX)) {
        gw_http_error(r, ESC_EINVAL, "consumer is required: 1..64 printable ASCII characters",
                      "consumer", -1, NULL);
        return -1;
    }
    if (item != NULL && item[0] != '\0' && !wire_id_valid(item, ESC_ITEM_LEN_MAX)) {
        gw_http_error(r, ESC_EINVAL, "item must be 1..128 printable ASCII characters", "item", -1,
                      NULL);
        return -1;
    }
    if (last != NULL && last[0] != '\0' && gw_sse_last_event_id(last, &s->last_id) != 0) {
        gw_http_error(r, ESC_EINVAL, "the last event id must be an event's id (digits)", field, -1,
                      NULL);
        return -1;
    }
    snprintf(s->tenant, sizeof s->tenant, "%s", r->who.tenant_id);
    snprintf(s->consumer, sizeof s->consumer, "%s", consumer);
    snprintf(s->item, sizeof s->item, "%s", item != NULL ? item : "");
    return 0;
}

static gw_stream *stream_new(gw_events *e)
{
    gw_stream *s = esc_xcalloc(1, sizeof *s);
    s->ev = e;
    s->buf = esc_xmalloc(GW_STREAM_BUFFER_BYTES);
    s->len = (size_t)snprintf(s->buf, GW_STREAM_BUFFER_BYTES, "retry: %d\n\n", GW_SSE_RETRY_MS);
    if (uv_mutex_init(&s->mu) != 0 || uv_cond_init(&s->cond) != 0 ||
        uv_async_init(e->loop, &s->async, on_news) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "GW-STREAM", "cannot make a stream's mutex or async handle");
        abort(); /* resources a daemon cannot run without */
    }
    s->async.data = s;
    s->next = e->list;
    if (e->list != NULL) {
        e->list->prev = s;
    }
    e->list = s;
    e->open++;
    metrics_gauge_add(e->metrics->streams, 1);
    return s;
}

void gw_events_stream(gw_events *e, gw_req *r)
{
    if (e->open >= e->max || e->drained != NULL) {
        char why[96];
        snprintf(why, sizeof why, "%u event streams are open already (--streams-max)", e->open);
        gw_http_error(r, e->drained != NULL ? ESC_ECLOSED : GW_EOVERLOADED,
                      e->drained != NULL ? NULL : why, NULL, -1, NULL);
        return;
    }
    gw_stream tmp;
    memset(&tmp, 0, sizeof tmp);
    if (stream_args(r, &tmp) != 0) {
        return;
    }
    gw_stream *s = stream_new(e);
    memcpy(s->tenant, tmp.tenant, sizeof s->tenant);
    memcpy(s->consumer, tmp.consumer, sizeof s->consumer);
    memcpy(s->item, tmp.item, sizeof s->item);
    s->last_id = tmp.last_id;
    s->r = r;
    s->conn = r->conn;
    r->stream = s;
    gw_http_suspend(r);
    if (uv_thread_create(&s->thread, stream_main, s) != 0) {
        s->thread_done = s->ended = s->joined = true;
        s->answered_open = true;
        gw_http_error(r, GW_EOVERLOADED, "cannot start a thread for the stream", NULL, -1, NULL);
    }
}

void gw_events_request_done(gw_events *e, gw_req *r)
{
    (void)e;
    gw_stream *s = r->stream;
    if (s == NULL) {
        return;
    }
    r->stream = NULL;
    s->r = NULL;
    uv_mutex_lock(&s->mu);
    s->conn = NULL;
    s->reader_waiting = false;
    uv_mutex_unlock(&s->mu);
    stream_stop(s);
    stream_free_maybe(s);
}

void gw_events_stop_all(gw_events *e, void (*drained)(void *arg), void *arg)
{
    e->drained = drained;
    e->drained_arg = arg;
    for (gw_stream *s = e->list; s != NULL; s = s->next) {
        stream_stop(s);
    }
    if (e->open == 0) {
        e->drained = NULL;
        drained(arg);
    }
}

/* ---- cursor commits ------------------------------------------------------------ */

typedef struct cursor_job {
    uv_work_t work; /* embedded */
    gw_req *r;      /* borrowed: suspended until the job's answer */
    const char *dsn;
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char consumer[GW_CONSUMER_LEN_MAX + 1];
    int64_t event_id;
    int rc;
    bool moved;
    char why[FEED_WHY_MAX];
} cursor_job;

static void cursor_work(uv_work_t *w)
{
    cursor_job *j = w->data;
    feed_opts o = {.dsn = j->dsn, .tenant = j->tenant, .consumer = j->consumer};
    j->rc = feed_commit_event(&o, j->event_id, &j->moved, j->why);
}

static void cursor_after(uv_work_t *w, int status)
{
    cursor_job *j = w->data;
    gw_req *r = j->r;
    r->work = NULL;
    if (status != 0) {
        gw_http_error(r, ESC_ECLOSED, NULL, NULL, -1, NULL);
    } else if (j->rc != 0) {
        gw_http_error(r, j->rc, j->why, j->rc == ESC_EINVAL ? "event_id" : NULL, -1, NULL);
    } else {
        gw_http_json(r, 200, gw_json_cursor_answer(j->consumer, j->event_id, j->moved), NULL);
    }
    free(j);
}

void gw_events_cursor(gw_events *e, gw_req *r)
{
    gw_bad bad;
    int64_t event_id = 0;
    if (gw_json_cursor(r->body, r->len, &event_id, &bad) != 0) {
        gw_http_error(r, ESC_EINVAL, bad.why, bad.field, -1, NULL);
        return;
    }
    cursor_job *j = esc_xcalloc(1, sizeof *j);
    j->work.data = j;
    j->r = r;
    j->dsn = e->dsn;
    snprintf(j->tenant, sizeof j->tenant, "%s", r->who.tenant_id);
    snprintf(j->consumer, sizeof j->consumer, "%s", r->route.consumer);
    j->event_id = event_id;
    r->work = j;
    gw_http_suspend(r);
    if (uv_queue_work(e->loop, &j->work, cursor_work, cursor_after) != 0) {
        r->work = NULL;
        free(j);
        gw_http_error(r, ESC_EBUSY, NULL, NULL, -1, NULL);
    }
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_http.c - see gw_http.h.
 *
 * Life of a request: libmicrohttpd calls on_access first with no upload
 * (we make the gw_req and match the route), then with each piece of the
 * body (kept up to body_max, the rest dropped and answered 413), then once
 * more with nothing left (we dispatch). A dispatched request is answered
 * at once or suspended; a suspended one gets its response queued and is
 * resumed from a libescrow callback or a worker's completion. on_completed
 * counts it and frees it.
 */
#include "gw_http.h"

#include <errno.h>
#include <inttypes.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "escrow_errors.h"
#include "gw_answer.h"
#include "gw_record.h"
#include "log.h"

/* ---- libmicrohttpd on the loop ------------------------------------------- */

static void on_idle(uv_idle_t *i);
static void on_timer(uv_timer_t *t);

static void run_mhd(gw_http *h)
{
    if (h->d == NULL) {
        return;
    }
    h->kicked = false;
    (void)MHD_run(h->d);
    MHD_UNSIGNED_LONG_LONG t = 0;
    bool timed = MHD_get_timeout(h->d, &t) == MHD_YES;
    if ((timed && t == 0) || h->kicked) { /* kicked: a callback inside MHD_run asked for a run */
        (void)uv_idle_start(&h->idle, on_idle); /* more to do at once: next loop turn */
        (void)uv_timer_stop(&h->timer);
        return;
    }
    (void)uv_idle_stop(&h->idle);
    if (timed) {
        (void)uv_timer_start(&h->timer, on_timer, t, 0);
    } else {
        (void)uv_timer_stop(&h->timer);
    }
}

static void on_idle(uv_idle_t *i)
{
    run_mhd(i->data);
}

static void on_timer(uv_timer_t *t)
{
    run_mhd(t->data);
}

static void on_poll(uv_poll_t *p, int status, int events)
{
    (void)status;
    (void)events;
    run_mhd(p->data);
}

void gw_http_kick(gw_http *h)
{
    if (h->d != NULL) {
        h->kicked = true;
        (void)uv_idle_start(&h->idle, on_idle);
    }
}

/* ---- answers ----------------------------------------------------------------- */

const char *gw_http_header(const gw_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_HEADER_KIND, name);
}

const char *gw_http_arg(const gw_req *r, const char *name)
{
    return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

void gw_http_suspend(gw_req *r)
{
    ESC_ASSERT(!r->suspended && !r->answered);
    MHD_suspend_connection(r->conn);
    r->suspended = true;
    r->h->waiting++;
    metrics_gauge_add(r->h->metrics->inflight, 1);
}

void gw_http_queue(gw_req *r, unsigned status, struct MHD_Response *resp)
{
    ESC_ASSERT(!r->answered);
    gw_http *h = r->h;
    r->answered = true;
    r->http = status;
    if (h->stopping) {
        (void)MHD_add_response_header(resp, MHD_HTTP_HEADER_CONNECTION, "close");
    }
    if (MHD_queue_response(r->conn, status, resp) != MHD_YES) {
        ESC_LOG(ESC_LOG_WARN, "GW-HTTP", "route=%s status=%u: the answer could not be queued",
                gw_route_name(r->route.kind), status);
    }
    if (r->suspended) {
        r->suspended = false;
        h->waiting--;
        metrics_gauge_add(h->metrics->inflight, -1);
        MHD_resume_connection(r->conn);
        gw_http_kick(h);
    }
}

void gw_http_json(gw_req *r, unsigned status, char *body, const gw_reply_opts *o)
{
    static const char oom[] = "{\"code\":\"internal\",\"message\":\"out of memory\","
                              "\"retryable\":true}";
    const char *text = body != NULL ? body : oom;
    struct MHD_Response *resp =
        body != NULL
            ? MHD_create_response_from_buffer(strlen(body), body, MHD_RESPMEM_MUST_FREE)
            : MHD_create_response_from_buffer(sizeof oom - 1, (void *)oom, MHD_RESPMEM_PERSISTENT);
    if (resp == NULL) {
        ESC_LOG(ESC_LOG_ERROR, "GW-HTTP", "out of memory for a response");
        abort(); /* daemons abort on out-of-memory (STYLE.md rule 14) */
    }
    if (body == NULL) {
        status = 500;
    }
    const char *ctype = o != NULL && o->content_type != NULL ? o->content_type : "application/json";
    char location[48], retry[16];
    const char *hs[16] = {MHD_HTTP_HEADER_CONTENT_TYPE, ctype, MHD_HTTP_HEADER_CACHE_CONTROL,
                          "no-store"};
    size_t n = 4;
    if (o != NULL && o->replay) {
        hs[n++] = "Idempotent-Replayed";
        hs[n++] = "true";
        r->replay = true;
    }
    if (o != NULL && o->location_hold != 0) {
        snprintf(location, sizeof location, "/v1/holds/%" PRIu64, o->location_hold);
        hs[n++] = MHD_HTTP_HEADER_LOCATION;
        hs[n++] = location;
    }
    if (o != NULL && o->retry_after_s != 0) {
        snprintf(retry, sizeof retry, "%u", o->retry_after_s);
        hs[n++] = MHD_HTTP_HEADER_RETRY_AFTER;
        hs[n++] = retry;
    }
    if (o != NULL && o->allow != NULL) {
        hs[n++] = MHD_HTTP_HEADER_ALLOW;
        hs[n++] = o->allow;
    }
    hs[n] = NULL;
    for (size_t i = 0; i < n; i += 2) {
        (void)MHD_add_response_header(resp, hs[i], hs[i + 1]);
    }
    gw_record_answer(gw_route_name(r->route.kind), status, ctype, hs, text);
    gw_http_queue(r, status, resp);
    MHD_destroy_response(resp);
}

void gw_http_error(gw_req *r, int err, const char *message, const char *field, long line,
                   const esc_hold *hold)
{
    const gw_answer *a = gw_answer_of(err);
    if (message == NULL) {
        message = a->sentence != NULL ? a->sentence : esc_strerror(err);
    }
    gw_reply_opts o = {.retry_after_s = a->retry_after_s,
                       .allow = err == GW_EMETHOD ? r->route.allow : NULL};
    gw_http_json(r, a->http, gw_json_error(a, message, field, line, hold), &o);
}

/* ---- libmicrohttpd's callbacks ------------------------------------------- */

static bool body_append(gw_req *r, const char *data, size_t n)
{
    if (r->too_big || r->len + n > r->h->body_max) {
        r->too_big = true;
        return false;
    }
    if (r->len + n + 1 > r->cap) {
        size_t cap = r->cap ? r->cap : 1024;
        while (cap < r->len + n + 1) {
            cap *= 2;
        }
        r->body = esc_xrealloc(r->body, cap);
        r->cap = cap;
    }
    memcpy(r->body + r->len, data, n);
    r->len += n;
    r->body[r->len] = '\0';
    return true;
}

static enum MHD_Result on_access(void *cls, struct MHD_Connection *conn, const char *url,
                                 const char *method, const char *version, const char *upload,
                                 size_t *upload_size, void **con_cls)
{
    (void)version;
    gw_http *h = cls;
    gw_req *r = *con_cls;
    if (r == NULL) {
        r = esc_xcalloc(1, sizeof *r);
        r->h = h;
        r->conn = conn;
        r->t0_us = esc_mono_us();
        gw_route_match(method, url, &r->route);
        *con_cls = r;
        h->requests++;
        return MHD_YES;
    }
    if (*upload_size > 0) {
        (void)body_append(r, upload, *upload_size);
        *upload_size = 0;
        return MHD_YES;
    }
    if (!r->dispatched) {
        r->dispatched = true;
        if (r->too_big) {
            char why[96];
            snprintf(why, sizeof why, "the body is larger than %u bytes", h->body_max);
            gw_http_error(r, GW_ETOO_LARGE, why, "body", -1, NULL);
        } else {
            h->dispatch(r, h->dispatch_arg);
        }
    }
    return MHD_YES;
}

/* The request is over (answered, or the connection went away). */
static void on_completed(void *cls, struct MHD_Connection *conn, void **con_cls,
                         enum MHD_RequestTerminationCode toe)
{
    (void)conn;
    gw_http *h = cls;
    gw_req *r = *con_cls;
    if (r == NULL) {
        return;
    }
    *con_cls = NULL;
    ESC_ASSERT(!r->suspended);
    h->requests--;
    double s = (double)(esc_mono_us() - r->t0_us) / 1e6;
    if (r->answered) {
        gw_metrics_request(h->metrics, r->route.kind, r->http, s, r->replay);
    }
    ESC_LOG(ESC_LOG_DEBUG, "GW-REQ", "route=%s status=%u ms=%.3f end=%d",
            gw_route_name(r->route.kind), r->http, s * 1e3, (int)toe);
    h->done(r, h->dispatch_arg);
    free(r->body);
    free(r);
}

static void on_connection(void *cls, struct MHD_Connection *conn, void **socket_context,
                          enum MHD_ConnectionNotificationCode toe)
{
    (void)conn;
    (void)socket_context;
    gw_http *h = cls;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        h->connections++;
        metrics_gauge_add(h->metrics->connections, 1);
    } else {
        h->connections--;
        metrics_gauge_add(h->metrics->connections, -1);
        /* At --connections-max libmicrohttpd takes its listening socket out
         * of its epoll set, and puts it back only at the start of a later
         * MHD_run: run it again now, or connections waiting in the backlog
         * wait for some unrelated event (found by gateway.sh). */
        gw_http_kick(h);
    }
}

static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char line[512];
    vsnprintf(line, sizeof line, fmt, ap);
    line[strcspn(line, "\n")] = '\0';
    ESC_LOG(ESC_LOG_WARN, "GW-HTTP", "libmicrohttpd: %s", line);
}

/* ---- start and stop ---------------------------------------------------------- */

/* The whole of a PEM file (at most GW_HTTP_PEM_BYTES_MAX), NUL-terminated. */
static int read_pem(const char *path, char **out, char *why, size_t why_len)
{
    FILE *f = fopen(path, "rb");
    if (f == NULL) {
        snprintf(why, why_len, "%s: cannot open: %s", path, strerror(errno));
        return ESC_ECONFIG;
    }
    char *buf = esc_xmalloc(GW_HTTP_PEM_BYTES_MAX + 1);
    size_t n = fread(buf, 1, GW_HTTP_PEM_BYTES_MAX + 1, f);
    bool bad = ferror(f) != 0;
    fclose(f);
    if (bad || n == 0 || n > GW_HTTP_PEM_BYTES_MAX) {
        snprintf(why, why_len, "%s: %s", path,
                 bad      ? "cannot read"
                 : n == 0 ? "empty"
                          : "larger than 1 MiB");
        free(buf);
        return ESC_ECONFIG;
    }
    buf[n] = '\0';
    *out = buf;
    return 0;
}

/* host:port as a socket address (numeric or a name, resolved once). */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *out, bool *v6,
                   char *why, size_t why_len)
{
    struct addrinfo hints, *ai = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char svc[8];
    snprintf(svc, sizeof svc, "%u", port);
    int rc = getaddrinfo(host, svc, &hints, &ai);
    if (rc != 0 || ai == NULL) {
        snprintf(why, why_len, "--listen %s: %s", host, gai_strerror(rc));
        return ESC_EINVAL;
    }
    memcpy(out, ai->ai_addr, ai->ai_addrlen);
    *v6 = ai->ai_family == AF_INET6;
    freeaddrinfo(ai);
    return 0;
}

static int open_tls(gw_http *h, const gw_config *cfg, char *why, size_t why_len)
{
    if (cfg->plain_http) {
        return 0;
    }
    if (MHD_is_feature_supported(MHD_FEATURE_TLS) != MHD_YES) {
        snprintf(why, why_len,
                 "this libmicrohttpd was built without TLS: use a build with "
                 "GnuTLS (Debian's libmicrohttpd12 has it) or --plain-http on");
        return ESC_ECONFIG;
    }
    int rc = read_pem(cfg->tls_cert, &h->tls_cert, why, why_len);
    rc = rc != 0 ? rc : read_pem(cfg->tls_key, &h->tls_key, why, why_len);
    h->tls = rc == 0;
    return rc;
}

static int start_daemon(gw_http *h, const gw_config *cfg, char *why, size_t why_len)
{
    struct sockaddr_storage addr;
    bool v6 = false;
    int rc = resolve(h->host, h->port, &addr, &v6, why, why_len);
    if (rc != 0) {
        return rc;
    }
    unsigned flags = MHD_USE_EPOLL | MHD_ALLOW_SUSPEND_RESUME | MHD_USE_ERROR_LOG |
                     (h->tls ? MHD_USE_TLS : 0) | (v6 ? MHD_USE_IPv6 : 0);
    struct MHD_OptionItem opts[] = {
        {MHD_OPTION_SOCK_ADDR, 0, &addr},
        {MHD_OPTION_CONNECTION_LIMIT, (intptr_t)cfg->connections_max, NULL},
        {MHD_OPTION_CONNECTION_TIMEOUT, GW_HTTP_IDLE_S, NULL},
        {MHD_OPTION_NOTIFY_COMPLETED, (intptr_t)on_completed, h},
        {MHD_OPTION_NOTIFY_CONNECTION, (intptr_t)on_connection, h},
        {MHD_OPTION_SIGPIPE_HANDLED_BY_APP, 1, NULL},
        /* plain HTTP: the list ends here */
        {h->tls ? MHD_OPTION_HTTPS_MEM_CERT : MHD_OPTION_END, 0, h->tls_cert},
        {MHD_OPTION_HTTPS_MEM_KEY, 0, h->tls_key},
        {MHD_OPTION_END, 0, NULL},
    };
    h->d = MHD_start_daemon(flags, h->port, NULL, NULL, on_access, h, MHD_OPTION_EXTERNAL_LOGGER,
                            on_mhd_log, h, /* first: it says so */
                            MHD_OPTION_ARRAY, opts, MHD_OPTION_END);
    if (h->d == NULL) {
        snprintf(why, why_len,
                 "cannot listen on %s:%u%s (taken, or not an address of this "
                 "machine; a bad certificate or key is logged above)",
                 h->host, h->port, h->tls ? " with TLS" : "");
        return ESC_EIO;
    }
    const union MHD_DaemonInfo *bound = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_BIND_PORT);
    if (bound != NULL && bound->port != 0) {
        h->port = bound->port;
    }
    return 0;
}

static int start_handles(gw_http *h)
{
    const union MHD_DaemonInfo *ep = MHD_get_daemon_info(h->d, MHD_DAEMON_INFO_EPOLL_FD);
    if (ep == NULL || uv_poll_init(h->loop, &h->poll, ep->epoll_fd) != 0) {
        return ESC_EIO;
    }
    h->poll.data = h;
    h->handles_open++;
    if (uv_timer_init(h->loop, &h->timer) != 0) {
        return ESC_EIO;
    }
    h->timer.data = h;
    h->handles_open++;
    if (uv_idle_init(h->loop, &h->idle) != 0) {
        return ESC_EIO;
    }
    h->idle.data = h;
    h->handles_open++;
    if (uv_poll_start(&h->poll, UV_READABLE, on_poll) != 0) {
        return ESC_EIO;
    }
    run_mhd(h);
    return 0;
}

int gw_http_start(gw_http *h, uv_loop_t *loop, const gw_config *cfg, gw_metrics *metrics,
                  gw_dispatch_fn dispatch, gw_done_fn done, void *arg, char *why, size_t why_len)
{
    memset(h, 0, sizeof *h);
    h->loop = loop;
    h->metrics = metrics;
    h->dispatch = dispatch;
    h->done = done;
    h->dispatch_arg = arg;
    h->body_max = cfg->body_bytes_max;
    if (gw_config_listen(cfg, h->host, sizeof h->host, &h->port) != 0) {
        snprintf(why, why_len, "--listen: cannot parse '%s'", cfg->listen);
        return ESC_EINVAL;
    }
    int rc = open_tls(h, cfg, why, why_len);
    rc = rc != 0 ? rc : start_daemon(h, cfg, why, why_len);
    if (rc == 0 && start_handles(h) != 0) {
        snprintf(why, why_len, "cannot watch the HTTP server on the loop");
        rc = ESC_EIO;
    }
    return rc;
}

void gw_http_quiesce(gw_http *h)
{
    h->stopping = true;
    if (h->d == NULL) {
        return;
    }
    MHD_socket fd = MHD_quiesce_daemon(h->d);
    if (fd != MHD_INVALID_SOCKET) {
        (void)close(fd); /* no new connections; open ones go on */
    }
    gw_http_kick(h);
}

static void on_handle_closed(uv_handle_t *hd)
{
    gw_http *h = hd->data;
    if (--h->handles_open == 0 && h->closed != NULL) {
        h->closed(h->closed_arg);
    }
}

void gw_http_close(gw_http *h, void (*closed)(void *arg), void *arg)
{
    ESC_ASSERT(h->waiting == 0);
    if (h->handles_open > 0) {
        (void)uv_poll_stop(&h->poll); /* before libmicrohttpd closes the descriptor */
    }
    if (h->d != NULL) {
        MHD_stop_daemon(h->d); /* closes the connections left (idle keep-alives) */
        h->d = NULL;
    }
    h->closed = closed;
    h->closed_arg = arg;
    if (h->handles_open == 0) {
        closed(arg);
        return;
    }
    uv_handle_t *hs[3] = {(uv_handle_t *)&h->poll, (uv_handle_t *)&h->timer,
                          (uv_handle_t *)&h->idle};
    int n = h->handles_open;
    for (int i = 0; i < n; i++) {
        uv_close(hs[i], on_handle_closed);
    }
}

void gw_http_fini(gw_http *h)
{
    if (h->d != NULL) {
        MHD_stop_daemon(h->d);
        h->d = NULL;
    }
    free(h->tls_cert);
    free(h->tls_key);
    h->tls_cert = h->tls_key = NULL;
}

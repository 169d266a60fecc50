/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pgx.c - see pgx.h.
 *
 * States: DOWN -> CONNECTING -> (PREPARING) -> READY <-> BUSY; any failure of
 * the connection -> DOWN (the query in progress, if any, is failed with
 * conn_lost first). The uv_poll handle is closed whenever the connection
 * goes down, because a new connection gets a new socket.
 */
#include "pgx.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"

static void on_io(uv_poll_t *p, int status, int events);
static void start_connect(pgx_conn *c);
static void go_down(pgx_conn *c, const char *why);
static int watch(pgx_conn *c, int events);
static void closed_one(pgx_conn *c);

static void copy(char *dst, size_t cap, const char *src)
{
    snprintf(dst, cap, "%s", src ? src : "");
}

void pgx_err_from(PGconn *conn, const PGresult *res, pgx_err *err)
{
    memset(err, 0, sizeof *err);
    if (res != NULL) {
        copy(err->sqlstate, sizeof err->sqlstate, PQresultErrorField(res, PG_DIAG_SQLSTATE));
        copy(err->constraint, sizeof err->constraint,
             PQresultErrorField(res, PG_DIAG_CONSTRAINT_NAME));
        copy(err->message, sizeof err->message, PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY));
    }
    if (err->message[0] == '\0' && conn != NULL) {
        copy(err->message, sizeof err->message, PQerrorMessage(conn));
        size_t n = strlen(err->message);
        while (n > 0 && err->message[n - 1] == '\n') {
            err->message[--n] = '\0';
        }
    }
    for (char *p = err->message; *p != '\0'; p++) {
        if (*p == '\n' || *p == '\t') {
            *p = ' '; /* one log line per event */
        }
    }
    err->conn_lost = conn == NULL || PQstatus(conn) != CONNECTION_OK ||
                     strncmp(err->sqlstate, "08", 2) == 0 || strncmp(err->sqlstate, "57P", 3) == 0;
    err->code = err->conn_lost ? ESC_EUNAVAILABLE : ESC_EDB;
}

static void on_poll_closed(uv_handle_t *h)
{
    pgx_conn *c = h->data;
    c->poll_inited = false;
    int repoll = c->repoll_events;
    c->repoll_events = 0;
    if (c->state == PGX_CONNECTING && repoll != 0) {
        if (watch(c, repoll) != 0) {
            go_down(c, "cannot watch the socket");
        }
        return;
    }
    if (c->state == PGX_CLOSING) {
        closed_one(c);
        return;
    }
    if (c->reconnect_pending && c->state == PGX_DOWN) {
        c->reconnect_pending = false;
        start_connect(c);
    }
}

static int watch(pgx_conn *c, int events)
{
    if (!c->poll_inited) {
        int fd = PQsocket(c->conn);
        if (fd < 0 || uv_poll_init(c->loop, &c->poll, fd) != 0) {
            return ESC_EUNAVAILABLE;
        }
        c->poll.data = c;
        c->poll_inited = true;
    }
    if (uv_poll_start(&c->poll, events, on_io) != 0) {
        return ESC_EUNAVAILABLE;
    }
    return 0;
}

static void finish_query(pgx_conn *c, const pgx_err *err)
{
    pgx_result_cb cb = c->cb;
    void *arg = c->cb_arg;
    PGresult *res = c->first_err ? NULL : c->last;
    c->cb = NULL;
    c->cb_arg = NULL;
    if (cb != NULL) {
        cb(c, err->code == 0 ? res : NULL, err, arg);
    }
    PQclear(c->last);
    PQclear(c->first_err);
    c->last = NULL;
    c->first_err = NULL;
}

static void go_down(pgx_conn *c, const char *why)
{
    pgx_err err;
    pgx_err_from(c->conn, NULL, &err);
    err.conn_lost = true;
    err.code = ESC_EUNAVAILABLE;
    if (why != NULL && err.message[0] == '\0') {
        copy(err.message, sizeof err.message, why);
    }
    ESC_LOG(ESC_LOG_WARN, "PG-DOWN", "conn=%s %s", c->name, err.message);
    int was = c->state;
    c->state = PGX_DOWN;
    uv_timer_stop(&c->deadline);
    if (c->poll_inited && !uv_is_closing((uv_handle_t *)&c->poll)) {
        uv_poll_stop(&c->poll);
        uv_close((uv_handle_t *)&c->poll, on_poll_closed);
    }
    if (was == PGX_BUSY) {
        finish_query(c, &err);
    }
    PQfinish(c->conn);
    c->conn = NULL;
    if (c->state_cb != NULL && c->state == PGX_DOWN) {
        c->state_cb(c, false, c->state_arg);
    }
}

static void became_ready(pgx_conn *c)
{
    c->state = PGX_READY;
    uv_timer_stop(&c->deadline);
    if (watch(c, UV_READABLE) != 0) {
        go_down(c, "cannot watch the socket");
        return;
    }
    ESC_LOG(ESC_LOG_INFO, "PG-UP", "conn=%s", c->name);
    if (c->state_cb != NULL) {
        c->state_cb(c, true, c->state_arg);
    }
}

/* Waits for events on the socket libpq uses now. While connecting that may
 * be a new socket after any PQconnectPoll: libpq moves on to the next host
 * of a multi-host DSN (host=a,b target_session_attrs=read-write), the next
 * address of a name, or retries without SSL, and the new socket may even
 * reuse the old descriptor's number (which epoll no longer watches). So the
 * poll handle is made again for every step; on_poll_closed watches the new
 * socket. Connecting is rare: a few handles per connection. */
static void connect_watch(pgx_conn *c, int events)
{
    if (c->poll_inited) {
        if (!uv_is_closing((uv_handle_t *)&c->poll)) {
            uv_poll_stop(&c->poll);
            uv_close((uv_handle_t *)&c->poll, on_poll_closed);
        }
        c->repoll_events = events;
        return;
    }
    if (watch(c, events) != 0) {
        go_down(c, "cannot watch the socket");
    }
}

static void connect_step(pgx_conn *c)
{
    switch (PQconnectPoll(c->conn)) {
    case PGRES_POLLING_READING:
        connect_watch(c, UV_READABLE);
        return;
    case PGRES_POLLING_WRITING:
        connect_watch(c, UV_WRITABLE);
        return;
    case PGRES_POLLING_OK:
        break;
    default:
        go_down(c, "connection failed");
        return;
    }
    if (c->prepare_name == NULL) {
        became_ready(c);
        return;
    }
    if (!PQsendPrepare(c->conn, c->prepare_name, c->prepare_sql, c->prepare_nparams, NULL)) {
        go_down(c, "cannot send PREPARE");
        return;
    }
    c->state = PGX_PREPARING;
    if (watch(c, UV_READABLE | UV_WRITABLE) != 0) {
        go_down(c, "cannot watch the socket");
    }
}

/* ---- deadlines and the host to start at --------------------------------- */

static void on_deadline(uv_timer_t *t)
{
    pgx_conn *c = t->data;
    if (c->state != PGX_CONNECTING && c->state != PGX_PREPARING && c->state != PGX_BUSY) {
        return;
    }
    bool query = c->state == PGX_BUSY;
    ESC_LOG(ESC_LOG_WARN, "PG-TIMEOUT", "conn=%s %s; the next attempt starts at the next host",
            c->name, query ? "no answer to a query" : "no connection");
    c->host_shift++;
    go_down(c, query ? "query timed out" : "connection attempt timed out");
}

static void start_deadline(pgx_conn *c, uint64_t ms)
{
    if (uv_timer_start(&c->deadline, on_deadline, ms, 0) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "PG-TIMEOUT", "conn=%s cannot start the deadline", c->name);
    }
}

/* The DSN's connect_timeout in ms (libpq's minimum of 2 s), else the default. */
static uint64_t connect_timeout_ms(PGconn *conn)
{
    long s = 0;
    PQconninfoOption *opts = PQconninfo(conn);
    for (PQconninfoOption *o = opts; o != NULL && o->keyword != NULL; o++) {
        if (strcmp(o->keyword, "connect_timeout") == 0 && o->val != NULL) {
            s = strtol(o->val, NULL, 10);
        }
    }
    PQconninfoFree(opts);
    return (uint64_t)(s <= 0 ? PGX_CONNECT_TIMEOUT_S : s < 2 ? 2 : s) * 1000;
}

/* list ("a,b,c") with its first shift % n entries moved to the end ("b,c,a"
 * for 1) into out; a list of one entry, or one too long for out, unchanged. */
static void rotate_list(const char *list, unsigned shift, char *out, size_t cap)
{
    size_t n = 1;
    for (const char *p = list; *p != '\0'; p++) {
        n += *p == ',';
    }
    const char *start = list;
    for (unsigned k = n > 1 ? shift % n : 0; k > 0; k--) {
        start = strchr(start, ',') + 1;
    }
    if (start == list || strlen(list) >= cap) {
        snprintf(out, cap, "%s", list);
        return;
    }
    snprintf(out, cap, "%s,%.*s", start, (int)(start - list - 1), list);
}

/* PQconnectStart with the DSN's host, hostaddr and port lists rotated by
 * host_shift (libpq tries the hosts in order). */
static PGconn *connect_start(pgx_conn *c)
{
    enum { OPTS_MAX = 96, LIST_MAX = 1024 };
    PQconninfoOption *opts = c->host_shift ? PQconninfoParse(c->dsn, NULL) : NULL;
    if (opts == NULL) {
        return PQconnectStart(c->dsn); /* no shift, or libpq will report the error */
    }
    const char *keys[OPTS_MAX + 1], *vals[OPTS_MAX + 1];
    char lists[3][LIST_MAX];
    size_t k = 0, nl = 0;
    for (PQconninfoOption *o = opts; o->keyword != NULL && k < OPTS_MAX; o++) {
        if (o->val == NULL) {
            continue;
        }
        keys[k] = o->keyword;
        vals[k] = o->val;
        if (nl < 3 && (strcmp(o->keyword, "host") == 0 || strcmp(o->keyword, "hostaddr") == 0 ||
                       strcmp(o->keyword, "port") == 0)) {
            rotate_list(o->val, c->host_shift, lists[nl], sizeof lists[nl]);
            vals[k] = lists[nl++];
        }
        k++;
    }
    keys[k] = NULL;
    vals[k] = NULL;
    PGconn *conn = PQconnectStartParams(keys, vals, 0);
    PQconninfoFree(opts);
    return conn;
}

static void start_connect(pgx_conn *c)
{
    c->conn = connect_start(c);
    if (c->conn == NULL) {
        ESC_LOG(ESC_LOG_ERROR, "PG-DOWN", "conn=%s out of memory", c->name);
        c->state = PGX_DOWN;
        if (c->state_cb != NULL) {
            c->state_cb(c, false, c->state_arg);
        }
        return;
    }
    c->state = PGX_CONNECTING;
    if (PQstatus(c->conn) == CONNECTION_BAD || PQsetnonblocking(c->conn, 1) != 0) {
        go_down(c, "connection failed");
        return;
    }
    start_deadline(c, connect_timeout_ms(c->conn));
    connect_step(c);
}

int pgx_open(uv_loop_t *loop, pgx_conn *c, const char *dsn, const char *name,
             const char *prepare_name, const char *prepare_sql, int prepare_nparams,
             pgx_state_cb state_cb, void *state_arg)
{
    memset(c, 0, sizeof *c);
    c->dsn = strdup(dsn);
    if (c->dsn == NULL) {
        return ESC_ENOMEM;
    }
    c->loop = loop;
    c->name = name;
    c->prepare_name = prepare_name;
    c->prepare_sql = prepare_sql;
    c->prepare_nparams = prepare_nparams;
    c->state_cb = state_cb;
    c->state_arg = state_arg;
    c->state = PGX_DOWN;
    c->poll.data = c; /* what close_cb reads, even if no socket was ever watched */
    c->query_timeout_ms = PGX_QUERY_TIMEOUT_MS;
    if (uv_timer_init(loop, &c->deadline) != 0) {
        free(c->dsn);
        c->dsn = NULL;
        return ESC_EIO;
    }
    c->deadline.data = c;
    c->deadline_inited = true;
    start_connect(c);
    return 0;
}

void pgx_reconnect(pgx_conn *c)
{
    if (c->state != PGX_DOWN) {
        return;
    }
    if (c->poll_inited) {
        c->reconnect_pending = true; /* on_poll_closed starts it */
        return;
    }
    start_connect(c);
}

void pgx_drop(pgx_conn *c)
{
    if (c->state == PGX_READY) {
        go_down(c, "dropped by a failpoint");
    }
}

void pgx_set_query_timeout(pgx_conn *c, uint32_t ms)
{
    c->query_timeout_ms = ms;
}

bool pgx_ready(const pgx_conn *c)
{
    return c->state == PGX_READY;
}

bool pgx_connected(const pgx_conn *c)
{
    return c->state == PGX_READY || c->state == PGX_BUSY;
}

/* Collects every result of the current command; returns true when done. */
static bool collect(pgx_conn *c)
{
    while (!PQisBusy(c->conn)) {
        PGresult *r = PQgetResult(c->conn);
        if (r == NULL) {
            return true;
        }
        ExecStatusType st = PQresultStatus(r);
        if (st == PGRES_FATAL_ERROR && c->first_err == NULL) {
            c->first_err = r;
        } else {
            PQclear(c->last);
            c->last = r;
        }
    }
    return false;
}

static void on_readable(pgx_conn *c)
{
    if (!PQconsumeInput(c->conn)) {
        go_down(c, "connection lost");
        return;
    }
    if (c->state != PGX_BUSY && c->state != PGX_PREPARING) {
        /* notices or an unexpected close while idle */
        if (PQstatus(c->conn) != CONNECTION_OK) {
            go_down(c, "connection lost");
        }
        return;
    }
    if (!collect(c)) {
        return;
    }
    pgx_err err;
    memset(&err, 0, sizeof err);
    if (c->first_err != NULL) {
        pgx_err_from(c->conn, c->first_err, &err);
    }
    if (c->state == PGX_PREPARING) {
        PQclear(c->last);
        c->last = NULL;
        if (c->first_err != NULL) {
            ESC_LOG(ESC_LOG_ERROR, "PG-PREPARE", "conn=%s %s", c->name, err.message);
            PQclear(c->first_err);
            c->first_err = NULL;
            go_down(c, "prepare failed");
            return;
        }
        became_ready(c);
        return;
    }
    c->state = PGX_READY;
    uv_timer_stop(&c->deadline);
    if (watch(c, UV_READABLE) != 0) {
        go_down(c, "cannot watch the socket");
        return;
    }
    finish_query(c, &err);
}

static void on_io(uv_poll_t *p, int status, int events)
{
    pgx_conn *c = p->data;
    if (c->state == PGX_CONNECTING) {
        connect_step(c);
        return;
    }
    if (status < 0) {
        go_down(c, uv_strerror(status));
        return;
    }
    if (events & UV_WRITABLE) {
        int f = PQflush(c->conn);
        if (f < 0) {
            go_down(c, "flush failed");
            return;
        }
        if (f == 0 && watch(c, UV_READABLE) != 0) {
            go_down(c, "cannot watch the socket");
            return;
        }
    }
    if (events & UV_READABLE) {
        on_readable(c);
    }
}

int pgx_query(pgx_conn *c, const char *stmt, const char *sql, int nparams,
              const char *const *values, pgx_result_cb cb, void *arg)
{
    if (c->state != PGX_READY) {
        return c->state == PGX_BUSY ? ESC_EBUSY : ESC_EUNAVAILABLE;
    }
    int ok = stmt != NULL ? PQsendQueryPrepared(c->conn, stmt, nparams, values, NULL, NULL, 0)
                          : PQsendQueryParams(c->conn, sql, nparams, NULL, values, NULL, NULL, 0);
    if (!ok) {
        ESC_LOG(ESC_LOG_WARN, "PG-SEND", "conn=%s %s", c->name, PQerrorMessage(c->conn));
        return ESC_EUNAVAILABLE;
    }
    c->state = PGX_BUSY;
    c->cb = cb;
    c->cb_arg = arg;
    start_deadline(c, c->query_timeout_ms);
    if (watch(c, UV_READABLE | UV_WRITABLE) != 0) {
        /* the query was sent: its outcome must be reported through cb */
        go_down(c, "cannot watch the socket");
    }
    return 0;
}

/* One of the handles pgx_close closed is closed; the last calls the owner. */
static void closed_one(pgx_conn *c)
{
    if (--c->closing_handles == 0 && c->user_close_cb != NULL) {
        c->user_close_cb((uv_handle_t *)&c->poll);
    }
}

static void on_deadline_closed(uv_handle_t *h)
{
    closed_one(h->data);
}

bool pgx_close(pgx_conn *c, uv_close_cb close_cb)
{
    if (c->state == PGX_BUSY) {
        pgx_err err;
        memset(&err, 0, sizeof err);
        err.code = ESC_ECLOSED;
        err.conn_lost = true;
        copy(err.message, sizeof err.message, "connection closed");
        finish_query(c, &err);
    }
    c->state = PGX_CLOSING;
    c->state_cb = NULL;
    if (c->conn != NULL) {
        PQfinish(c->conn);
        c->conn = NULL;
    }
    free(c->dsn);
    c->dsn = NULL;
    c->user_close_cb = close_cb;
    c->closing_handles = 0;
    if (c->poll_inited) {
        if (!uv_is_closing((uv_handle_t *)&c->poll)) {
            uv_poll_stop(&c->poll);
            uv_close((uv_handle_t *)&c->poll, on_poll_closed);
        }
        c->closing_handles++; /* on_poll_closed counts it, closing or not */
    }
    if (c->deadline_inited) {
        c->deadline_inited = false;
        uv_close((uv_handle_t *)&c->deadline, on_deadline_closed);
        c->closing_handles++;
    }
    return c->closing_handles > 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * node_db.c - see node_db.h.
 */
#include "node_db.h"

#include <stdio.h>
#include <stdlib.h>

#include "escrow_errors.h"
#include "log.h"
#include "schema_version.h"
#include "node_commit.h"
#include "node_lookup.h"
#include "node_metrics.h"

/* A lost connection is tried again after this long. */
#define NODE_DB_RECONNECT_MS 100
/* A commit with no answer after this long is given up and its batch settled
 * like one whose connection was lost (reconciled on the next connection): a
 * primary that hangs without closing its connections must not hold a
 * batch's buyers for longer. A healthy group commit takes milliseconds. */
#define NODE_DB_COMMIT_TIMEOUT_MS 10000

static void on_reconnect_timer(uv_timer_t *t)
{
    node *n = t->data;
    for (int i = 0; i < n->nstreams; i++) {
        pgx_reconnect(&n->streams[i].conn);
    }
    pgx_reconnect(&n->query_conn);
}

/* The commit stream whose connection c is, or NULL (the query connection). */
static node_stream *stream_of(node *n, const pgx_conn *c)
{
    for (int i = 0; i < n->nstreams; i++) {
        if (&n->streams[i].conn == c) {
            return &n->streams[i];
        }
    }
    return NULL;
}

/* Every commit connection is connected (up) or has checked the schema. */
static bool all_streams(const node *n, bool checked)
{
    for (int i = 0; i < n->nstreams; i++) {
        const node_stream *st = &n->streams[i];
        if (checked ? !st->schema_ok : !pgx_connected(&st->conn)) {
            return false;
        }
    }
    return true;
}

/* The schema is not one this node runs on (schema_version.h): stop. The
 * node cannot commit anything on it, so requests that wait for a commit
 * would wait for ever: when some do, the process ends at once (none of
 * them was acknowledged). */
static void refuse_schema(node *n, const char *msg)
{
    ESC_LOG(ESC_LOG_ERROR, "SEG-SCHEMA", "%s", msg);
    n->exit_code = 1;
    if (!node_commit_idle(n) || n->query_busy) {
        ESC_LOG(ESC_LOG_ERROR, "SEG-STOP",
                "exiting now: requests waiting for a commit were "
                "never acknowledged");
        esc_log_flush_repeats();
        exit(1);
    }
    node_stop(n);
}

static void on_schema(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    node_stream *st = arg;
    node *n = st->n;
    int db = 0, bin = schema_version_binary();
    char msg[512];
    if (schema_version_read(err->code == 0 ? res : NULL, err->sqlstate, &db) != 0) {
        if (err->conn_lost) {
            return; /* the state callback reconnects, and the check runs again */
        }
        snprintf(msg, sizeof msg, "cannot read the schema version: %s", err->message);
        refuse_schema(n, msg);
        return;
    }
    schema_verdict v = schema_version_compat(db, bin);
    schema_version_message(v, db, bin, "escrow-segment", msg, sizeof msg);
    if (!schema_version_runs(v)) {
        refuse_schema(n, msg);
        return;
    }
    if (v == SCHEMA_NEXT && !n->schema_noted) {
        ESC_LOG(ESC_LOG_WARN, "SEG-SCHEMA", "%s", msg);
        n->schema_noted = true;
    }
    st->schema_ok = true;
    n->schema_ok = all_streams(n, true);
    node_commit_conn_up(st);
}

static void on_db_state(pgx_conn *c, bool up, void *arg)
{
    node *n = arg;
    node_stream *st = stream_of(n, c);
    if (st == NULL || !up || all_streams(n, false)) {
        /* the commit connections count as one: up when all are */
        node_metrics_db(n, st != NULL ? "commit" : "query", up);
    }
    if (st != NULL) {
        st->schema_ok = false;
        n->schema_ok = false;
    }
    if (!up) {
        if (!n->stopping && !uv_is_active((uv_handle_t *)&n->reconnect_timer)) {
            uv_timer_start(&n->reconnect_timer, on_reconnect_timer, NODE_DB_RECONNECT_MS, 0);
        }
        if (c == &n->query_conn) {
            n->query_busy = false;
        }
        return;
    }
    if (st != NULL) {
        /* every connection checks the schema before the first commit */
        if (pgx_query(c, NULL, SCHEMA_VERSION_SQL, 0, NULL, on_schema, st) != 0) {
            ESC_LOG(ESC_LOG_WARN, "SEG-SCHEMA", "cannot send the schema check; reconnecting");
            pgx_drop(c);
        }
    } else {
        node_lookup_kick(n);
    }
}

int node_db_open(node *n)
{
    if (uv_timer_init(n->loop, &n->reconnect_timer) != 0) {
        return ESC_EIO;
    }
    n->handles_open++;
    n->reconnect_timer.data = n;
    int rc = 0;
    for (int i = 0; i < n->nstreams && rc == 0; i++) {
        pgx_conn *c = &n->streams[i].conn;
        rc = pgx_open(n->loop, c, n->cfg.dsn, "commit", SEG_STMT_COMMIT, SEG_SQL_COMMIT,
                      SEG_COMMIT_NPARAMS, on_db_state, n);
        if (rc == 0) {
            pgx_set_query_timeout(c, NODE_DB_COMMIT_TIMEOUT_MS);
        }
    }
    if (rc == 0) {
        rc = pgx_open(n->loop, &n->query_conn, n->cfg.dsn, "query", NULL, NULL, 0, on_db_state, n);
    }
    return rc;
}

static void on_timer_closed(uv_handle_t *h)
{
    node *n = h->data;
    n->handles_open--;
}

static void on_conn_closed(uv_handle_t *h)
{
    pgx_conn *c = h->data;
    node *n = c->state_arg;
    n->handles_open--;
}

void node_db_close(node *n)
{
    uv_close((uv_handle_t *)&n->reconnect_timer, on_timer_closed);
    for (int i = 0; i < n->nstreams; i++) {
        if (pgx_close(&n->streams[i].conn, on_conn_closed)) {
            n->handles_open++;
        }
    }
    if (pgx_close(&n->query_conn, on_conn_closed)) {
        n->handles_open++;
    }
}

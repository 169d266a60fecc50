/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pgx.h - one asynchronous libpq connection on a libuv loop.
 *
 * The connection's socket is watched with uv_poll (PQsocket); a query is
 * sent with PQsendQueryParams/PQsendQueryPrepared, flushed without blocking,
 * and its results collected as they arrive, so the loop never waits for
 * PostgreSQL. One query at a time per connection (callers queue); a node
 * uses a small fixed number of connections.
 *
 * Errors are translated once, here (at the edge): a pgx_err keeps the
 * SQLSTATE, the constraint name and the primary message, and says whether
 * the connection itself was lost (then the outcome of the query is unknown:
 * the caller must reconcile before it answers anyone).
 */
#ifndef ESC_PGX_H
#define ESC_PGX_H

#include <stdbool.h>

#include <libpq-fe.h>
#include <uv.h>

typedef struct pgx_err {
    int code;            /* 0, ESC_EDB (statement failed) or ESC_EUNAVAILABLE (connection) */
    bool conn_lost;      /* the outcome of the query is unknown */
    char sqlstate[6];    /* e.g. "23505", "ES001"; "" when none */
    char constraint[64]; /* e.g. "holds_idempotency_key"; "" when none */
    char message[256];
} pgx_err;

typedef struct pgx_conn pgx_conn;
/* res is the last PGresult of the query (owned by pgx, valid during the
 * callback; NULL on error); err->code == 0 on success. */
typedef void (*pgx_result_cb)(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg);
/* The connection became usable (up = true, after pgx_open or a reconnect)
 * or was lost / could not be established (up = false; a query in progress
 * has already been failed with conn_lost). The owner decides when to call
 * pgx_reconnect (backoff). */
typedef void (*pgx_state_cb)(pgx_conn *c, bool up, void *arg);

struct pgx_conn {
    uv_loop_t *loop; /* borrowed */
    PGconn *conn;    /* owned */
    uv_poll_t poll;  /* embedded */
    bool poll_inited;
    char *dsn;        /* owned */
    const char *name; /* borrowed, for logs */
    int state;        /* PGX_* */
    pgx_result_cb cb;
    void *cb_arg;
    PGresult *last;      /* owned until the callback returns */
    PGresult *first_err; /* owned */
    pgx_state_cb state_cb;
    void *state_arg;
    bool reconnect_pending; /* start connecting once the old poll handle closed */
    int repoll_events;      /* connecting: watch the new socket for these once closed */
    uv_close_cb user_close_cb;
    uv_timer_t deadline; /* embedded: bounds a connection attempt and a query */
    bool deadline_inited;
    int closing_handles; /* pgx_close: handles whose close callback is pending */
    unsigned host_shift; /* attempts start at this host of a multi-host DSN */
    uint32_t query_timeout_ms;
    const char *prepare_name; /* statement prepared on every (re)connect, or NULL */
    const char *prepare_sql;
    int prepare_nparams;
};

enum { PGX_DOWN = 0, PGX_CONNECTING, PGX_PREPARING, PGX_READY, PGX_BUSY, PGX_CLOSING };

/* A connection attempt that has not finished after the DSN's connect_timeout
 * (PGX_CONNECT_TIMEOUT_S without one) is given up: libpq does not enforce
 * connect_timeout on non-blocking connections, and a server that accepts TCP
 * but never answers (a stopped process, a frozen machine) would hold the
 * attempt forever. The next attempt starts at the next host of a multi-host
 * DSN, so a hung first host does not hide the others. */
#define PGX_CONNECT_TIMEOUT_S 10
/* A query with no answer after this long (pgx_set_query_timeout, else this
 * default) counts as a lost connection (the caller reconciles, as for any
 * lost connection): a server that stopped answering without closing the
 * connection must not hold the caller forever. The default is far above any
 * healthy query escrow sends (loads and the invariant monitor's scans
 * included); a node's commit connection uses a shorter one. */
#define PGX_QUERY_TIMEOUT_MS 60000

/* Starts connecting (non-blocking); state_cb reports the outcome. If
 * prepare_name is set, that statement is prepared on every connection before
 * it counts as up. Returns 0 or ESC_ENOMEM. */
int pgx_open(uv_loop_t *loop, pgx_conn *c, const char *dsn, const char *name,
             const char *prepare_name, const char *prepare_sql, int prepare_nparams,
             pgx_state_cb state_cb, void *state_arg);
/* Starts re-establishing a DOWN connection. No-op unless DOWN. */
void pgx_reconnect(pgx_conn *c);
bool pgx_ready(const pgx_conn *c);
/* Connected: idle or running a query (readiness checks). */
bool pgx_connected(const pgx_conn *c);
/* A query of c with no answer after ms is given up (default PGX_QUERY_TIMEOUT_MS). */
void pgx_set_query_timeout(pgx_conn *c, uint32_t ms);

/* Sends a query (stmt == NULL: sql with params; else the prepared statement).
 * Values are text-format parameters (borrowed until this call returns).
 * Returns 0 and calls cb exactly once later, or an error and never calls cb. */
int pgx_query(pgx_conn *c, const char *stmt, const char *sql, int nparams,
              const char *const *values, pgx_result_cb cb, void *arg);

/* Drops an idle connection as if the network had lost it: state_cb(false)
 * runs and the owner reconnects as usual. For failpoints in tests. */
void pgx_drop(pgx_conn *c);

/* Closes the connection; a query in progress is failed. Returns true if
 * close_cb((uv_handle_t *)&c->poll) will run from the loop (always after a
 * successful pgx_open), false if the connection is already fully closed
 * (close_cb is never called then). */
bool pgx_close(pgx_conn *c, uv_close_cb close_cb);

/* Fills err from a failed PGresult (or the connection when res is NULL). */
void pgx_err_from(PGconn *conn, const PGresult *res, pgx_err *err);

#endif

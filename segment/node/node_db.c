/*
 * node_db.c - see node_db.h.
 */
#include "node_db.h"

#include "escrow_errors.h"
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
    pgx_reconnect(&n->commit_conn);
    pgx_reconnect(&n->query_conn);
}

static void on_db_state(pgx_conn *c, bool up, void *arg)
{
    node *n = arg;
    node_metrics_db(n, c == &n->commit_conn ? "commit" : "query", up);
    if (!up) {
        if (!n->stopping && !uv_is_active((uv_handle_t *)&n->reconnect_timer)) {
            uv_timer_start(&n->reconnect_timer, on_reconnect_timer, NODE_DB_RECONNECT_MS, 0);
        }
        if (c == &n->query_conn) {
            n->query_busy = false;
        }
        return;
    }
    if (c == &n->commit_conn) {
        node_commit_conn_up(n);
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
    int rc = pgx_open(n->loop, &n->commit_conn, n->cfg.dsn, "commit", SEG_STMT_COMMIT,
                      SEG_SQL_COMMIT, SEG_COMMIT_NPARAMS, on_db_state, n);
    if (rc == 0) {
        pgx_set_query_timeout(&n->commit_conn, NODE_DB_COMMIT_TIMEOUT_MS);
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
    if (pgx_close(&n->commit_conn, on_conn_closed)) {
        n->handles_open++;
    }
    if (pgx_close(&n->query_conn, on_conn_closed)) {
        n->handles_open++;
    }
}

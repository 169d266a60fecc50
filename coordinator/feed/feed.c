/* SPDX-License-Identifier: Apache-2.0 */
/*
 * feed.c - see escrow_feed.h; the ordering scheme is explained in
 * common/schema/migrations/0006_event_feed.sql.
 *
 * Synchronous libpq on one connection. Polling, not LISTEN/NOTIFY: a NOTIFY
 * would have to be sent from the commit path (escrow_commit_batch), and a
 * notification would not make a row deliverable earlier anyway (it must
 * also wait for the oldest running transaction). An idle feed asks every
 * poll_interval_ms with one indexed query.
 *
 * Invariants: committed <= position (feed order); position only moves to
 * the last row of a batch that parsed completely; every row ever returned
 * had txid < the xmin of the snapshot that read it.
 */
#include "escrow_feed.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <libpq-fe.h>

#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:feed */ "

struct feed {
    PGconn *conn; /* owned */
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char consumer[FEED_CONSUMER_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1]; /* "" = every item */
    int poll_interval_ms;
    const volatile sig_atomic_t *stop; /* borrowed, may be NULL */
    feed_cursor committed;
    feed_cursor position;
    char why[FEED_WHY_MAX];
};

/* The rows after the cursor that are final: their transaction id is below
 * the oldest transaction still running, so nothing can commit before them
 * any more. The xmin is taken from this statement's own snapshot. The
 * ORDER BY names the table's columns: a bare "txid" would be the text output
 * column and sort 1000 before 789. */
static const char sql_poll[] =
    TAG "SELECT event_id, txid::text AS txid_text, item_id, kind, qty, segment_id, hold_id, "
        "buyer_id, actor, "
        "to_char(at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"') "
        "FROM outbox WHERE tenant_id = $1 AND ($2::text IS NULL OR item_id = $2) "
        "AND (txid, event_id) > ($3::xid8, $4::bigint) "
        "AND txid < pg_snapshot_xmin(pg_current_snapshot()) "
        "ORDER BY outbox.txid, outbox.event_id LIMIT $5";
enum { P_ID, P_TXID, P_ITEM, P_KIND, P_QTY, P_SEG, P_HOLD, P_BUYER, P_ACTOR, P_AT, P_COLS_ };

/* Creating is a no-op for an existing consumer; the SELECT then reads it. */
static const char sql_create[] =
    TAG "INSERT INTO feed_consumers (tenant_id, consumer, item_id, cursor_txid, cursor_event_id) "
        "VALUES ($1, $2, $3, $4::xid8, $5) ON CONFLICT (tenant_id, consumer) DO NOTHING";
static const char sql_load[] =
    TAG "SELECT item_id, cursor_txid::text, cursor_event_id FROM feed_consumers "
        "WHERE tenant_id = $1 AND consumer = $2";
/* The position of one event, only once it is final (see sql_poll). */
static const char sql_event_pos[] =
    TAG "SELECT txid::text FROM outbox WHERE tenant_id = $1 AND event_id = $2 "
        "AND txid < pg_snapshot_xmin(pg_current_snapshot())";
/* The same, within an item filter ($3 NULL: none): where a reader resumes
 * (feed_seek) or commits (feed_commit_event). */
static const char sql_event_at[] =
    TAG "SELECT txid::text FROM outbox WHERE tenant_id = $1 AND event_id = $2 "
        "AND ($3::text IS NULL OR item_id = $3) "
        "AND txid < pg_snapshot_xmin(pg_current_snapshot())";
/* Only forward. n_moved 0 and n_exists 1: the cursor was already there. */
static const char sql_commit[] =
    TAG "WITH u AS (UPDATE feed_consumers SET cursor_txid = $3::xid8, cursor_event_id = $4, "
        "updated_at = now() WHERE tenant_id = $1 AND consumer = $2 "
        "AND (cursor_txid, cursor_event_id) < ($3::xid8, $4::bigint) RETURNING 1) "
        "SELECT (SELECT count(*) FROM u), "
        "(SELECT count(*) FROM feed_consumers WHERE tenant_id = $1 AND consumer = $2)";

static int failf(char why[FEED_WHY_MAX], int rc, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

static int failf(char why[FEED_WHY_MAX], int rc, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, FEED_WHY_MAX, fmt, ap);
    va_end(ap);
    return rc;
}

/* libpq's error, once, at the edge: message and SQLSTATE into why. */
static int db_fail(PGconn *conn, const PGresult *res, char why[FEED_WHY_MAX])
{
    bool gone = PQstatus(conn) != CONNECTION_OK;
    const char *msg = res != NULL ? PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY) : NULL;
    const char *state = res != NULL ? PQresultErrorField(res, PG_DIAG_SQLSTATE) : NULL;
    if (msg == NULL) {
        msg = PQerrorMessage(conn);
    }
    size_t n = strcspn(msg, "\n");
    return failf(why, gone ? ESC_EUNAVAILABLE : ESC_EDB, "database: %.*s (SQLSTATE %s)", (int)n,
                 msg, state != NULL ? state : "?");
}

/* Runs sql; 0 and *out (PQclear) for a command or rows, else db_fail. */
static int query(PGconn *conn, const char *sql, int nparams, const char *const *params,
                 PGresult **out, char why[FEED_WHY_MAX])
{
    PGresult *res = PQexecParams(conn, sql, nparams, NULL, params, NULL, NULL, 0);
    ExecStatusType st = res != NULL ? PQresultStatus(res) : PGRES_FATAL_ERROR;
    if (st != PGRES_TUPLES_OK && st != PGRES_COMMAND_OK) {
        int rc = db_fail(conn, res, why);
        PQclear(res);
        return rc;
    }
    *out = res;
    return 0;
}

/* A bigint cell that may be NULL (read as 0). */
static int nullable_i64(const PGresult *res, int row, int col, int64_t *out)
{
    if (pg_result_null(res, row, col)) {
        *out = 0;
        return 0;
    }
    return pg_result_i64(res, row, col, out);
}

static bool name_valid(const char *s, size_t max)
{
    size_t n = s != NULL ? strlen(s) : 0;
    if (n == 0 || n > max) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '!' || s[i] > '~') {
            return false;
        }
    }
    return true;
}

int feed_cursor_cmp(feed_cursor a, feed_cursor b)
{
    if (a.txid != b.txid) {
        return a.txid < b.txid ? -1 : 1;
    }
    if (a.event_id != b.event_id) {
        return a.event_id < b.event_id ? -1 : 1;
    }
    return 0;
}

feed_cursor feed_committed(const feed *f)
{
    return f->committed;
}

feed_cursor feed_position(const feed *f)
{
    return f->position;
}

const char *feed_why(const feed *f)
{
    return f->why;
}

static int check_opts(const feed_opts *o, char why[FEED_WHY_MAX])
{
    if (o == NULL || o->dsn == NULL || o->dsn[0] == '\0') {
        return failf(why, ESC_EINVAL, "no database given");
    }
    if (!name_valid(o->tenant, ESC_TENANT_LEN_MAX)) {
        return failf(why, ESC_EINVAL, "the tenant must be 1..%d printable ASCII characters",
                     ESC_TENANT_LEN_MAX);
    }
    if (!name_valid(o->consumer, FEED_CONSUMER_LEN_MAX)) {
        return failf(why, ESC_EINVAL, "the consumer must be 1..%d printable ASCII characters",
                     FEED_CONSUMER_LEN_MAX);
    }
    if (o->item != NULL && o->item[0] != '\0' && !name_valid(o->item, ESC_ITEM_LEN_MAX)) {
        return failf(why, ESC_EINVAL, "the item must be 1..%d printable ASCII characters",
                     ESC_ITEM_LEN_MAX);
    }
    if (o->start != FEED_START_BEGINNING &&
        (o->start != FEED_START_AFTER || o->start_after_event_id < 1)) {
        return failf(why, ESC_EINVAL, "the start must be the beginning or after an event id >= 1");
    }
    if (o->poll_interval_ms != 0 && (o->poll_interval_ms < FEED_POLL_INTERVAL_MS_MIN ||
                                     o->poll_interval_ms > FEED_POLL_INTERVAL_MS_MAX)) {
        return failf(why, ESC_EINVAL, "the poll interval must be %d..%d ms",
                     FEED_POLL_INTERVAL_MS_MIN, FEED_POLL_INTERVAL_MS_MAX);
    }
    return 0;
}

static int connect_db(const char *dsn, PGconn **out, char why[FEED_WHY_MAX])
{
    /* defaults before the DSN, so the DSN wins */
    const char *const keys[] = {"connect_timeout", "application_name", "dbname", NULL};
    const char *const vals[] = {"10", "escrow-feed", dsn, NULL};
    PGconn *conn = PQconnectdbParams(keys, vals, 1);
    if (conn == NULL) {
        return failf(why, ESC_ENOMEM, "cannot connect to PostgreSQL: out of memory");
    }
    if (PQstatus(conn) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(conn);
        failf(why, ESC_EUNAVAILABLE, "cannot connect to PostgreSQL: %.*s", (int)strcspn(msg, "\n"),
              msg);
        PQfinish(conn);
        return ESC_EUNAVAILABLE;
    }
    *out = conn;
    return 0;
}

/* The cursor a new consumer starts at. */
static int start_cursor(feed *f, const feed_opts *o, feed_cursor *out, char why[FEED_WHY_MAX])
{
    feed_cursor c = {0, 0};
    if (o->start == FEED_START_AFTER) {
        char id[24];
        snprintf(id, sizeof id, "%" PRId64, o->start_after_event_id);
        const char *params[] = {f->tenant, id};
        PGresult *res = NULL;
        int rc = query(f->conn, sql_event_pos, 2, params, &res, why);
        if (rc != 0) {
            return rc;
        }
        if (PQntuples(res) != 1) {
            PQclear(res);
            return failf(why, ESC_ENOT_FOUND,
                         "tenant %s has no event %s (or its transaction has not ended yet)",
                         f->tenant, id);
        }
        rc = pg_result_u64(res, 0, 0, &c.txid);
        PQclear(res);
        if (rc != 0) {
            return failf(why, ESC_EDB, "unexpected txid of event %s", id);
        }
        c.event_id = o->start_after_event_id;
    }
    *out = c;
    return 0;
}

/* Creates the consumer unless it exists; then loads its filter and cursor. */
static int create_or_load(feed *f, const feed_opts *o, bool *created, char why[FEED_WHY_MAX])
{
    feed_cursor start = {0, 0};
    int rc = start_cursor(f, o, &start, why);
    if (rc != 0) {
        return rc;
    }
    char txid[24], eid[24];
    snprintf(txid, sizeof txid, "%" PRIu64, start.txid);
    snprintf(eid, sizeof eid, "%" PRId64, start.event_id);
    const char *params[] = {f->tenant, f->consumer, f->item[0] != '\0' ? f->item : NULL, txid, eid};
    PGresult *res = NULL;
    rc = query(f->conn, sql_create, 5, params, &res, why);
    if (rc != 0) {
        return rc;
    }
    *created = strcmp(PQcmdTuples(res), "1") == 0;
    PQclear(res);
    rc = query(f->conn, sql_load, 2, params, &res, why);
    if (rc != 0) {
        return rc;
    }
    int64_t ev = 0;
    if (PQntuples(res) != 1 || PQnfields(res) != 3 ||
        pg_result_u64(res, 0, 1, &f->committed.txid) != 0 || pg_result_i64(res, 0, 2, &ev) != 0) {
        rc = failf(why, ESC_EDB, "consumer %s: unexpected row in feed_consumers", f->consumer);
    } else if (strcmp(pg_result_text_or(res, 0, 0, ""), f->item) != 0) {
        rc = failf(why, ESC_ECONFLICT,
                   "consumer %s of tenant %s exists with item filter '%s', not '%s' (a cursor "
                   "only means something for its filter; use another consumer name)",
                   f->consumer, f->tenant, pg_result_text_or(res, 0, 0, ""), f->item);
    }
    PQclear(res);
    f->committed.event_id = ev;
    f->position = f->committed;
    return rc;
}

int feed_open(const feed_opts *o, feed **out, bool *created, char why[FEED_WHY_MAX])
{
    why[0] = '\0';
    int rc = check_opts(o, why);
    if (rc != 0) {
        return rc;
    }
    feed *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return failf(why, ESC_ENOMEM, "out of memory");
    }
    memcpy(f->tenant, o->tenant, strlen(o->tenant) + 1);
    memcpy(f->consumer, o->consumer, strlen(o->consumer) + 1);
    if (o->item != NULL) {
        memcpy(f->item, o->item, strlen(o->item) + 1);
    }
    f->poll_interval_ms =
        o->poll_interval_ms != 0 ? o->poll_interval_ms : FEED_POLL_INTERVAL_MS_DEFAULT;
    f->stop = o->stop;
    bool is_new = false;
    rc = connect_db(o->dsn, &f->conn, why);
    rc = rc != 0 ? rc : create_or_load(f, o, &is_new, why);
    if (rc != 0) {
        feed_close(f);
        return rc;
    }
    if (created != NULL) {
        *created = is_new;
    }
    *out = f;
    return 0;
}

void feed_close(feed *f)
{
    if (f == NULL) {
        return;
    }
    if (f->conn != NULL) {
        PQfinish(f->conn);
    }
    free(f);
}

/* A connection lost earlier is re-established here, once per call. */
static int ensure_conn(feed *f)
{
    if (PQstatus(f->conn) == CONNECTION_OK) {
        return 0;
    }
    PQreset(f->conn);
    if (PQstatus(f->conn) != CONNECTION_OK) {
        const char *msg = PQerrorMessage(f->conn);
        return failf(f->why, ESC_EUNAVAILABLE, "cannot reconnect to PostgreSQL: %.*s",
                     (int)strcspn(msg, "\n"), msg);
    }
    return 0;
}

static int parse_row(const PGresult *res, int r, feed_event *e)
{
    int rc = pg_result_i64(res, r, P_ID, &e->event_id);
    rc = rc != 0 ? rc : pg_result_u64(res, r, P_TXID, &e->txid);
    rc = rc != 0 ? rc : pg_result_text_copy(res, r, P_ITEM, e->item, sizeof e->item);
    rc = rc != 0 ? rc : pg_result_text_copy(res, r, P_KIND, e->kind, sizeof e->kind);
    rc = rc != 0 ? rc : pg_result_i64(res, r, P_QTY, &e->qty);
    rc = rc != 0 ? rc : nullable_i64(res, r, P_SEG, &e->segment_id);
    rc = rc != 0 ? rc : nullable_i64(res, r, P_HOLD, &e->hold_id);
    rc = rc != 0 ? rc : pg_result_text_copy(res, r, P_BUYER, e->buyer, sizeof e->buyer);
    rc = rc != 0 ? rc : pg_result_text_copy(res, r, P_ACTOR, e->actor, sizeof e->actor);
    rc = rc != 0 ? rc : pg_result_text_copy(res, r, P_AT, e->at, sizeof e->at);
    return rc;
}

/* One query: up to cap final events after the position. */
static int fetch(feed *f, feed_event *events, int cap, int *n_out)
{
    int rc = ensure_conn(f);
    if (rc != 0) {
        return rc;
    }
    char txid[24], eid[24], limit[16];
    snprintf(txid, sizeof txid, "%" PRIu64, f->position.txid);
    snprintf(eid, sizeof eid, "%" PRId64, f->position.event_id);
    snprintf(limit, sizeof limit, "%d", cap);
    const char *params[] = {f->tenant, f->item[0] != '\0' ? f->item : NULL, txid, eid, limit};
    PGresult *res = NULL;
    rc = query(f->conn, sql_poll, 5, params, &res, f->why);
    if (rc != 0) {
        return rc;
    }
    int n = PQntuples(res);
    if (PQnfields(res) != P_COLS_ || n > cap) {
        rc = failf(f->why, ESC_EDB, "unexpected answer to the feed query");
    }
    for (int r = 0; rc == 0 && r < n; r++) {
        if (parse_row(res, r, &events[r]) != 0) {
            rc = failf(f->why, ESC_EDB, "unexpected outbox row %d of %d", r + 1, n);
        }
    }
    PQclear(res);
    if (rc != 0) {
        return rc;
    }
    if (n > 0) {
        f->position.txid = events[n - 1].txid;
        f->position.event_id = events[n - 1].event_id;
    }
    *n_out = n;
    return 0;
}

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static bool stopped(const feed *f)
{
    return f->stop != NULL && *f->stop != 0;
}

/* The feed position of the final event event_id of tenant (within item,
 * "" = any). Returns 0 and *out, ESC_ENOT_FOUND, or db_fail's code. */
static int event_cursor(PGconn *conn, const char *tenant, const char *item, int64_t event_id,
                        feed_cursor *out, char why[FEED_WHY_MAX])
{
    char id[24];
    snprintf(id, sizeof id, "%" PRId64, event_id);
    const char *params[] = {tenant, id, item[0] != '\0' ? item : NULL};
    PGresult *res = NULL;
    int rc = query(conn, sql_event_at, 3, params, &res, why);
    if (rc != 0) {
        return rc;
    }
    feed_cursor c = {0, event_id};
    if (PQntuples(res) != 1) {
        rc = failf(why, ESC_ENOT_FOUND,
                   "tenant %s has no event %s%s%s (or its transaction has not ended yet)", tenant,
                   id, item[0] != '\0' ? " of item " : "", item);
    } else if (pg_result_u64(res, 0, 0, &c.txid) != 0) {
        rc = failf(why, ESC_EDB, "unexpected txid of event %s", id);
    }
    PQclear(res);
    if (rc == 0) {
        *out = c;
    }
    return rc;
}

int feed_seek(feed *f, int64_t event_id)
{
    f->why[0] = '\0';
    if (event_id < 1) {
        return failf(f->why, ESC_EINVAL, "feed_seek: event ids start at 1");
    }
    int rc = ensure_conn(f);
    feed_cursor c;
    rc = rc != 0 ? rc : event_cursor(f->conn, f->tenant, f->item, event_id, &c, f->why);
    if (rc != 0) {
        return rc;
    }
    f->position = feed_cursor_cmp(c, f->committed) < 0 ? f->committed : c;
    return 0;
}

/* feed_commit_event's work on an open connection: the consumer's filter,
 * the event's position, the forward-only update. */
static int commit_event_on(PGconn *conn, const feed_opts *o, int64_t event_id, bool *moved,
                           char why[FEED_WHY_MAX])
{
    const char *params[] = {o->tenant, o->consumer, NULL, NULL};
    PGresult *res = NULL;
    int rc = query(conn, sql_load, 2, params, &res, why);
    if (rc != 0) {
        return rc;
    }
    char item[ESC_ITEM_LEN_MAX + 1] = "";
    if (PQntuples(res) != 1) {
        rc = failf(why, ESC_ENOT_FOUND, "tenant %s has no consumer %s", o->tenant, o->consumer);
    } else if (pg_result_text_copy(res, 0, 0, item, sizeof item) != 0) {
        rc = failf(why, ESC_EDB, "consumer %s: unexpected row in feed_consumers", o->consumer);
    }
    PQclear(res);
    feed_cursor c;
    rc = rc != 0 ? rc : event_cursor(conn, o->tenant, item, event_id, &c, why);
    if (rc != 0) {
        return rc;
    }
    char txid[24], eid[24];
    snprintf(txid, sizeof txid, "%" PRIu64, c.txid);
    snprintf(eid, sizeof eid, "%" PRId64, c.event_id);
    params[2] = txid;
    params[3] = eid;
    if ((rc = query(conn, sql_commit, 4, params, &res, why)) != 0) {
        return rc;
    }
    int64_t n_moved = 0, exists = 0;
    if (PQntuples(res) != 1 || pg_result_i64(res, 0, 0, &n_moved) != 0 ||
        pg_result_i64(res, 0, 1, &exists) != 0) {
        rc = failf(why, ESC_EDB, "unexpected answer to the cursor commit");
    } else if (exists == 0) {
        rc = failf(why, ESC_ENOT_FOUND, "tenant %s has no consumer %s", o->tenant, o->consumer);
    } else if (moved != NULL) {
        *moved = n_moved > 0;
    }
    PQclear(res);
    return rc;
}

int feed_commit_event(const feed_opts *o, int64_t event_id, bool *moved, char why[FEED_WHY_MAX])
{
    why[0] = '\0';
    if (o == NULL || o->dsn == NULL || o->dsn[0] == '\0') {
        return failf(why, ESC_EINVAL, "no database given");
    }
    if (!name_valid(o->tenant, ESC_TENANT_LEN_MAX) ||
        !name_valid(o->consumer, FEED_CONSUMER_LEN_MAX)) {
        return failf(why, ESC_EINVAL, "the tenant and the consumer must be printable ASCII names");
    }
    if (event_id < 1) {
        return failf(why, ESC_EINVAL, "event ids start at 1");
    }
    PGconn *conn = NULL;
    int rc = connect_db(o->dsn, &conn, why);
    if (rc == 0) {
        rc = commit_event_on(conn, o, event_id, moved, why);
        PQfinish(conn);
    }
    return rc;
}

int feed_poll(feed *f, feed_event *events, int cap, int timeout_ms, int *n_out)
{
    f->why[0] = '\0';
    if (events == NULL || cap < 1 || cap > FEED_BATCH_MAX || timeout_ms < 0 ||
        timeout_ms > FEED_TIMEOUT_MS_MAX) {
        return failf(f->why, ESC_EINVAL, "feed_poll: cap must be 1..%d, timeout 0..%d ms",
                     FEED_BATCH_MAX, FEED_TIMEOUT_MS_MAX);
    }
    int64_t deadline = now_ms() + timeout_ms;
    for (;;) {
        int n = 0;
        int rc = fetch(f, events, cap, &n);
        if (rc != 0) {
            return rc;
        }
        int64_t left = deadline - now_ms();
        if (n > 0 || left <= 0 || stopped(f)) {
            *n_out = n;
            return 0;
        }
        int64_t wait = left < f->poll_interval_ms ? left : f->poll_interval_ms;
        struct timespec ts = {(time_t)(wait / 1000), (long)(wait % 1000) * 1000000L};
        /* EINTR (a signal) ends the nap early; the loop then looks at stop */
        (void)nanosleep(&ts, NULL);
        if (stopped(f)) {
            *n_out = 0;
            return 0;
        }
    }
}

int feed_commit(feed *f, const feed_event *ev)
{
    f->why[0] = '\0';
    if (ev == NULL) {
        return failf(f->why, ESC_EINVAL, "feed_commit: no event");
    }
    feed_cursor c = {ev->txid, ev->event_id};
    if (feed_cursor_cmp(c, f->position) > 0) {
        return failf(f->why, ESC_EINVAL,
                     "event %" PRId64 " is after the feed's position: it was never returned",
                     ev->event_id);
    }
    if (feed_cursor_cmp(c, f->committed) <= 0) {
        return 0; /* already committed: idempotent */
    }
    int rc = ensure_conn(f);
    if (rc != 0) {
        return rc;
    }
    char txid[24], eid[24];
    snprintf(txid, sizeof txid, "%" PRIu64, c.txid);
    snprintf(eid, sizeof eid, "%" PRId64, c.event_id);
    const char *params[] = {f->tenant, f->consumer, txid, eid};
    PGresult *res = NULL;
    rc = query(f->conn, sql_commit, 4, params, &res, f->why);
    if (rc != 0) {
        return rc;
    }
    int64_t exists = 0;
    if (PQntuples(res) != 1 || pg_result_i64(res, 0, 1, &exists) != 0) {
        rc = failf(f->why, ESC_EDB, "unexpected answer to the cursor commit");
    } else if (exists == 0) {
        rc = failf(f->why, ESC_ENOT_FOUND, "consumer %s of tenant %s no longer exists", f->consumer,
                   f->tenant);
    }
    PQclear(res);
    if (rc == 0) {
        f->committed = c;
    }
    return rc;
}

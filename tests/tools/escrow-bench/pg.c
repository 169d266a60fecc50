/* SPDX-License-Identifier: Apache-2.0 */
/*
 * pg.c - baselines A and B: the stock in PostgreSQL, decremented by one
 * conditional UPDATE per buyer, in autocommit (each statement is its own
 * durable transaction: fsync and synchronous_commit as the server has them,
 * which for tests/support/pg.sh is on).
 *
 *   A: one row,   UPDATE bench.stock SET available = available - 1
 *                 WHERE id = 1 AND available >= 1 RETURNING available
 *   B: o->rows rows holding the same item, each buyer on a random row.
 *
 * o->conns connections on one libuv loop (libpq in non-blocking mode,
 * PQsocket watched with uv_poll), one statement in flight on each. A row
 * back is a unit taken (BENCH_OK); no row is PostgreSQL's "no"
 * (BENCH_NO, measured with --sold-out).
 */
#include "bench.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <libpq-fe.h>

#include "clock.h"

#define PG_STMT "bench_take"
#define PG_SQL                                                                                     \
    "UPDATE bench.stock SET available = available - 1 WHERE id = $1 AND available >= 1 "           \
    "RETURNING available"
/* Units per row: enough that no window sells out (100 k tx/s for 10 min). */
#define PG_UNITS_PER_ROW 1000000000LL

typedef struct pg_run pg_run;

typedef struct pg_slot {
    pg_run *r;      /* borrowed */
    PGconn *conn;   /* owned */
    uv_poll_t poll; /* embedded */
    bool poll_inited;
    bool busy; /* a statement is in flight */
    bool dead; /* the connection failed: no more statements */
    int kind;  /* the answer of the statement in flight (BENCH_*) */
    int64_t sent_us;
    uint64_t rng;
} pg_slot;

struct pg_run {
    const bench_opts *o; /* borrowed */
    uv_loop_t loop;
    pg_slot *slots; /* owned, o->conns */
    bench_meter m;
    uv_timer_t stop_timer; /* embedded */
    bool stopping;
    bool closing;
    uint32_t busy;
    char first_error[256];
};

static int exec_ok(PGconn *c, const char *sql)
{
    PGresult *res = PQexec(c, sql);
    ExecStatusType st = PQresultStatus(res);
    int rc = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? 0 : -1;
    if (rc != 0) {
        fprintf(stderr, "escrow-bench: %s: %s", sql, PQerrorMessage(c));
    }
    PQclear(res);
    return rc;
}

/* A fresh bench.stock with o->rows rows (nothing available with --sold-out). */
static int setup_table(const bench_opts *o)
{
    PGconn *c = PQconnectdb(o->dsn);
    if (PQstatus(c) != CONNECTION_OK) {
        fprintf(stderr, "escrow-bench: connect: %s", PQerrorMessage(c));
        PQfinish(c);
        return -1;
    }
    char ins[256];
    snprintf(ins, sizeof ins,
             "INSERT INTO bench.stock SELECT g, %lld FROM generate_series(1, %u) g",
             o->sold_out ? 0LL : PG_UNITS_PER_ROW, o->rows);
    int rc = exec_ok(c, "SET client_min_messages = warning");
    rc = rc ? rc : exec_ok(c, "CREATE SCHEMA IF NOT EXISTS bench");
    rc = rc ? rc : exec_ok(c, "DROP TABLE IF EXISTS bench.stock");
    rc =
        rc ? rc
           : exec_ok(c, "CREATE TABLE bench.stock (id int PRIMARY KEY, available bigint NOT NULL)");
    rc = rc ? rc : exec_ok(c, ins);
    rc = rc ? rc : exec_ok(c, "VACUUM ANALYZE bench.stock");
    rc = rc ? rc : exec_ok(c, "CHECKPOINT");
    PQfinish(c);
    return rc;
}

static void slot_fail(pg_slot *s, const char *what)
{
    pg_run *r = s->r;
    if (r->first_error[0] == '\0') {
        snprintf(r->first_error, sizeof r->first_error, "%s: %s", what, PQerrorMessage(s->conn));
    }
    s->dead = true;
    if (s->busy) {
        s->busy = false;
        r->busy--;
    }
    (void)uv_poll_stop(&s->poll); /* always 0 for an initialised handle */
}

static void slot_send(pg_slot *s);

static void maybe_close(pg_run *r);

/* The statement in flight finished: count it and send the next. */
static void slot_done(pg_slot *s)
{
    pg_run *r = s->r;
    bench_meter_add(&r->m, s->kind, s->sent_us, esc_mono_us());
    s->busy = false;
    r->busy--;
    if (!r->stopping) {
        slot_send(s);
    }
    maybe_close(r);
}

static void slot_read(pg_slot *s)
{
    if (!PQconsumeInput(s->conn)) {
        slot_fail(s, "PQconsumeInput");
        return;
    }
    while (s->busy && !PQisBusy(s->conn)) {
        PGresult *res = PQgetResult(s->conn);
        if (res == NULL) {
            slot_done(s);
            return;
        }
        ExecStatusType st = PQresultStatus(res);
        if (st == PGRES_TUPLES_OK) {
            s->kind = PQntuples(res) == 1 ? BENCH_OK : BENCH_NO;
        } else {
            s->kind = BENCH_ERR;
            if (s->r->first_error[0] == '\0') {
                snprintf(s->r->first_error, sizeof s->r->first_error, "%s",
                         PQresultErrorMessage(res));
            }
        }
        PQclear(res);
    }
}

static void poll_cb(uv_poll_t *h, int status, int events)
{
    pg_slot *s = h->data;
    if (status < 0) {
        slot_fail(s, uv_strerror(status));
        return;
    }
    if (events & UV_WRITABLE) {
        int f = PQflush(s->conn);
        if (f < 0) {
            slot_fail(s, "PQflush");
            return;
        }
        if (f == 0 && uv_poll_start(&s->poll, UV_READABLE, poll_cb) != 0) {
            slot_fail(s, "uv_poll_start");
            return;
        }
    }
    if (events & UV_READABLE) {
        slot_read(s);
    }
}

static void slot_send(pg_slot *s)
{
    if (s->dead) {
        return;
    }
    char id[16];
    uint32_t rows = s->r->o->rows;
    s->rng = bench_mix64(s->rng);
    snprintf(id, sizeof id, "%u", rows <= 1 ? 1u : 1u + (uint32_t)(s->rng % rows));
    const char *vals[1] = {id};
    s->sent_us = esc_mono_us();
    s->kind = BENCH_ERR;
    if (!PQsendQueryPrepared(s->conn, PG_STMT, 1, vals, NULL, NULL, 0)) {
        slot_fail(s, "PQsendQueryPrepared");
        return;
    }
    s->busy = true;
    s->r->busy++;
    int f = PQflush(s->conn);
    if (f < 0) {
        slot_fail(s, "PQflush");
        return;
    }
    if (uv_poll_start(&s->poll, f == 1 ? UV_READABLE | UV_WRITABLE : UV_READABLE, poll_cb) != 0) {
        slot_fail(s, "uv_poll_start");
    }
}

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void maybe_close(pg_run *r)
{
    if (!r->stopping || r->busy > 0 || r->closing) {
        return;
    }
    r->closing = true;
    for (uint32_t i = 0; i < r->o->conns; i++) {
        if (r->slots[i].poll_inited) {
            uv_close((uv_handle_t *)&r->slots[i].poll, noop_close);
        }
    }
    uv_close((uv_handle_t *)&r->stop_timer, noop_close);
}

static void stop_cb(uv_timer_t *t)
{
    pg_run *r = t->data;
    r->stopping = true;
    maybe_close(r);
}

static int slot_open(pg_run *r, pg_slot *s, uint32_t i)
{
    s->r = r;
    s->rng = bench_mix64(0x70677267ULL + i);
    s->conn = PQconnectdb(r->o->dsn);
    if (PQstatus(s->conn) != CONNECTION_OK) {
        fprintf(stderr, "escrow-bench: connection %u: %s", i, PQerrorMessage(s->conn));
        return -1;
    }
    PGresult *res = PQprepare(s->conn, PG_STMT, PG_SQL, 1, NULL);
    int ok = PQresultStatus(res) == PGRES_COMMAND_OK;
    PQclear(res);
    if (!ok || PQsetnonblocking(s->conn, 1) != 0) {
        fprintf(stderr, "escrow-bench: prepare: %s", PQerrorMessage(s->conn));
        return -1;
    }
    if (uv_poll_init_socket(&r->loop, &s->poll, PQsocket(s->conn)) != 0) {
        fprintf(stderr, "escrow-bench: uv_poll_init_socket failed\n");
        return -1;
    }
    s->poll_inited = true;
    s->poll.data = s;
    return 0;
}

static int run_loop(pg_run *r)
{
    const bench_opts *o = r->o;
    for (uint32_t i = 0; i < o->conns; i++) {
        if (slot_open(r, &r->slots[i], i) != 0) {
            r->stopping = true;
            maybe_close(r);
            return -1;
        }
    }
    bench_meter_init(&r->m, o->warmup_ms, o->seconds);
    uv_update_time(&r->loop); /* the set-up above took a while */
    uint64_t stop_ms = (uint64_t)(r->m.t1_us - esc_mono_us()) / 1000u + 1u;
    if (uv_timer_start(&r->stop_timer, stop_cb, stop_ms, 0) != 0) {
        return -1;
    }
    for (uint32_t i = 0; i < o->conns; i++) {
        slot_send(&r->slots[i]);
    }
    return 0;
}

int bench_pg_run(const bench_opts *o)
{
    if (setup_table(o) != 0) {
        return 1;
    }
    pg_run *r = calloc(1, sizeof *r);
    if (r == NULL || (r->slots = calloc(o->conns, sizeof *r->slots)) == NULL) {
        free(r);
        fprintf(stderr, "escrow-bench: out of memory\n");
        return 1;
    }
    r->o = o;
    int rc = uv_loop_init(&r->loop);
    if (rc == 0) {
        rc = uv_timer_init(&r->loop, &r->stop_timer);
        r->stop_timer.data = r;
    }
    if (rc == 0) {
        rc = run_loop(r);
        /* runs until every handle is closed (also after a failed set-up) */
        (void)uv_run(&r->loop, UV_RUN_DEFAULT); /* returns once every handle is closed */
        int crc = uv_loop_close(&r->loop);
        rc = rc != 0 ? rc : crc;
    }
    if (rc == 0) {
        printf("BENCH %s_conns=%u %s_rows=%u", o->label, o->conns, o->label, o->rows);
        bench_meter_print(&r->m, o->label);
        printf("\n");
    }
    if (r->first_error[0] != '\0') {
        fprintf(stderr, "escrow-bench: %s: first error: %s\n", o->label, r->first_error);
    }
    for (uint32_t i = 0; i < o->conns; i++) {
        PQfinish(r->slots[i].conn);
    }
    free(r->slots);
    free(r);
    return rc == 0 ? 0 : 1;
}

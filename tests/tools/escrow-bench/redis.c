/* SPDX-License-Identifier: Apache-2.0 */
/*
 * redis.c - baseline C: a Redis Lua check-and-decrement gate, what a shop
 * puts in front of its database when one row is too slow. One EVALSHA per
 * buyer: the script reads the stock and decrements it only if enough is
 * left (Redis runs a script alone, so the check and the decrement are one
 * step). Returns the stock left, or -1 for "no".
 *
 * o->conns hiredis asynchronous connections on one libuv loop (hiredis'
 * own libuv adapter), one EVALSHA in flight on each. The server is started
 * by tests/support/bench.sh, once without persistence and once with
 * appendonly yes + appendfsync always; without fsync nothing of it is
 * durable.
 */
#include "bench.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef ESC_BENCH_HIREDIS
/* Built without libhiredis-dev: the baseline says so and measures nothing. */
int bench_redis_run(const bench_opts *o)
{
    (void)o;
    fprintf(stderr, "escrow-bench: built without hiredis (install libhiredis-dev)\n");
    return 3;
}
#else

#include <hiredis/adapters/libuv.h>
#include <hiredis/async.h>
#include <hiredis/hiredis.h>

#include "clock.h"

#define REDIS_KEY "bench:stock"
#define REDIS_LUA                                                                                  \
    "local v = tonumber(redis.call('GET', KEYS[1]) or '0') "                                       \
    "local q = tonumber(ARGV[1]) "                                                                 \
    "if v >= q then return redis.call('DECRBY', KEYS[1], q) end "                                  \
    "return -1"
#define REDIS_UNITS 1000000000LL

typedef struct redis_run redis_run;

typedef struct redis_slot {
    redis_run *r;         /* borrowed */
    redisAsyncContext *c; /* owned by hiredis once attached; NULL when gone */
    int64_t sent_us;
} redis_slot;

struct redis_run {
    const bench_opts *o; /* borrowed */
    uv_loop_t loop;
    redis_slot *slots; /* owned, o->conns */
    bench_meter m;
    uv_timer_t stop_timer; /* embedded */
    bool stopping;
    bool closing;
    uint32_t busy;
    uint32_t open;
    char sha[64];
    char first_error[256];
};

/* SET the stock and SCRIPT LOAD the gate on a blocking connection. */
static int setup(redis_run *r)
{
    redisContext *c = redisConnect("127.0.0.1", r->o->redis_port);
    if (c == NULL || c->err) {
        fprintf(stderr, "escrow-bench: redis connect: %s\n", c ? c->errstr : "out of memory");
        redisFree(c);
        return -1;
    }
    int rc = -1;
    redisReply *set = redisCommand(c, "SET %s %lld", REDIS_KEY, r->o->sold_out ? 0LL : REDIS_UNITS);
    redisReply *load = set != NULL ? redisCommand(c, "SCRIPT LOAD %s", REDIS_LUA) : NULL;
    if (set != NULL && set->type == REDIS_REPLY_STATUS && load != NULL &&
        load->type == REDIS_REPLY_STRING && load->len < (int)sizeof r->sha) {
        memcpy(r->sha, load->str, (size_t)load->len);
        r->sha[load->len] = '\0';
        rc = 0;
    } else {
        fprintf(stderr, "escrow-bench: redis set-up failed: %s\n",
                c->err ? c->errstr : "unexpected reply");
    }
    if (set != NULL) {
        freeReplyObject(set);
    }
    if (load != NULL) {
        freeReplyObject(load);
    }
    redisFree(c);
    return rc;
}

static void slot_send(redis_slot *s);

static void noop_close(uv_handle_t *h)
{
    (void)h;
}

static void maybe_close(redis_run *r)
{
    if (!r->stopping || r->busy > 0 || r->closing) {
        return;
    }
    r->closing = true;
    for (uint32_t i = 0; i < r->o->conns; i++) {
        if (r->slots[i].c != NULL) {
            redisAsyncContext *c = r->slots[i].c;
            r->slots[i].c = NULL;
            redisAsyncDisconnect(c); /* frees it; the adapter closes its handle */
        }
    }
    uv_close((uv_handle_t *)&r->stop_timer, noop_close);
}

static void reply_cb(redisAsyncContext *c, void *reply, void *arg)
{
    (void)c;
    redis_slot *s = arg;
    redis_run *r = s->r;
    redisReply *rep = reply;
    int kind = BENCH_ERR;
    if (rep != NULL && rep->type == REDIS_REPLY_INTEGER) {
        kind = rep->integer >= 0 ? BENCH_OK : BENCH_NO;
    } else if (r->first_error[0] == '\0') {
        snprintf(r->first_error, sizeof r->first_error, "%s",
                 rep == NULL                      ? "connection lost"
                 : rep->type == REDIS_REPLY_ERROR ? rep->str
                                                  : "unexpected reply type");
    }
    bench_meter_add(&r->m, kind, s->sent_us, esc_mono_us());
    r->busy--;
    if (rep == NULL) {
        s->c = NULL; /* hiredis is freeing it */
    } else if (!r->stopping) {
        slot_send(s);
    }
    maybe_close(r);
}

static void slot_send(redis_slot *s)
{
    redis_run *r = s->r;
    if (s->c == NULL) {
        return;
    }
    s->sent_us = esc_mono_us();
    if (redisAsyncCommand(s->c, reply_cb, s, "EVALSHA %s 1 %s 1", r->sha, REDIS_KEY) != REDIS_OK) {
        if (r->first_error[0] == '\0') {
            snprintf(r->first_error, sizeof r->first_error, "redisAsyncCommand: %s", s->c->errstr);
        }
        return;
    }
    r->busy++;
}

static void disconnect_cb(const redisAsyncContext *c, int status)
{
    redis_slot *s = c->data;
    (void)status;
    s->c = NULL;
}

static void stop_cb(uv_timer_t *t)
{
    redis_run *r = t->data;
    r->stopping = true;
    maybe_close(r);
}

static int slot_open(redis_run *r, redis_slot *s)
{
    s->r = r;
    s->c = redisAsyncConnect("127.0.0.1", r->o->redis_port);
    if (s->c == NULL || s->c->err) {
        fprintf(stderr, "escrow-bench: redis connect: %s\n", s->c ? s->c->errstr : "no memory");
        if (s->c != NULL) {
            redisAsyncFree(s->c);
            s->c = NULL;
        }
        return -1;
    }
    s->c->data = s;
    if (redisLibuvAttach(s->c, &r->loop) != REDIS_OK ||
        redisAsyncSetDisconnectCallback(s->c, disconnect_cb) != REDIS_OK) {
        fprintf(stderr, "escrow-bench: redis: cannot attach to the loop\n");
        return -1;
    }
    return 0;
}

static int run_loop(redis_run *r)
{
    for (uint32_t i = 0; i < r->o->conns; i++) {
        if (slot_open(r, &r->slots[i]) != 0) {
            r->stopping = true;
            maybe_close(r);
            return -1;
        }
    }
    bench_meter_init(&r->m, r->o->warmup_ms, r->o->seconds);
    uv_update_time(&r->loop); /* the set-up above took a while */
    uint64_t stop_ms = (uint64_t)(r->m.t1_us - esc_mono_us()) / 1000u + 1u;
    if (uv_timer_start(&r->stop_timer, stop_cb, stop_ms, 0) != 0) {
        return -1;
    }
    for (uint32_t i = 0; i < r->o->conns; i++) {
        slot_send(&r->slots[i]);
    }
    return 0;
}

int bench_redis_run(const bench_opts *o)
{
    redis_run *r = calloc(1, sizeof *r);
    if (r == NULL || (r->slots = calloc(o->conns, sizeof *r->slots)) == NULL) {
        free(r);
        fprintf(stderr, "escrow-bench: out of memory\n");
        return 1;
    }
    r->o = o;
    int rc = setup(r);
    if (rc == 0 && (rc = uv_loop_init(&r->loop)) == 0) {
        rc = uv_timer_init(&r->loop, &r->stop_timer);
        r->stop_timer.data = r;
        rc = rc != 0 ? rc : run_loop(r);
        (void)uv_run(&r->loop, UV_RUN_DEFAULT); /* returns once every handle is closed */
        int crc = uv_loop_close(&r->loop);
        rc = rc != 0 ? rc : crc;
    }
    if (rc == 0) {
        printf("BENCH %s_conns=%u", o->label, o->conns);
        bench_meter_print(&r->m, o->label);
        printf("\n");
    }
    if (r->first_error[0] != '\0') {
        fprintf(stderr, "escrow-bench: %s: first error: %s\n", o->label, r->first_error);
    }
    free(r->slots);
    free(r);
    return rc == 0 ? 0 : 1;
}

#endif /* ESC_BENCH_HIREDIS */

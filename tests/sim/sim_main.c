/* SPDX-License-Identifier: Apache-2.0 */
/*
 * sim_main.c - escrow-sim: the scheduler, the clients, the network, the
 * coordinator's transfers, the nemesis, the history and the command line.
 *
 *   escrow-sim --seeds A..B --steps N [--history DIR [--every K]] [--jobs J]
 *   escrow-sim --seed N --steps N --trace          (one seed, every event)
 *   escrow-sim ... --mutate KIND                   (test only: inject a bug)
 *
 * One step: the clock advances (sometimes jumps), the nemesis acts (crash,
 * restart, takeover with the old owner left running as a zombie), due
 * messages are delivered (the network drops, duplicates, delays and so
 * reorders them), each node settles its batch outcome or reconciles, sweeps
 * expired holds and sends its next batch, the coordinator drives a
 * transfer, clients invoke operations or give up on them, and the
 * invariants are checked (sim_check.c). After N steps the world drains
 * without faults and the final state is checked.
 *
 * Seeds are independent; --jobs forks workers that take every J-th seed and
 * report totals through a pipe, so the totals do not depend on J.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "escrow_errors.h"
#include "sim.h"

static const char *const f_names[] = {"", "reserve", "confirm", "release", "extend", "get", "get"};
static const char *const fault_names[FLT_COUNT] = {
    "net-drop",      "net-dup",  "net-delay",         "net-stale-route",
    "db-error",      "db-delay", "db-lost-committed", "db-lost-uncommitted",
    "db-query-fail", "crash",    "takeover",          "clock-jump"};
static const char *const mutation_names[MUT_COUNT] = {
    "none",        "fenced-commit", "double-transfer", "lost-as-failed", "ack-before-commit",
    "stale-clock", "no-unique-key"};

/* ---- randomness: splitmix64 ---------------------------------------------- */

uint64_t sim_rand(sim_world *w)
{
    uint64_t z = (w->rng += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

uint64_t sim_below(sim_world *w, uint64_t n)
{
    return n ? sim_rand(w) % n : 0;
}

bool sim_pct(sim_world *w, unsigned per_mille)
{
    return sim_below(w, 1000) < per_mille;
}

void sim_fault(sim_world *w, int kind)
{
    w->st.fault[kind]++;
    w->st.faults++;
}

/* ---- history --------------------------------------------------------------- */

void sim_event(sim_world *w, const char *fmt, ...)
{
    if (w->hist == NULL && !w->trace) {
        return;
    }
    char buf[9000];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    if (w->hist != NULL) {
        fprintf(w->hist, "%s,\"time\":%" PRId64 "}\n", buf, w->step);
    }
    if (w->trace) {
        printf("%s,\"time\":%" PRId64 "}\n", buf, w->step);
    }
}

void sim_violation(sim_world *w, const char *fmt, ...)
{
    if (w->violated) {
        return;
    }
    w->violated = true;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(w->violation, sizeof w->violation, fmt, ap);
    va_end(ap);
}

static void nemesis_event(sim_world *w, const char *f, const char *value)
{
    sim_event(w, "{\"type\":\"info\",\"process\":\"nemesis\",\"f\":\"%s\",\"value\":%s", f, value);
}

/* ---- network --------------------------------------------------------------- */

static void net_put(sim_world *w, const sim_msg *m, int64_t delay)
{
    if (w->nmsgs == SIM_MSGS_MAX) {
        sim_fault(w, FLT_NET_DROP);
        return;
    }
    sim_msg *q = &w->msgs[w->nmsgs++];
    *q = *m;
    q->at_step = w->step + 1 + delay;
    q->seq = ++w->msg_seq;
}

static void net_send(sim_world *w, const sim_msg *m)
{
    if (!w->quiet && sim_pct(w, 15)) {
        sim_fault(w, FLT_NET_DROP);
        return;
    }
    int64_t delay = (int64_t)sim_below(w, 2);
    if (!w->quiet && sim_pct(w, 40)) {
        sim_fault(w, FLT_NET_DELAY); /* late, and so out of order */
        delay += 2 + (int64_t)sim_below(w, 9);
    }
    net_put(w, m, delay);
    if (!w->quiet && sim_pct(w, 15)) {
        sim_fault(w, FLT_NET_DUP);
        net_put(w, m, (int64_t)sim_below(w, 6));
    }
}

void sim_send_reply(sim_world *w, int process, uint64_t corr, const sim_reply *rep)
{
    sim_msg m;
    memset(&m, 0, sizeof m);
    m.kind = MSG_REPLY;
    m.dest = process;
    m.req.corr = corr;
    m.rep = *rep;
    net_send(w, &m);
}

static sim_node *node_by_id(sim_world *w, int id)
{
    if (w->cur != NULL && w->cur->id == id) {
        return w->cur;
    }
    if (w->zombie != NULL && w->zombie->id == id) {
        return w->zombie;
    }
    return NULL;
}

/* ---- clients ------------------------------------------------------------- */

static void value_invoke(char *buf, size_t len, const sim_req *op)
{
    if (op->f == F_RESERVE) {
        snprintf(buf, len, "\"key\":\"k%u\",\"qty\":%" PRId64 ",\"buyer\":\"b%d\"", op->key_no,
                 op->qty, op->buyer);
    } else {
        snprintf(buf, len, "\"hold\":%" PRIu64 ",\"qty\":%" PRId64 ",\"ttl_ms\":%u", op->hold_id,
                 op->qty, op->ttl_ms);
    }
}

static void record_invoke(sim_world *w, const sim_req *op)
{
    char v[256];
    value_invoke(v, sizeof v, op);
    sim_event(w, "{\"type\":\"invoke\",\"f\":\"%s\",\"process\":%d,\"value\":{%s}", f_names[op->f],
              op->process, v);
}

static const char *hold_state_name(int st)
{
    static const char *const t[] = {"", "held", "converted", "cancelled", "expired"};
    return (st >= 1 && st <= 4) ? t[st] : "";
}

static void record_complete(sim_world *w, const sim_req *op, const sim_reply *rep, const char *type)
{
    char v[256], h[400] = "", id[40] = "";
    value_invoke(v, sizeof v, op);
    if (rep != NULL && rep->has_hold) {
        if (op->f == F_RESERVE) {
            snprintf(id, sizeof id, ",\"hold\":%" PRIu64, rep->hold_id);
        }
        snprintf(h, sizeof h,
                 "%s,\"seg\":%d,\"hold_qty\":%" PRId64 ",\"qty_sold\":%" PRId64
                 ",\"state\":\"%s\",\"expires\":%" PRId64 ",\"extended\":%s,\"epoch\":%" PRIu64
                 ",\"batch\":%" PRIu64 ",\"node\":%d",
                 id, rep->seg, rep->qty, rep->qty_sold, hold_state_name(rep->state),
                 rep->expires_at_ms, rep->extended ? "true" : "false", rep->epoch, rep->batch,
                 rep->node);
    }
    sim_event(w, "{\"type\":\"%s\",\"f\":\"%s\",\"process\":%d,\"value\":{%s,\"status\":\"%s\"%s}",
              type, f_names[op->f], op->process, v, rep ? esc_err_name(rep->status) : "TIMEDOUT",
              h);
}

static void known_add(sim_client *c, const sim_reply *rep)
{
    for (size_t i = 0; i < c->nholds; i++) {
        if (c->holds[i].hold_id == rep->hold_id) {
            c->holds[i].expires_at_ms = rep->expires_at_ms;
            return;
        }
    }
    if (c->nholds == SIM_HOLDS_PER_PROC) {
        memmove(&c->holds[0], &c->holds[1], (SIM_HOLDS_PER_PROC - 1) * sizeof c->holds[0]);
        c->nholds--;
    }
    c->holds[c->nholds].hold_id = rep->hold_id;
    c->holds[c->nholds].qty = rep->qty;
    c->holds[c->nholds].expires_at_ms = rep->expires_at_ms;
    c->nholds++;
}

static void client_reply(sim_world *w, int p, uint64_t corr, const sim_reply *rep)
{
    sim_client *c = &w->clients[p];
    if (!c->waiting || c->op.corr != corr) {
        return; /* late or duplicate: the client counts only the first answer */
    }
    c->waiting = false;
    check_reply(w, &c->op, rep);
    bool ok = rep->status == 0;
    ok ? w->st.ok++ : w->st.fail++;
    record_complete(w, &c->op, rep, ok ? "ok" : "fail");
    if (ok && rep->has_hold && (c->op.f == F_RESERVE || c->op.f == F_EXTEND)) {
        known_add(c, rep);
    }
    if (c->has_timed_out && c->timed_out.f == c->op.f && c->timed_out.key_no == c->op.key_no &&
        c->timed_out.hold_id == c->op.hold_id) {
        c->has_timed_out = false;
    }
}

static bool pick_known(sim_world *w, sim_client *c, sim_known *out)
{
    if (c->nholds == 0) {
        return false;
    }
    *out = c->holds[sim_below(w, c->nholds)];
    return true;
}

static void new_reserve(sim_world *w, sim_client *c, sim_req *op)
{
    op->f = F_RESERVE;
    if (c->nkeys > 0 && sim_pct(w, 250)) {
        size_t i = sim_below(w, c->nkeys); /* a retry with the same key */
        op->key_no = c->keys[i];
        op->qty = sim_pct(w, 50) ? 1 + (int64_t)sim_below(w, 3) : c->key_qty[i];
        return;
    }
    op->key_no = ++w->next_key;
    op->qty = 1 + (int64_t)sim_below(w, 3);
    if (c->nkeys == SIM_KEYS_PER_PROC) {
        memmove(&c->keys[0], &c->keys[1], (SIM_KEYS_PER_PROC - 1) * sizeof c->keys[0]);
        memmove(&c->key_qty[0], &c->key_qty[1], (SIM_KEYS_PER_PROC - 1) * sizeof c->key_qty[0]);
        c->nkeys--;
    }
    c->keys[c->nkeys] = op->key_no;
    c->key_qty[c->nkeys++] = op->qty;
    if (op->key_no >= w->key_ack_cap) {
        size_t cap = w->key_ack_cap ? w->key_ack_cap * 2 : 1024;
        uint64_t *a = realloc(w->key_ack, cap * sizeof *a);
        if (a == NULL) {
            abort();
        }
        memset(a + w->key_ack_cap, 0, (cap - w->key_ack_cap) * sizeof *a);
        w->key_ack = a;
        w->key_ack_cap = cap;
    }
}

/* Chooses the next op of process p; returns true if it goes straight to
 * the node at a chosen clock (a confirm at its hold's deadline +- 2 ms). */
static bool choose_op(sim_world *w, sim_client *c, sim_req *op)
{
    unsigned r = (unsigned)sim_below(w, 100);
    sim_known k;
    if (r < 8 && c->has_timed_out) {
        int p = op->process;
        uint64_t corr = op->corr;
        *op = c->timed_out; /* retried after a timeout: same key, same params */
        op->process = p;
        op->corr = corr;
        return false;
    }
    if (r < 45 || !pick_known(w, c, &k)) {
        new_reserve(w, c, op);
        return false;
    }
    op->hold_id = k.hold_id;
    if (r < 66) {
        op->f = F_CONFIRM;
        op->qty = sim_pct(w, 300) ? 1 + (int64_t)sim_below(w, (uint64_t)k.qty) : 0;
        if (sim_pct(w, 300)) {
            int64_t at = k.expires_at_ms - 2 + (int64_t)sim_below(w, 4);
            if (at > w->now_ms) {
                w->now_ms = at;
            }
            return true;
        }
    } else if (r < 78) {
        op->f = F_RELEASE;
    } else if (r < 86) {
        op->f = F_EXTEND;
        op->ttl_ms = sim_pct(w, 500) ? 0 : 300 + (uint32_t)sim_below(w, 2500);
    } else if (r < 95) {
        op->f = F_GET;
    } else {
        op->f = F_NF;
        op->hold_id = ((1 + sim_below(w, 3)) << ESC_HOLD_SEQ_BITS) | (1 + sim_below(w, 3000));
    }
    return false;
}

static void client_step(sim_world *w, int p)
{
    sim_client *c = &w->clients[p];
    if (c->waiting) {
        if (w->step >= c->deadline_step) {
            c->waiting = false;
            w->st.info++;
            record_complete(w, &c->op, NULL, "info");
            c->has_timed_out = c->op.f == F_RESERVE || sim_pct(w, 500);
            c->timed_out = c->op;
        }
        return;
    }
    if (w->quiet || !sim_pct(w, 450)) {
        return;
    }
    sim_req op;
    memset(&op, 0, sizeof op);
    op.process = p;
    op.buyer = p % SIM_NBUYERS;
    op.corr = ++w->corr_seq;
    bool direct = choose_op(w, c, &op);
    op.buyer = p % SIM_NBUYERS;
    w->st.ops++;
    w->st.by_f[op.f]++;
    c->op = op;
    c->waiting = true;
    c->deadline_step = w->step + SIM_TIMEOUT_STEPS;
    record_invoke(w, &op);
    int dest = w->cur ? w->cur->id : w->next_node_id;
    if (w->zombie != NULL && sim_pct(w, 200)) {
        sim_fault(w, FLT_NET_STALE_ROUTE); /* a client with the old route */
        dest = w->zombie->id;
    }
    sim_node *n = node_by_id(w, dest);
    if (direct && n != NULL) {
        node_deliver(w, n, &op, true);
        return;
    }
    sim_msg m;
    memset(&m, 0, sizeof m);
    m.kind = MSG_REQ;
    m.dest = dest;
    m.req = op;
    net_send(w, &m);
}

/* ---- delivery ------------------------------------------------------------ */

static int msg_cmp(const void *a, const void *b)
{
    const sim_msg *x = a, *y = b;
    if (x->at_step != y->at_step) {
        return x->at_step < y->at_step ? -1 : 1;
    }
    return x->seq < y->seq ? -1 : x->seq > y->seq;
}

static void deliver(sim_world *w)
{
    static sim_msg due[SIM_MSGS_MAX];
    size_t nd = 0, keep = 0;
    for (size_t i = 0; i < w->nmsgs; i++) {
        if (w->msgs[i].at_step <= w->step) {
            due[nd++] = w->msgs[i];
        } else {
            w->msgs[keep++] = w->msgs[i];
        }
    }
    w->nmsgs = keep;
    qsort(due, nd, sizeof due[0], msg_cmp);
    for (size_t i = 0; i < nd && !w->violated; i++) {
        const sim_msg *m = &due[i];
        if (m->kind == MSG_REPLY) {
            client_reply(w, m->dest, m->req.corr, &m->rep);
            continue;
        }
        sim_node *n = node_by_id(w, m->dest);
        if (n == NULL) {
            continue; /* the node is down: the message is lost */
        }
        if (m->kind == MSG_REQ) {
            node_deliver(w, n, &m->req, false);
        } else {
            node_command(w, n, m->kind, m->transfer_id, m->seg, m->qty);
        }
    }
}

/* ---- coordinator: transfers ----------------------------------------------- */

static void send_command(sim_world *w, int kind, const st_xfer *x)
{
    if (w->cur == NULL) {
        return;
    }
    sim_msg m;
    memset(&m, 0, sizeof m);
    m.kind = kind;
    m.dest = w->cur->id;
    m.transfer_id = x->id;
    m.seg = kind == MSG_GIVE ? x->from : x->to;
    m.qty = x->qty;
    net_send(w, &m);
}

static void coordinator_step(sim_world *w)
{
    if (w->xfer_active == 0) {
        if (!w->quiet && sim_pct(w, 15)) {
            uint64_t id = ++w->xfer_seq;
            int from = 1 + (int)sim_below(w, SIM_NSEG);
            int64_t qty = 1 + (int64_t)sim_below(w, 6);
            store_plan_xfer(&w->store, id, from, 3 - from, qty);
            w->xfer_active = id;
            sim_event(w,
                      "{\"type\":\"info\",\"process\":\"coordinator\",\"f\":\"plan\",\"value\":{"
                      "\"transfer\":%" PRIu64 ",\"from\":%d,\"to\":%d,\"qty\":%" PRId64 "}",
                      id, from, 3 - from, qty);
        }
    } else if (sim_pct(w, 200)) {
        const st_xfer *x = store_xfer(&w->store, w->xfer_active);
        if (x->state == XS_PLANNED) {
            send_command(w, MSG_GIVE, x);
        } else if (x->state == XS_SENT) {
            send_command(w, MSG_RECEIVE, x);
        } else {
            w->xfer_last = w->xfer_active;
            w->xfer_active = 0;
        }
    }
    if (!w->quiet && w->xfer_last != 0 && sim_pct(w, 10)) {
        const st_xfer *x = store_xfer(&w->store, w->xfer_last); /* a stale repeat */
        send_command(w, sim_pct(w, 500) ? MSG_GIVE : MSG_RECEIVE, x);
    }
}

/* ---- nemesis ---------------------------------------------------------------- */

static void start_node(sim_world *w, const char *why)
{
    int id = ++w->next_node_id;
    char v[64];
    snprintf(v, sizeof v, "{\"node\":%d}", id);
    nemesis_event(w, why, v);
    w->cur = node_start(w, id);
}

static void nemesis_step(sim_world *w)
{
    char v[96];
    if (w->zombie != NULL && (w->quiet || w->step >= w->zombie_until)) {
        snprintf(v, sizeof v, "{\"node\":%d}", w->zombie->id);
        nemesis_event(w, "zombie-stop", v);
        node_free(w->zombie);
        w->zombie = NULL;
    }
    if (w->cur == NULL && (w->quiet || w->step >= w->down_until)) {
        start_node(w, "restart");
    }
    if (w->quiet) {
        return;
    }
    if (sim_pct(w, 3)) {
        sim_fault(w, FLT_CLOCK_JUMP);
        int64_t d = 100 + (int64_t)sim_below(w, 3000);
        w->now_ms += d;
        snprintf(v, sizeof v, "{\"ms\":%" PRId64 "}", d);
        nemesis_event(w, "clock-jump", v);
    }
    if (w->cur != NULL && sim_pct(w, 2)) {
        sim_fault(w, FLT_CRASH);
        snprintf(v, sizeof v, "{\"node\":%d}", w->cur->id);
        nemesis_event(w, "crash", v);
        node_free(w->cur);
        w->cur = NULL;
        w->down_until = w->step + 1 + (int64_t)sim_below(w, 15);
    } else if (w->cur != NULL && w->zombie == NULL && sim_pct(w, 2)) {
        sim_fault(w, FLT_TAKEOVER); /* the owner paused; another took its segments */
        snprintf(v, sizeof v, "{\"node\":%d}", w->cur->id);
        nemesis_event(w, "takeover", v);
        w->zombie = w->cur;
        w->zombie_until = w->step + 20 + (int64_t)sim_below(w, 80);
        start_node(w, "takeover-new-owner");
    }
}

/* ---- one world ----------------------------------------------------------- */

static void world_init(sim_world *w, uint64_t seed, int64_t steps, int mutate)
{
    memset(w, 0, sizeof *w);
    w->seed = seed;
    w->rng = seed * 0x2545f4914f6cdd1dULL + 1;
    w->steps = steps;
    w->mutate = mutate;
    w->now_ms = SIM_T0_MS;
    w->msgs = malloc(SIM_MSGS_MAX * sizeof *w->msgs);
    if (w->msgs == NULL) {
        abort();
    }
    int64_t a1 = 8 + (int64_t)sim_below(w, 60), a2 = 8 + (int64_t)sim_below(w, 60);
    store_init(&w->store, a1, a2);
}

static void world_fini(sim_world *w)
{
    node_free(w->cur);
    node_free(w->zombie);
    store_fini(&w->store);
    free(w->msgs);
    free(w->key_ack);
}

static void step(sim_world *w)
{
    w->step++;
    w->now_ms += 1 + (int64_t)sim_below(w, 25);
    nemesis_step(w);
    deliver(w);
    sim_node *nodes[2] = {w->cur, w->zombie};
    for (int i = 0; i < 2 && !w->violated; i++) {
        if (nodes[i] != NULL) {
            node_tick(w, nodes[i]);
        }
    }
    coordinator_step(w);
    for (int p = 0; p < SIM_NPROC && !w->violated; p++) {
        client_step(w, p);
    }
    if (!w->violated) {
        check_step(w);
    }
}

static bool drained(const sim_world *w)
{
    if (w->nmsgs > 0 || w->xfer_active != 0 || w->cur == NULL || !node_quiescent(w->cur)) {
        return false;
    }
    for (int p = 0; p < SIM_NPROC; p++) {
        if (w->clients[p].waiting) {
            return false;
        }
    }
    return true;
}

static void run_world(sim_world *w)
{
    w->cur = node_start(w, ++w->next_node_id);
    while (w->step < w->steps && !w->violated) {
        step(w);
    }
    w->quiet = true;
    for (int i = 0; i < 400 && !w->violated && !drained(w); i++) {
        step(w);
    }
    if (!w->violated && !drained(w)) {
        sim_violation(w, "the world did not settle within 400 steps after the faults stopped");
    }
    if (!w->violated) {
        check_final(w);
    }
}

/* ---- command line -------------------------------------------------------- */

typedef struct sim_opts {
    uint64_t seed_a, seed_b;
    int64_t steps;
    bool single, trace, verbose, figures;
    const char *history;
    uint64_t every;
    int mutate, jobs;
} sim_opts;

static int open_history(const sim_opts *o, uint64_t seed, FILE **f)
{
    *f = NULL;
    if (o->history == NULL || seed % o->every != 0) {
        return 0;
    }
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%" PRIu64 ".jsonl", o->history, seed);
    *f = fopen(path, "w");
    return *f ? 0 : -1;
}

static void write_dump(const sim_opts *o, const sim_world *w)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/seed-%" PRIu64 ".final.json", o->history, w->seed);
    FILE *f = fopen(path, "w");
    if (f != NULL) {
        store_dump(w, f);
        fclose(f);
    }
}

static void add_stats(sim_stats *t, const sim_stats *s)
{
    const uint64_t *a = (const uint64_t *)s;
    uint64_t *b = (uint64_t *)t;
    for (size_t i = 0; i < sizeof *s / sizeof(uint64_t); i++) {
        b[i] += a[i];
    }
}

/* Runs one seed; returns false on a violation (already printed). */
static bool run_seed(const sim_opts *o, uint64_t seed, sim_stats *tot)
{
    static sim_world w;
    world_init(&w, seed, o->steps, o->mutate);
    w.trace = o->trace;
    if (open_history(o, seed, &w.hist) != 0) {
        fprintf(stderr, "escrow-sim: cannot write history in %s: %s\n", o->history,
                strerror(errno));
        exit(2);
    }
    run_world(&w);
    w.st.runs = 1;
    w.st.steps = (uint64_t)(w.step < w.steps ? w.step : w.steps);
    w.st.violations = w.violated ? 1 : 0;
    w.st.commits = w.store.commits;
    if (w.hist != NULL) {
        fclose(w.hist);
        write_dump(o, &w);
    }
    if (o->verbose || o->single) {
        printf("RUN seed=%" PRIu64 " steps=%" PRIu64 " ops=%" PRIu64 " ok=%" PRIu64 " fail=%" PRIu64
               " info=%" PRIu64 " batches=%" PRIu64 " commits=%" PRIu64 " faults=%" PRIu64
               " sold=%" PRId64 " total=%" PRId64 "\n",
               seed, w.st.steps, w.st.ops, w.st.ok, w.st.fail, w.st.info, w.st.batches,
               w.st.commits, w.st.faults, w.store.segs[1].sold + w.store.segs[2].sold,
               w.store.total);
    }
    if (w.violated) {
        printf("VIOLATION seed=%" PRIu64 " step=%" PRId64 ": %s\n", seed, w.step, w.violation);
        printf("reproduce with --seed=%" PRIu64 " --steps=%" PRId64 " --trace%s%s\n", seed,
               o->steps, o->mutate ? " --mutate=" : "", o->mutate ? mutation_names[o->mutate] : "");
    }
    fflush(stdout);
    add_stats(tot, &w.st);
    world_fini(&w);
    return !w.violated;
}

static void run_share(const sim_opts *o, int job, sim_stats *tot)
{
    for (uint64_t s = o->seed_a + (uint64_t)job; s <= o->seed_b; s += (uint64_t)o->jobs) {
        if (o->history != NULL && !o->single && o->every > 1 && s % o->every != 0) {
            continue; /* --every with --history: only the sampled seeds */
        }
        if (!run_seed(o, s, tot)) {
            return;
        }
    }
}

static int run_jobs(const sim_opts *o, sim_stats *tot)
{
    if (o->jobs <= 1 || o->single) {
        run_share(o, 0, tot);
        return 0;
    }
    int fds[64][2];
    pid_t pids[64];
    for (int j = 0; j < o->jobs; j++) {
        if (pipe(fds[j]) != 0 || (pids[j] = fork()) < 0) {
            perror("escrow-sim");
            return -1;
        }
        if (pids[j] == 0) {
            close(fds[j][0]);
            sim_stats t;
            memset(&t, 0, sizeof t);
            run_share(o, j, &t);
            ssize_t n = write(fds[j][1], &t, sizeof t);
            _exit(n == (ssize_t)sizeof t ? 0 : 3);
        }
        close(fds[j][1]);
    }
    int rc = 0;
    for (int j = 0; j < o->jobs; j++) {
        sim_stats t;
        ssize_t n = read(fds[j][0], &t, sizeof t);
        close(fds[j][0]);
        int status = 0;
        waitpid(pids[j], &status, 0);
        if (n != (ssize_t)sizeof t || !WIFEXITED(status) || WEXITSTATUS(status) != 0) {
            fprintf(stderr, "escrow-sim: worker %d failed (status %d)\n", j, status);
            rc = -1;
            continue;
        }
        add_stats(tot, &t);
    }
    return rc;
}

static void print_totals(const sim_opts *o, const sim_stats *t, double secs)
{
    printf("SIM ops: reserve=%" PRIu64 " confirm=%" PRIu64 " release=%" PRIu64 " extend=%" PRIu64
           " get=%" PRIu64 " get_unknown=%" PRIu64 " ok=%" PRIu64 " fail=%" PRIu64 " info=%" PRIu64
           "\n",
           t->by_f[F_RESERVE], t->by_f[F_CONFIRM], t->by_f[F_RELEASE], t->by_f[F_EXTEND],
           t->by_f[F_GET], t->by_f[F_NF], t->ok, t->fail, t->info);
    printf("SIM faults:");
    for (int i = 0; i < FLT_COUNT; i++) {
        printf(" %s=%" PRIu64, fault_names[i], t->fault[i]);
    }
    printf("\nSIM store: batches=%" PRIu64 " commits=%" PRIu64 " reconciles=%" PRIu64
           " fences=%" PRIu64 " recoveries=%" PRIu64 " transfer_steps=%" PRIu64 " expiries=%" PRIu64
           "\n",
           t->batches, t->commits, t->reconciles, t->fences, t->recoveries, t->transfers_done,
           t->expiries);
    printf("SIM seeds=%" PRIu64 " steps=%" PRId64 " ops=%" PRIu64 " faults=%" PRIu64
           " violations=%" PRIu64,
           t->runs, o->steps, t->ops, t->faults, t->violations);
    if (!o->single) {
        printf(" total_steps=%" PRIu64 " mutate=%s time_s=%.1f", t->steps,
               mutation_names[o->mutate], secs);
    }
    printf("\n");
}

static const char *opt_value(int argc, char **argv, int *i, const char *name)
{
    size_t n = strlen(name);
    if (strncmp(argv[*i], name, n) != 0) {
        return NULL;
    }
    if (argv[*i][n] == '=') {
        return argv[*i] + n + 1;
    }
    if (argv[*i][n] == '\0' && *i + 1 < argc) {
        return argv[++*i];
    }
    return NULL;
}

static int usage(void)
{
    fprintf(stderr,
            "usage: escrow-sim --seeds A..B --steps N [--history DIR [--every K]] [--jobs J]\n"
            "                  [--no-figures] [--verbose] [--mutate KIND]\n"
            "       escrow-sim --seed N [--steps N] [--trace] [--history DIR] [--mutate KIND]\n"
            "mutations (test only):");
    for (int i = 1; i < MUT_COUNT; i++) {
        fprintf(stderr, " %s", mutation_names[i]);
    }
    fprintf(stderr, "\n");
    return 2;
}

static int parse_mutation(const char *v)
{
    for (int i = 0; i < MUT_COUNT; i++) {
        if (strcmp(v, mutation_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

static int parse_args(int argc, char **argv, sim_opts *o)
{
    memset(o, 0, sizeof *o);
    o->seed_a = 1;
    o->seed_b = 2000;
    o->steps = 2000;
    o->every = 1;
    o->jobs = 2;
    o->figures = true;
    for (int i = 1; i < argc; i++) {
        const char *v;
        if ((v = opt_value(argc, argv, &i, "--seeds")) != NULL) {
            if (sscanf(v, "%" SCNu64 "..%" SCNu64, &o->seed_a, &o->seed_b) != 2 ||
                o->seed_a > o->seed_b) {
                return usage();
            }
        } else if ((v = opt_value(argc, argv, &i, "--seed")) != NULL) {
            o->seed_a = o->seed_b = strtoull(v, NULL, 10);
            o->single = true;
        } else if ((v = opt_value(argc, argv, &i, "--steps")) != NULL) {
            o->steps = strtoll(v, NULL, 10);
        } else if ((v = opt_value(argc, argv, &i, "--history")) != NULL) {
            o->history = v;
        } else if ((v = opt_value(argc, argv, &i, "--every")) != NULL) {
            o->every = strtoull(v, NULL, 10);
        } else if ((v = opt_value(argc, argv, &i, "--jobs")) != NULL) {
            o->jobs = atoi(v);
        } else if ((v = opt_value(argc, argv, &i, "--mutate")) != NULL) {
            if ((o->mutate = parse_mutation(v)) < 0) {
                return usage();
            }
        } else if (strcmp(argv[i], "--trace") == 0) {
            o->trace = true;
        } else if (strcmp(argv[i], "--verbose") == 0) {
            o->verbose = true;
        } else if (strcmp(argv[i], "--no-figures") == 0) {
            o->figures = false;
        } else {
            return usage();
        }
    }
    if (o->steps < 1 || o->every < 1 || o->jobs < 1 || o->jobs > 64) {
        return usage();
    }
    if (o->single || o->mutate || (o->history && o->every > 1)) {
        o->figures = false; /* the CI figures apply to full runs only */
    }
    return 0;
}

int main(int argc, char **argv)
{
    sim_opts o;
    if (parse_args(argc, argv, &o) != 0) {
        return 2;
    }
    if (o.history != NULL && mkdir(o.history, 0755) != 0 && errno != EEXIST) {
        fprintf(stderr, "escrow-sim: %s: %s\n", o.history, strerror(errno));
        return 2;
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    sim_stats tot;
    memset(&tot, 0, sizeof tot);
    int rc = run_jobs(&o, &tot);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    double secs = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    print_totals(&o, &tot, secs);
    if (rc != 0 || tot.violations > 0) {
        return 1;
    }
    if (o.figures && (tot.runs < 2000 || o.steps < 2000 || tot.faults < 40000)) {
        printf("FIGURES not reached: need seeds>=2000 steps>=2000 faults>=40000\n");
        return 1;
    }
    return 0;
}

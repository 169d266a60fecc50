/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_feed.c - see ctl_feed.h.
 *
 * The follower's loop: poll (up to 1 s, so a signal is noticed within one
 * poll interval), print the batch, fflush, and commit the cursor of its last
 * event only if the output really went out. A lost database connection is
 * waited out (feed_poll reconnects); the position is kept across it.
 */
#include "ctl_feed.h"

#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "escrow_errors.h"
#include "escrow_feed.h"
#include "failpoint.h"
#include "pg_result.h"

/* How long one feed_poll waits; the loop then checks the stop flag. */
#define CTL_FOLLOW_POLL_MS 1000
/* Pause after a failed poll or commit (database down) before the next try. */
#define CTL_FOLLOW_RETRY_MS 1000
/* consumers: undelivered events counted per consumer; counting costs one
 * index entry each (~0.1 s per million). */
#define CTL_CONSUMER_LAG_COUNT_MAX 1000000

static volatile sig_atomic_t follow_stop;

/* Test failpoint ESC_FAILPOINT_FOLLOW_CRASH_BATCH=N (failpoint.h): the
 * follower kills itself (SIGKILL) after printing and flushing its Nth batch, before
 * committing it: the crash between "process" and "commit", on cue, so
 * tests/integration/events.sh can count the duplicates it must cause.
 * 0 = off. */
static int64_t follow_crash_batch;
static int64_t follow_batches;

static void follow_on_signal(int sig)
{
    (void)sig;
    follow_stop = 1;
}

/* SIGINT and SIGTERM set follow_stop. Without SA_RESTART, so a nap in
 * feed_poll ends at once. */
static int install_signals(void)
{
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = follow_on_signal;
    if (sigemptyset(&sa.sa_mask) != 0 || sigaction(SIGINT, &sa, NULL) != 0 ||
        sigaction(SIGTERM, &sa, NULL) != 0) {
        fprintf(stderr, "escrowctl: cannot install the signal handlers\n");
        return ESC_EINTERNAL;
    }
    return 0;
}

static void print_human(FILE *out, const feed_event *e)
{
    fprintf(out, "%" PRId64 " %s %s %s qty=%" PRId64, e->event_id, e->at, e->item, e->kind, e->qty);
    if (e->segment_id != 0) {
        fprintf(out, " seg=%" PRId64, e->segment_id);
    }
    if (e->hold_id != 0) {
        fprintf(out, " hold=%" PRId64, e->hold_id);
    }
    if (e->buyer[0] != '\0') {
        fprintf(out, " buyer=%s", e->buyer);
    }
    if (e->actor[0] != '\0') {
        fprintf(out, " actor=%s", e->actor);
    }
    fputc('\n', out);
}

/* One JSON object per line (JSON lines). */
static void print_json(FILE *out, const feed_event *e)
{
    char txid[24];
    snprintf(txid, sizeof txid, "%" PRIu64, e->txid);
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_i64(&j, "event_id", e->event_id);
    ctl_json_num(&j, "txid", txid);
    ctl_json_str(&j, "at", e->at);
    ctl_json_str(&j, "item", e->item);
    ctl_json_str(&j, "kind", e->kind);
    ctl_json_i64(&j, "qty", e->qty);
    if (e->segment_id != 0) {
        ctl_json_i64(&j, "segment_id", e->segment_id);
    } else {
        ctl_json_num(&j, "segment_id", NULL);
    }
    if (e->hold_id != 0) {
        ctl_json_i64(&j, "hold_id", e->hold_id);
    } else {
        ctl_json_num(&j, "hold_id", NULL);
    }
    ctl_json_str(&j, "buyer", e->buyer[0] != '\0' ? e->buyer : NULL);
    ctl_json_str(&j, "actor", e->actor[0] != '\0' ? e->actor : NULL);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static void nap_ms(int ms)
{
    struct timespec ts = {ms / 1000, (long)(ms % 1000) * 1000000L};
    (void)nanosleep(&ts, NULL); /* a signal ends it early: the loop checks follow_stop */
}

static void say_start(const ctl_args *a, const feed *f, bool created)
{
    feed_cursor c = feed_committed(f);
    if (!created && (a->from_start || a->after > 0)) {
        fprintf(stderr,
                "escrowctl: consumer %s exists: --from-start/--after only place a new consumer; "
                "resuming after its cursor\n",
                a->consumer);
    }
    fprintf(stderr,
            "escrowctl: FEED-START tenant=%s consumer=%s %s cursor_event=%" PRId64
            " cursor_txid=%" PRIu64 "\n",
            a->tenant, a->consumer, created ? "created" : "resumed", c.event_id, c.txid);
}

/* Prints and flushes n events; commits the last one if all of it went out. */
static int deliver(feed *f, const ctl_args *a, FILE *out, const feed_event *ev, int n)
{
    for (int i = 0; i < n; i++) {
        if (a->json) {
            print_json(out, &ev[i]);
        } else {
            print_human(out, &ev[i]);
        }
    }
    if (fflush(out) != 0 || ferror(out)) {
        fprintf(stderr, "escrowctl: cannot write the events; the cursor stays where it was\n");
        return ESC_EIO;
    }
    follow_batches++;
    if (follow_crash_batch > 0 && follow_batches == follow_crash_batch) {
        fprintf(stderr, "escrowctl: ESC_FAILPOINT_FOLLOW_CRASH_BATCH: dying before the commit\n");
        (void)raise(SIGKILL);
    }
    return feed_commit(f, &ev[n - 1]);
}

static int follow_loop(feed *f, const ctl_args *a, FILE *out, feed_event *ev)
{
    bool down = false; /* say once per outage that the database is gone */
    while (!follow_stop) {
        int n = 0;
        int rc = feed_poll(f, ev, a->limit, CTL_FOLLOW_POLL_MS, &n);
        if (rc == 0 && n > 0) {
            rc = deliver(f, a, out, ev, n);
        }
        if (rc == ESC_EUNAVAILABLE) {
            if (!down) {
                fprintf(stderr, "escrowctl: %s; retrying\n", feed_why(f));
            }
            down = true;
            nap_ms(CTL_FOLLOW_RETRY_MS);
            continue;
        }
        if (rc != 0) {
            if (feed_why(f)[0] != '\0') {
                fprintf(stderr, "escrowctl: %s\n", feed_why(f));
            }
            return rc;
        }
        down = false;
    }
    feed_cursor c = feed_committed(f);
    fprintf(stderr, "escrowctl: FEED-STOP consumer=%s cursor_event=%" PRId64 "\n", a->consumer,
            c.event_id);
    return 0;
}

int ctl_feed_follow(const ctl_args *a, FILE *out)
{
    int rc = install_signals();
    if (rc != 0) {
        return rc;
    }
    if (failpoint_load(FAILPOINT_FOLLOW_CRASH_BATCH, NULL, 0) != 0) {
        fprintf(stderr, "escrowctl: ESC_FAILPOINT_FOLLOW_CRASH_BATCH must be a count\n");
        return ESC_EINVAL;
    }
    follow_crash_batch = failpoint_follow_crash_batch();
    feed_opts o = {
        .dsn = a->dsn,
        .tenant = a->tenant,
        .consumer = a->consumer,
        .item = a->item,
        .start = a->after > 0 ? FEED_START_AFTER : FEED_START_BEGINNING,
        .start_after_event_id = a->after,
        .poll_interval_ms = 0,
        .stop = &follow_stop,
    };
    feed *f = NULL;
    bool created = false;
    char why[FEED_WHY_MAX];
    rc = feed_open(&o, &f, &created, why);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: %s\n", why);
        return rc;
    }
    feed_event *ev = calloc((size_t)a->limit, sizeof *ev);
    if (ev == NULL) {
        fprintf(stderr, "escrowctl: out of memory\n");
        feed_close(f);
        return ESC_ENOMEM;
    }
    say_start(a, f, created);
    rc = follow_loop(f, a, out, ev);
    free(ev);
    feed_close(f);
    return rc;
}

/* ---- consumers ------------------------------------------------------------ */

/* Per consumer: its cursor, how many events it has not committed yet
 * (counted up to CTL_CONSUMER_LAG_COUNT_MAX; not yet final ones included)
 * and the age of the first of them. */
static const char sql_consumers[] =
    "/* escrow:ctl-consumers */ "
    "SELECT c.consumer, c.item_id, c.cursor_event_id, "
    "to_char(c.updated_at AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"'), "
    "(SELECT count(*) FROM (SELECT 1 FROM outbox o WHERE o.tenant_id = c.tenant_id "
    "  AND (c.item_id IS NULL OR o.item_id = c.item_id) "
    "  AND (o.txid, o.event_id) > (c.cursor_txid, c.cursor_event_id) LIMIT $3) x), "
    "COALESCE((SELECT floor(extract(epoch FROM clock_timestamp() - o.at) * 1000)::bigint "
    "  FROM outbox o WHERE o.tenant_id = c.tenant_id "
    "  AND (c.item_id IS NULL OR o.item_id = c.item_id) "
    "  AND (o.txid, o.event_id) > (c.cursor_txid, c.cursor_event_id) "
    "  ORDER BY o.txid, o.event_id LIMIT 1), 0), "
    "c.cursor_txid::text "
    "FROM feed_consumers c WHERE c.tenant_id = $1 ORDER BY c.consumer LIMIT $2";
enum { C_NAME, C_ITEM, C_CURSOR, C_UPDATED, C_LAG_EVENTS, C_LAG_MS, C_TXID, C_COLS_ };

static void consumers_human(FILE *out, const PGresult *res)
{
    fprintf(out, "%-20s %-16s %12s %-24s %12s %10s\n", "CONSUMER", "ITEM", "CURSOR_EVENT",
            "UPDATED_AT", "LAG_EVENTS", "LAG_S");
    for (int r = 0; r < PQntuples(res); r++) {
        int64_t lag_ms = 0, lag_n = 0;
        (void)ctl_db_i64(res, r, C_LAG_MS, &lag_ms);
        (void)ctl_db_i64(res, r, C_LAG_EVENTS, &lag_n);
        char lag[24];
        snprintf(lag, sizeof lag, "%s%" PRId64, lag_n >= CTL_CONSUMER_LAG_COUNT_MAX ? ">=" : "",
                 lag_n);
        fprintf(out, "%-20s %-16s %12s %-24s %12s %10.1f\n", pg_result_text_or(res, r, C_NAME, ""),
                PQgetisnull(res, r, C_ITEM) ? "*" : pg_result_text_or(res, r, C_ITEM, ""),
                pg_result_text_or(res, r, C_CURSOR, ""), pg_result_text_or(res, r, C_UPDATED, ""),
                lag, (double)lag_ms / 1000.0);
    }
    fprintf(out, "%d consumer%s\n", PQntuples(res), PQntuples(res) == 1 ? "" : "s");
}

static void consumers_json(FILE *out, const PGresult *res)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "consumers");
    for (int r = 0; r < PQntuples(res); r++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "consumer", pg_result_text_or(res, r, C_NAME, ""));
        ctl_json_str(&j, "item",
                     PQgetisnull(res, r, C_ITEM) ? NULL : pg_result_text_or(res, r, C_ITEM, ""));
        ctl_json_num(&j, "cursor_event_id", pg_result_text_or(res, r, C_CURSOR, ""));
        ctl_json_num(&j, "cursor_txid", pg_result_text_or(res, r, C_TXID, ""));
        ctl_json_str(&j, "updated_at", pg_result_text_or(res, r, C_UPDATED, ""));
        ctl_json_num(&j, "lag_events", pg_result_text_or(res, r, C_LAG_EVENTS, ""));
        ctl_json_num(&j, "lag_ms", pg_result_text_or(res, r, C_LAG_MS, ""));
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

int ctl_feed_consumers(PGconn *conn, const ctl_args *a, FILE *out)
{
    char limit[16], cap[16];
    snprintf(limit, sizeof limit, "%d", a->limit);
    snprintf(cap, sizeof cap, "%d", CTL_CONSUMER_LAG_COUNT_MAX);
    const char *params[] = {a->tenant, limit, cap};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_consumers, 3, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQnfields(res) != C_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the consumers query\n");
        rc = ESC_EDB;
    } else if (a->json) {
        consumers_json(out, res);
    } else {
        consumers_human(out, res);
    }
    PQclear(res);
    return rc;
}

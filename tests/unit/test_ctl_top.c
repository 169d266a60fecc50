/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_ctl_top.c - unit tests for the pure parts of `escrowctl top`: its
 * command line and mode (ctl_top_opts), the prefix filter's LIKE pattern,
 * the rates from two samples (ctl_top_snap), the rows and their columns
 * for plain output and for a live view of a given size (ctl_top_layout),
 * paging and keys (ctl_top_pager), and the JSON line (ctl_top_print).
 * The database and the nodes are covered by tests/integration/ctl_top.sh
 * against a real cluster.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "ctl_top_filter.h"
#include "ctl_top_layout.h"
#include "ctl_top_opts.h"
#include "ctl_top_pager.h"
#include "ctl_top_print.h"
#include "ctl_top_snap.h"
#include "escrow_errors.h"

#define DSN "host=127.0.0.1 dbname=escrow"

static ctl_top_args args;
static char why[CTL_WHY_MAX];

/* Parses a NULL-terminated word list with ESCROW_DSN = env. */
static int parse(const char *env, ...)
{
    char *argv[32];
    int argc = 0;
    va_list ap;
    va_start(ap, env);
    for (const char *w = va_arg(ap, const char *); w != NULL; w = va_arg(ap, const char *)) {
        assert_true(argc < 32);
        argv[argc++] = (char *)w;
    }
    va_end(ap);
    const ctl_env e = {.dsn = env, .coordinator = NULL};
    why[0] = '\0';
    return ctl_top_args_parse(argc, argv, &e, &args, why);
}

/* ---- the command line ---------------------------------------------------- */

static void test_is_cmd(void **state)
{
    (void)state;
    char *a1[] = {"top"};
    char *a2[] = {"--dsn", "x", "--json", "top", "shop-1"};
    char *a3[] = {"--config=f.ini", "top"};
    char *a4[] = {"status", "top"};
    char *a5[] = {"--dsn", "top"}; /* "top" is --dsn's value: no command */
    char *a6[] = {"--coordinator", "tcp://h:1", "top"};
    char *a7[] = {"--", "top"};
    assert_true(ctl_top_is_cmd(1, a1));
    assert_true(ctl_top_is_cmd(5, a2));
    assert_true(ctl_top_is_cmd(2, a3));
    assert_false(ctl_top_is_cmd(2, a4));
    assert_false(ctl_top_is_cmd(2, a5));
    assert_true(ctl_top_is_cmd(3, a6));
    assert_true(ctl_top_is_cmd(2, a7));
    assert_false(ctl_top_is_cmd(0, a1));
}

static void test_defaults(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, "top", NULL), 0);
    assert_string_equal(args.dsn, DSN);
    assert_string_equal(args.config, "");
    assert_string_equal(args.filter.tenant, "");
    assert_string_equal(args.filter.prefix, "");
    assert_int_equal(args.filter.state, CTL_TOP_STATE_ANY);
    assert_false(args.filter.sold_out);
    assert_false(args.filter.collapsed);
    assert_int_equal(args.interval_ms, CTL_TOP_INTERVAL_MS_DEFAULT);
    assert_int_equal(args.limit, 0);
    assert_int_equal(args.page, 1);
    assert_int_equal(args.stats_timeout_ms, CTL_TOP_STATS_TIMEOUT_MS_DEFAULT);
    assert_false(args.once);
    assert_false(args.batch);
    assert_false(args.json);
    assert_false(args.help);
}

static void test_every_option(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL, "--dsn", "dbname=x", "--json", "top", "shop-1", "--prefix=tee-",
                           "--state", "paused", "--paused", "--sold-out", "--collapsed", "--limit",
                           "7", "--page=3", "--interval-ms", "250", "--batch", "--iterations", "4",
                           "--timeout-ms", "900", NULL),
                     0);
    assert_string_equal(args.dsn, "dbname=x");
    assert_string_equal(args.filter.tenant, "shop-1");
    assert_string_equal(args.filter.prefix, "tee-");
    assert_int_equal(args.filter.state, CTL_TOP_STATE_PAUSED);
    assert_true(args.filter.sold_out);
    assert_true(args.filter.collapsed);
    assert_int_equal(args.limit, 7);
    assert_int_equal(args.page, 3);
    assert_int_equal(args.interval_ms, 250);
    assert_true(args.batch);
    assert_int_equal(args.iterations, 4);
    assert_int_equal(args.stats_timeout_ms, 900);
    assert_true(args.json);
    /* --paused alone, and the other states */
    assert_int_equal(parse(DSN, "top", "--paused", NULL), 0);
    assert_int_equal(args.filter.state, CTL_TOP_STATE_PAUSED);
    assert_int_equal(parse(DSN, "top", "--state", "retired", NULL), 0);
    assert_int_equal(args.filter.state, CTL_TOP_STATE_RETIRED);
    assert_int_equal(parse(DSN, "top", "--state=active", "--once", NULL), 0);
    assert_int_equal(args.filter.state, CTL_TOP_STATE_ACTIVE);
    assert_true(args.once);
    /* a tenant that looks like an option, after "--" */
    assert_int_equal(parse(DSN, "top", "--", "--odd", NULL), 0);
    assert_string_equal(args.filter.tenant, "--odd");
}

static void test_dsn_sources(void **state)
{
    (void)state;
    /* --dsn wins over the environment; --config's dsn is read later, and
     * with --config the environment is not consulted */
    assert_int_equal(parse("env", "top", "--dsn", "flag", NULL), 0);
    assert_string_equal(args.dsn, "flag");
    assert_int_equal(parse("env", "top", NULL), 0);
    assert_string_equal(args.dsn, "env");
    assert_int_equal(parse("env", "top", "--config", "eu.ini", NULL), 0);
    assert_string_equal(args.dsn, "");
    assert_string_equal(args.config, "eu.ini");
    assert_int_equal(parse("env", "--config", "eu.ini", "--dsn", "flag", "top", NULL), 0);
    assert_string_equal(args.dsn, "flag");
    assert_int_equal(parse(NULL, "top", NULL), ESC_EINVAL);
    assert_non_null(strstr(why, "no database given"));
    assert_int_equal(parse("", "top", NULL), ESC_EINVAL);
}

/* Each bad line is refused with a sentence and leaves args untouched. */
static void refused(int rc, const char *words)
{
    assert_int_equal(rc, ESC_EINVAL);
    assert_true(strlen(why) > 0);
    assert_int_equal(args.limit, 42); /* the sentinel */
    (void)words;
}

static void test_refusals(void **state)
{
    (void)state;
    char long_prefix[ESC_ITEM_LEN_MAX + 2];
    memset(long_prefix, 'p', sizeof long_prefix - 1);
    long_prefix[sizeof long_prefix - 1] = '\0';
    memset(&args, 0, sizeof args);
    args.limit = 42;
#define REFUSE(...) refused(parse(DSN, __VA_ARGS__, NULL), #__VA_ARGS__)
    REFUSE("top", "--bogus");
    REFUSE("top", "--all"); /* another command's option */
    REFUSE("top", "--limit", "1", "--limit", "2");
    REFUSE("top", "--limit");
    REFUSE("top", "--limit", "0");
    REFUSE("top", "--limit", "501");
    REFUSE("top", "--limit", "ten");
    REFUSE("top", "--page", "0");
    REFUSE("top", "--interval-ms", "99");
    REFUSE("top", "--interval-ms", "60001");
    REFUSE("top", "--timeout-ms", "9");
    REFUSE("top", "--state", "sold");
    REFUSE("top", "--state", "active", "--paused");
    REFUSE("top", "--once", "--batch");
    REFUSE("top", "--iterations", "3");
    REFUSE("top", "--batch", "--iterations", "0");
    REFUSE("top", "--once=yes");
    REFUSE("top", "shop 1");
    REFUSE("top", "shop-1", "tee");
    REFUSE("top", "--prefix", "a b");
    REFUSE("top", "--prefix", "");
    REFUSE("top", "--prefix", long_prefix);
    REFUSE("top", "--config", "");
    REFUSE("status");
#undef REFUSE
}

static void test_help(void **state)
{
    (void)state;
    assert_int_equal(parse(NULL, "top", "--help", NULL), 0);
    assert_true(args.help);
    /* --help wins over anything else, even a bad value */
    assert_int_equal(parse(NULL, "top", "--limit", "0", "--help", NULL), 0);
    assert_true(args.help);
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    ctl_top_usage(f);
    fclose(f);
    const char *words[] = {"top [TENANT", "--prefix",     "--state", "--paused",      "--sold-out",
                           "--collapsed", "--limit",      "--page",  "--interval-ms", "--once",
                           "--batch",     "--iterations", "--json",  "--timeout-ms",  "q quit"};
    for (size_t i = 0; i < sizeof words / sizeof words[0]; i++) {
        assert_non_null(strstr(buf, words[i]));
    }
}

static void test_mode(void **state)
{
    (void)state;
    assert_int_equal(parse(DSN, "top", NULL), 0);
    ctl_top_mode m = ctl_top_mode_of(&args, true);
    assert_true(m.live);
    assert_int_equal(m.limit, 0);      /* as many as fit */
    m = ctl_top_mode_of(&args, false); /* a pipe: one snapshot */
    assert_false(m.live);
    assert_int_equal(m.snapshots, 1);
    assert_int_equal(m.limit, CTL_TOP_LIMIT_DEFAULT);
    assert_int_equal(parse(DSN, "top", "--limit", "5", NULL), 0);
    assert_int_equal(ctl_top_mode_of(&args, true).limit, 5);
    assert_int_equal(parse(DSN, "top", "--once", NULL), 0);
    m = ctl_top_mode_of(&args, true);
    assert_false(m.live);
    assert_int_equal(m.snapshots, 1);
    assert_int_equal(parse(DSN, "top", "--batch", NULL), 0);
    m = ctl_top_mode_of(&args, true);
    assert_false(m.live);
    assert_int_equal(m.snapshots, 0); /* until interrupted */
    assert_int_equal(parse(DSN, "top", "--batch", "--iterations", "3", NULL), 0);
    assert_int_equal(ctl_top_mode_of(&args, false).snapshots, 3);
    assert_int_equal(parse(DSN, "top", "--json", NULL), 0);
    m = ctl_top_mode_of(&args, true);
    assert_false(m.live);
    assert_int_equal(m.snapshots, 1);
}

static void test_filter_like_and_words(void **state)
{
    (void)state;
    char like[CTL_TOP_LIKE_MAX];
    ctl_top_filter_like("tee", like);
    assert_string_equal(like, "tee%");
    ctl_top_filter_like("a%b_c\\d", like);
    assert_string_equal(like, "a\\%b\\_c\\\\d%");
    ctl_top_filter_like("", like);
    assert_string_equal(like, "%");
    /* the longest prefix, every byte escaped, still fits */
    char worst[ESC_ITEM_LEN_MAX + 1];
    memset(worst, '%', ESC_ITEM_LEN_MAX);
    worst[ESC_ITEM_LEN_MAX] = '\0';
    ctl_top_filter_like(worst, like);
    assert_int_equal(strlen(like), 2 * ESC_ITEM_LEN_MAX + 1);
    assert_int_equal(like[2 * ESC_ITEM_LEN_MAX], '%');

    char words[256];
    ctl_top_filter f;
    memset(&f, 0, sizeof f);
    ctl_top_filter_describe(&f, words, sizeof words);
    assert_string_equal(words, "all items");
    snprintf(f.tenant, sizeof f.tenant, "shop-1");
    snprintf(f.prefix, sizeof f.prefix, "tee");
    f.state = CTL_TOP_STATE_PAUSED;
    f.sold_out = true;
    f.collapsed = true;
    ctl_top_filter_describe(&f, words, sizeof words);
    assert_string_equal(words, "tenant=shop-1 prefix=tee state=paused sold-out collapsed");
    ctl_top_filter_describe(&f, words, 10);
    assert_int_equal(strlen(words), 9); /* cut, terminated */
}

static void test_filter_where(void **state)
{
    (void)state;
    ctl_top_filter f;
    ctl_top_where w;
    memset(&f, 0, sizeof f);
    ctl_top_filter_where(&f, &w);
    assert_string_equal(w.sql, "TRUE"); /* no condition at all */
    assert_int_equal(w.nparams, 0);
    snprintf(f.tenant, sizeof f.tenant, "shop-1");
    snprintf(f.prefix, sizeof f.prefix, "a_b");
    f.state = CTL_TOP_STATE_RETIRED;
    ctl_top_filter_where(&f, &w);
    assert_string_equal(w.sql, "TRUE AND i.tenant_id = $1 AND i.item_id LIKE $2 ESCAPE '\\' "
                               "AND i.state = $3");
    assert_int_equal(w.nparams, 3);
    assert_string_equal(w.params[0], "shop-1");
    assert_string_equal(w.params[1], "a\\_b%");
    assert_string_equal(w.params[2], "retired");
    /* the values never enter the text */
    assert_null(strstr(w.sql, "shop-1"));
    memset(&f, 0, sizeof f);
    f.state = CTL_TOP_STATE_PAUSED;
    f.collapsed = true;
    f.sold_out = true;
    ctl_top_filter_where(&f, &w);
    assert_int_equal(w.nparams, 1);
    assert_string_equal(w.params[0], "paused");
    assert_non_null(strstr(w.sql, "TRUE AND i.state = $1 AND i.tail_segment IS NOT NULL AND "
                                  "i.unallocated = 0 AND NOT EXISTS (SELECT 1 FROM segments s "));
    assert_non_null(strstr(w.sql, "(s.available > 0 OR s.held > 0))"));
    assert_non_null(strstr(w.sql, "NOT EXISTS (SELECT 1 FROM transfers t WHERE t.state = 'sent'"));
    /* the longest filter fits */
    memset(f.tenant, 't', ESC_TENANT_LEN_MAX);
    memset(f.prefix, '%', ESC_ITEM_LEN_MAX);
    ctl_top_filter_where(&f, &w);
    assert_int_equal(w.nparams, 3);
    assert_true(strlen(w.sql) < CTL_TOP_WHERE_MAX - 1);
    assert_non_null(strstr(w.sql, "t.item_id = i.item_id)"));
}

/* ---- snapshots: a fixture -------------------------------------------------- */

static ctl_top_seg seg_of(int64_t id, int64_t no, const char *node, int64_t avail, int64_t held,
                          int64_t sold)
{
    ctl_top_seg g;
    memset(&g, 0, sizeof g);
    g.segment_id = id;
    g.seg_no = no;
    g.epoch = 2;
    g.available = avail;
    g.held = held;
    g.sold = sold;
    snprintf(g.region, sizeof g.region, "local");
    snprintf(g.node, sizeof g.node, "%s", node);
    snprintf(g.state, sizeof g.state, "active");
    g.hold_rate = CTL_TOP_RATE_NONE;
    g.reject_rate = CTL_TOP_RATE_NONE;
    return g;
}

/* Two items: shop-1/tee (3 segments, collapsed into segment 12, one
 * transfer of 5 units in flight from 11 to 12) and shop-1/zz (1 segment,
 * sold out); two nodes, n2 down. */
static void fixture(ctl_top_snap *s)
{
    memset(s, 0, sizeof *s);
    s->at_ms = 1700000000000;
    s->matched = 2;
    s->items = calloc(2, sizeof *s->items);
    s->segs = calloc(4, sizeof *s->segs);
    s->nodes = calloc(2, sizeof *s->nodes);
    assert_non_null(s->items);
    assert_non_null(s->segs);
    assert_non_null(s->nodes);
    s->segs[0] = seg_of(10, 0, "n1", 0, 4, 96);
    s->segs[1] = seg_of(11, 1, "n1", 0, 0, 80);
    s->segs[2] = seg_of(12, 2, "n2", 15, 1, 79);
    s->segs[3] = seg_of(20, 0, "", 0, 0, 7);
    snprintf(s->segs[0].state, sizeof s->segs[0].state, "draining");
    snprintf(s->segs[1].state, sizeof s->segs[1].state, "draining");
    s->segs[1].xfers_open = 1;
    s->segs[1].in_flight_out = 5;
    s->segs[2].xfers_open = 1;
    s->segs[2].in_flight_in = 5;
    s->segs[2].tail = true;
    s->segs[2].node_down = true;
    ctl_top_item *t = &s->items[0];
    snprintf(t->tenant, sizeof t->tenant, "shop-1");
    snprintf(t->item, sizeof t->item, "tee");
    snprintf(t->state, sizeof t->state, "active");
    t->total = 300;
    t->available = 15;
    t->held = 5;
    t->sold = 255;
    t->in_flight = 5;
    t->unallocated = 20;
    t->tail_segment = 12;
    t->segments_wanted = 3;
    t->segments_active = 1;
    t->xfers_open = 1;
    t->nsegs = 3;
    t->hold_rate = CTL_TOP_RATE_NONE;
    t->reject_rate = CTL_TOP_RATE_NONE;
    ctl_top_item *z = &s->items[1];
    snprintf(z->tenant, sizeof z->tenant, "shop-1");
    snprintf(z->item, sizeof z->item, "zz");
    snprintf(z->state, sizeof z->state, "paused");
    z->total = 7;
    z->sold = 7;
    z->segments_wanted = 1;
    z->seg_first = 3;
    z->nsegs = 1;
    z->hold_rate = CTL_TOP_RATE_NONE;
    z->reject_rate = CTL_TOP_RATE_NONE;
    s->nitems = 2;
    s->nsegs = 4;
    snprintf(s->nodes[0].node, sizeof s->nodes[0].node, "n1");
    snprintf(s->nodes[1].node, sizeof s->nodes[1].node, "n2");
    s->nodes[1].down = true;
    s->nnodes = 2;
}

/* Gives segment i counters as its owner reported them. */
static void counters(ctl_top_snap *s, size_t i, uint64_t epoch, uint64_t reserved, uint64_t empties,
                     int64_t at_us)
{
    s->segs[i].has_stats = true;
    s->segs[i].stats_epoch = epoch;
    s->segs[i].reserved = reserved;
    s->segs[i].empties = empties;
    s->segs[i].stats_us = at_us;
}

/* ---- rates -------------------------------------------------------------- */

static void test_rates(void **state)
{
    (void)state;
    ctl_top_snap prev, cur;
    fixture(&prev);
    fixture(&cur);
    counters(&prev, 0, 2, 100, 4, 1000000);
    counters(&cur, 0, 2, 350, 6, 1500000); /* +250 units, +2 refusals in 0.5 s */
    counters(&prev, 1, 2, 10, 0, 1000000);
    counters(&cur, 1, 3, 12, 0, 1500000); /* a new epoch: counts from zero again */
    counters(&prev, 2, 2, 50, 9, 1000000);
    counters(&cur, 2, 2, 40, 9, 1500000); /* went down: a restarted owner */
    /* segment 20: no counters in either sample */
    assert_int_equal(ctl_top_rates(&prev, &cur), 0);
    assert_true(cur.segs[0].hold_rate == 500.0);
    assert_true(cur.segs[0].reject_rate == 4.0);
    assert_true(cur.segs[1].hold_rate == CTL_TOP_RATE_NONE);
    assert_true(cur.segs[1].reject_rate == CTL_TOP_RATE_NONE);
    assert_true(cur.segs[2].hold_rate == CTL_TOP_RATE_NONE);
    assert_true(cur.segs[3].hold_rate == CTL_TOP_RATE_NONE);
    /* the item sums its known segments; the other item has none */
    assert_true(cur.items[0].hold_rate == 500.0);
    assert_true(cur.items[0].reject_rate == 4.0);
    assert_true(cur.items[1].hold_rate == CTL_TOP_RATE_NONE);
    ctl_top_totals t;
    ctl_top_totals_of(&cur, &t);
    assert_true(t.hold_rate == 500.0);
    assert_int_equal(t.available, 15);
    assert_int_equal(t.held, 5);
    assert_int_equal(t.sold, 262);
    assert_int_equal(t.in_flight, 5);
    assert_int_equal(t.xfers_open, 1);
    assert_int_equal(t.nodes_up, 1);
    assert_int_equal(t.nodes_down, 1);
    /* no earlier sample: nothing measured */
    assert_int_equal(ctl_top_rates(NULL, &cur), 0);
    assert_true(cur.segs[0].hold_rate == CTL_TOP_RATE_NONE);
    assert_true(cur.items[0].hold_rate == CTL_TOP_RATE_NONE);
    /* the same answer twice (no time passed) measures nothing */
    counters(&cur, 0, 2, 100, 4, 1000000);
    assert_int_equal(ctl_top_rates(&prev, &cur), 0);
    assert_true(cur.segs[0].hold_rate == CTL_TOP_RATE_NONE);
    ctl_top_snap_free(&prev);
    ctl_top_snap_free(&cur);
    assert_null(cur.items);
    ctl_top_snap_free(NULL);
}

static void test_rates_match_by_segment_not_position(void **state)
{
    (void)state;
    ctl_top_snap prev, cur;
    fixture(&prev);
    fixture(&cur);
    /* the earlier sample lists the segments in another order */
    ctl_top_seg first = prev.segs[0];
    prev.segs[0] = prev.segs[2];
    prev.segs[2] = first;
    counters(&prev, 0, 2, 0, 0, 0); /* segment 12 */
    counters(&prev, 2, 2, 0, 0, 0); /* segment 10 */
    counters(&cur, 0, 2, 30, 0, 2000000);
    counters(&cur, 2, 2, 8, 2, 2000000);
    assert_int_equal(ctl_top_rates(&prev, &cur), 0);
    assert_true(cur.segs[0].hold_rate == 15.0); /* segment 10 */
    assert_true(cur.segs[2].hold_rate == 4.0);  /* segment 12 */
    assert_true(cur.segs[2].reject_rate == 1.0);
    assert_true(cur.items[0].hold_rate == 19.0);
    ctl_top_snap_free(&prev);
    ctl_top_snap_free(&cur);
}

static void test_sold_out(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    assert_false(ctl_top_item_sold_out(&s.items[0]));
    assert_true(ctl_top_item_sold_out(&s.items[1]));
    s.items[1].held = 1; /* a hold may come back: not sold out */
    assert_false(ctl_top_item_sold_out(&s.items[1]));
    s.items[1].held = 0;
    s.items[1].unallocated = 1;
    assert_false(ctl_top_item_sold_out(&s.items[1]));
    s.items[1].unallocated = 0;
    s.items[1].in_flight = 1;
    assert_false(ctl_top_item_sold_out(&s.items[1]));
    ctl_top_snap_free(&s);
}

/* ---- layout --------------------------------------------------------------- */

static ctl_top_line lines_buf[64];

static ctl_top_lines lay(const ctl_top_snap *s, int width, int height, bool live)
{
    ctl_top_view v = {.width = width,
                      .height = height,
                      .live = live,
                      .clock = "12:00:00",
                      .filter = "all items",
                      .interval_ms = 1000};
    ctl_top_lines out = {.line = lines_buf, .cap = 64};
    ctl_top_layout(s, &v, &out);
    return out;
}

static void test_layout_plain(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    s.segs[0].hold_rate = 12.5;
    s.segs[0].reject_rate = 0;
    s.items[0].hold_rate = 12.5;
    s.items[0].reject_rate = 0;
    ctl_top_lines out = lay(&s, 0, 0, false);
    const char *want[] = {
        "escrowctl top  12:00:00  every 1 s  all items",
        "items 1-2 of 2 | available 15 held 5 sold 262 | holds/s 12.5 rejections/s 0.0 | "
        "transfers 1 moving 5 | nodes 1 up 1 down",
        "ITEM / SEGMENT OWNER      STATE    AVAIL HELD SOLD HOLD/S REJ/S XFERS MOVING FLAGS",
        "shop-1/tee     1/3 segs   active      15    5  255   12.5   0.0     1      5 total 300, "
        "unallocated 20, collapsed tail=12",
        "  seg 10 #0    n1 e2      draining     0    4   96   12.5   0.0     0      0",
        "  seg 11 #1    n1 e2      draining     0    0   80      -     -     1     -5",
        "  seg 12 #2    n2 e2 down active      15    1   79      -     -     1     +5 TAIL",
        "shop-1/zz      0/1 segs   paused       0    0    7      -     -     0      0 total 7, "
        "SOLD OUT",
        "  seg 20 #0    -          active       0    0    7      -     -     0      0",
    };
    assert_int_equal(out.n, sizeof want / sizeof want[0]);
    for (size_t i = 0; i < out.n; i++) {
        assert_string_equal(out.line[i].text, want[i]);
    }
    assert_int_equal(out.items_shown, 2);
    assert_int_equal(out.line[0].kind, CTL_TOP_LINE_TITLE);
    assert_int_equal(out.line[2].kind, CTL_TOP_LINE_HEADER);
    assert_int_equal(out.line[3].kind, CTL_TOP_LINE_ITEM);
    assert_int_equal(out.line[4].kind, CTL_TOP_LINE_SEGMENT);
    assert_true(ctl_top_layout_lines(&s) >= out.n);
    /* a note gets its line under the summary */
    snprintf(s.note, sizeof s.note, "node n2 did not answer");
    out = lay(&s, 0, 0, false);
    assert_int_equal(out.n, sizeof want / sizeof want[0] + 1);
    assert_string_equal(out.line[2].text, "node n2 did not answer");
    ctl_top_snap_free(&s);
}

static void test_layout_region_column(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    for (size_t i = 0; i < s.nsegs; i++) {
        snprintf(s.segs[i].region, sizeof s.segs[i].region, "eu");
    }
    ctl_top_lines out = lay(&s, 0, 0, false);
    assert_string_equal(out.line[2].text, "ITEM / SEGMENT REGION OWNER      STATE    AVAIL HELD "
                                          "SOLD HOLD/S REJ/S XFERS MOVING FLAGS");
    assert_string_equal(out.line[4].text, "  seg 10 #0    eu     n1 e2      draining     0    4   "
                                          "96      -     -     0      0");
    /* the item row leaves the region blank */
    assert_non_null(strstr(out.line[3].text, "shop-1/tee            1/3 segs"));
    ctl_top_snap_free(&s);
}

static void test_layout_live_height(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    /* 4 top lines + tee (4 rows) + zz (2 rows) + keys = 11 */
    ctl_top_lines out = lay(&s, 120, 11, true);
    assert_int_equal(out.n, 11);
    assert_int_equal(out.items_shown, 2);
    assert_string_equal(out.line[2].text, ""); /* the note's line, kept in a live view */
    assert_string_equal(out.line[10].text, "q quit  n next page  p previous page  g first page");
    /* one row less: zz waits for the next page */
    out = lay(&s, 120, 10, true);
    assert_int_equal(out.items_shown, 1);
    assert_int_equal(out.n, 9);
    assert_non_null(strstr(out.line[1].text, "items 1-1 of 2 |"));
    assert_string_equal(out.line[8].text,
                        "q quit  n next page  p previous page  g first page  (more items: n)");
    /* the first item taller than the view: its first segments, then a count */
    out = lay(&s, 120, 8, true);
    assert_int_equal(out.items_shown, 1);
    assert_int_equal(out.n, 8);
    assert_int_equal(out.line[4].kind, CTL_TOP_LINE_ITEM);
    assert_int_equal(out.line[5].kind, CTL_TOP_LINE_SEGMENT);
    assert_string_equal(out.line[6].text, "  ... 2 more segments (a taller window shows them)");
    /* smaller than the minimum: laid out as the minimum */
    out = lay(&s, 120, 3, true);
    assert_int_equal(out.n, CTL_TOP_HEIGHT_MIN);
    ctl_top_snap_free(&s);
}

static void test_layout_live_width(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    snprintf(s.items[0].item, sizeof s.items[0].item, "a-very-long-item-name-that-is-wide");
    ctl_top_lines out = lay(&s, 60, 20, true);
    for (size_t i = 0; i < out.n; i++) {
        assert_true(strlen(out.line[i].text) <= 60);
    }
    /* the name column gave way first (down to 12 columns): the owner, state
     * and counters are still there, what does not fit is cut */
    assert_int_equal(out.line[4].kind, CTL_TOP_LINE_ITEM);
    assert_string_equal(out.line[4].text,
                        "shop-1/a-ver 1/3 segs   active      15    5  255      -");
    assert_string_equal(out.line[3].text,
                        "ITEM / SEGME OWNER      STATE    AVAIL HELD SOLD HOLD/S REJ/");
    ctl_top_snap_free(&s);
}

static void test_layout_empty_pages(void **state)
{
    (void)state;
    ctl_top_snap s;
    memset(&s, 0, sizeof s);
    ctl_top_lines out = lay(&s, 0, 0, false);
    assert_int_equal(out.n, 3);
    assert_string_equal(out.line[1].text,
                        "no items match | available 0 held 0 sold 0 | holds/s - rejections/s - | "
                        "transfers 0 moving 0 | nodes 0 up 0 down");
    s.matched = 5;
    s.offset = 20;
    out = lay(&s, 0, 0, false);
    assert_non_null(strstr(out.line[1].text, "no items past item 20 of 5 (g: first page)"));
}

static void test_format_rate(void **state)
{
    (void)state;
    char buf[32];
    ctl_top_format_rate(CTL_TOP_RATE_NONE, buf, sizeof buf);
    assert_string_equal(buf, "-");
    ctl_top_format_rate(0, buf, sizeof buf);
    assert_string_equal(buf, "0.0");
    ctl_top_format_rate(1234.56, buf, sizeof buf);
    assert_string_equal(buf, "1234.6");
}

/* ---- paging and keys ---------------------------------------------------- */

static void test_pager(void **state)
{
    (void)state;
    ctl_top_pager p;
    ctl_top_pager_init(&p, 0);
    assert_false(ctl_top_pager_prev(&p, 5)); /* already first */
    assert_true(ctl_top_pager_next(&p, 5, 12));
    assert_int_equal(p.offset, 5);
    assert_true(ctl_top_pager_next(&p, 4, 12)); /* pages of different sizes */
    assert_int_equal(p.offset, 9);
    assert_false(ctl_top_pager_next(&p, 3, 12)); /* 9 + 3 = 12: the last page */
    assert_false(ctl_top_pager_next(&p, 0, 12));
    assert_true(ctl_top_pager_prev(&p, 3));
    assert_int_equal(p.offset, 5);
    assert_true(ctl_top_pager_prev(&p, 3));
    assert_int_equal(p.offset, 0);
    /* started mid-way (--page): back by the page's size */
    ctl_top_pager_init(&p, 40);
    assert_true(ctl_top_pager_prev(&p, 20));
    assert_int_equal(p.offset, 20);
    assert_true(ctl_top_pager_prev(&p, 30));
    assert_int_equal(p.offset, 0);
    ctl_top_pager_init(&p, -3);
    assert_int_equal(p.offset, 0);
    /* the matches shrank below the page: back to the first */
    ctl_top_pager_init(&p, 0);
    assert_true(ctl_top_pager_next(&p, 10, 100));
    assert_false(ctl_top_pager_clamp(&p, 11));
    assert_true(ctl_top_pager_clamp(&p, 10));
    assert_int_equal(p.offset, 0);
    assert_int_equal(p.nback, 0);
    assert_false(ctl_top_pager_clamp(&p, 0)); /* nothing matches: stays first */
    /* more pages than remembered: the oldest are forgotten */
    for (int i = 0; i < CTL_TOP_PAGER_DEPTH + 10; i++) {
        assert_true(ctl_top_pager_next(&p, 1, 1000000));
    }
    assert_int_equal(p.nback, CTL_TOP_PAGER_DEPTH);
    assert_int_equal(p.offset, CTL_TOP_PAGER_DEPTH + 10);
    assert_true(ctl_top_pager_prev(&p, 1));
    assert_int_equal(p.offset, CTL_TOP_PAGER_DEPTH + 9);
    ctl_top_pager_first(&p);
    assert_int_equal(p.offset, 0);
    assert_int_equal(p.nback, 0);
}

static void test_keys(void **state)
{
    (void)state;
    static const struct {
        const char *bytes;
        ctl_top_key key;
        size_t used;
    } cases[] = {
        {"q", CTL_TOP_KEY_QUIT, 1},         {"Q", CTL_TOP_KEY_QUIT, 1},
        {"\003", CTL_TOP_KEY_QUIT, 1},      {"n", CTL_TOP_KEY_NEXT, 1},
        {" ", CTL_TOP_KEY_NEXT, 1},         {"p", CTL_TOP_KEY_PREV, 1},
        {"g", CTL_TOP_KEY_FIRST, 1},        {"\014", CTL_TOP_KEY_REDRAW, 1},
        {"\033[6~", CTL_TOP_KEY_NEXT, 4},   {"\033[5~", CTL_TOP_KEY_PREV, 4},
        {"\033[B", CTL_TOP_KEY_NEXT, 3},    {"\033OA", CTL_TOP_KEY_PREV, 3},
        {"\033[H", CTL_TOP_KEY_FIRST, 3},   {"\033[24~", CTL_TOP_KEY_NONE, 5}, /* F12 */
        {"\033", CTL_TOP_KEY_NONE, 1},      {"x", CTL_TOP_KEY_NONE, 1},
        {"\033[1;5A", CTL_TOP_KEY_NONE, 6},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        size_t used = 0;
        ctl_top_key k = ctl_top_key_decode(cases[i].bytes, strlen(cases[i].bytes), &used);
        assert_int_equal(k, cases[i].key);
        assert_int_equal(used, cases[i].used);
    }
    /* several keys in one read: one at a time */
    const char *two = "\033[6~q";
    size_t used = 0;
    assert_int_equal(ctl_top_key_decode(two, 5, &used), CTL_TOP_KEY_NEXT);
    assert_int_equal(ctl_top_key_decode(two + used, 5 - used, &used), CTL_TOP_KEY_QUIT);
    /* a sequence cut short by the read is consumed, not misread as keys */
    assert_int_equal(ctl_top_key_decode("\033[6", 3, &used), CTL_TOP_KEY_NONE);
    assert_int_equal(used, 3);
    assert_int_equal(ctl_top_key_decode("", 0, &used), CTL_TOP_KEY_NONE);
    assert_int_equal(used, 0);
}

/* ---- JSON ----------------------------------------------------------------- */

static void test_json_line(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    counters(&s, 0, 2, 41, 3, 5);
    s.segs[0].hold_rate = 2.5;
    s.segs[0].reject_rate = 0;
    s.items[0].hold_rate = 2.5;
    s.items[0].reject_rate = 0;
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    assert_int_equal(ctl_top_print_json(f, &s, 250), 0);
    fclose(f);
    /* one line */
    assert_int_equal(strchr(buf, '\n') - buf, (long)strlen(buf) - 1);
    const char *parts[] = {
        "{\"at_ms\":1700000000000,\"interval_ms\":250,\"matched\":2,\"offset\":0,\"note\":\"\","
        "\"items\":[{\"tenant\":\"shop-1\",\"item\":\"tee\",\"state\":\"active\",\"total\":300,"
        "\"available\":15,\"held\":5,\"sold\":255,\"in_flight\":5,\"unallocated\":20,"
        "\"tail_segment\":12,\"sold_out\":false,\"segments_active\":1,\"segments_wanted\":3,"
        "\"transfers_open\":1,\"holds_per_s\":2.5,\"rejections_per_s\":0.0,\"segments\":[",
        "{\"segment_id\":10,\"seg_no\":0,\"region\":\"local\",\"node\":\"n1\",\"node_down\":false,"
        "\"epoch\":2,\"state\":\"draining\",\"available\":0,\"held\":4,\"sold\":96,"
        "\"transfers_open\":0,\"in_flight_out\":0,\"in_flight_in\":0,\"tail\":false,"
        "\"reserved\":41,\"empties\":3,\"holds_per_s\":2.5,\"rejections_per_s\":0.0}",
        "\"tail\":true,\"reserved\":null,\"empties\":null,\"holds_per_s\":null,"
        "\"rejections_per_s\":null}",
        "{\"segment_id\":20,\"seg_no\":0,\"region\":\"local\",\"node\":null,",
        "\"item\":\"zz\",\"state\":\"paused\",\"total\":7,\"available\":0,\"held\":0,\"sold\":7,"
        "\"in_flight\":0,\"unallocated\":0,\"tail_segment\":null,\"sold_out\":true,",
        "\"nodes\":[{\"node\":\"n1\",\"endpoint\":\"\",\"down\":false},{\"node\":\"n2\","
        "\"endpoint\":\"\",\"down\":true}]}\n",
    };
    for (size_t i = 0; i < sizeof parts / sizeof parts[0]; i++) {
        if (strstr(buf, parts[i]) == NULL) {
            fail_msg("part %zu missing from %s", i, buf);
        }
    }
    ctl_top_snap_free(&s);
}

static void test_text_output(void **state)
{
    (void)state;
    ctl_top_snap s;
    fixture(&s);
    char buf[8192];
    FILE *f = fmemopen(buf, sizeof buf, "w");
    assert_non_null(f);
    ctl_top_view v = {
        .width = 30, .height = 4, .live = true, .clock = "x", .filter = "y", .interval_ms = 1500};
    assert_int_equal(ctl_top_print_text(f, &s, &v), 0);
    fclose(f);
    /* every row, full width, no escape sequence, no key line */
    int lines = 0;
    for (const char *p = buf; *p != '\0'; p++) {
        lines += *p == '\n';
    }
    assert_int_equal(lines, 9);
    assert_null(strchr(buf, '\033'));
    assert_null(strstr(buf, "q quit"));
    assert_non_null(strstr(buf, "escrowctl top  x  every 1500 ms  y\n"));
    assert_non_null(strstr(buf, "collapsed tail=12\n"));
    ctl_top_snap_free(&s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_is_cmd),
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_every_option),
        cmocka_unit_test(test_dsn_sources),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_help),
        cmocka_unit_test(test_mode),
        cmocka_unit_test(test_filter_like_and_words),
        cmocka_unit_test(test_filter_where),
        cmocka_unit_test(test_rates),
        cmocka_unit_test(test_rates_match_by_segment_not_position),
        cmocka_unit_test(test_sold_out),
        cmocka_unit_test(test_layout_plain),
        cmocka_unit_test(test_layout_region_column),
        cmocka_unit_test(test_layout_live_height),
        cmocka_unit_test(test_layout_live_width),
        cmocka_unit_test(test_layout_empty_pages),
        cmocka_unit_test(test_format_rate),
        cmocka_unit_test(test_pager),
        cmocka_unit_test(test_keys),
        cmocka_unit_test(test_json_line),
        cmocka_unit_test(test_text_output),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

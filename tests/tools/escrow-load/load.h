/* SPDX-License-Identifier: Apache-2.0 */
/*
 * load.h - escrow-load's engine: a flash sale replayed through libescrow's
 * asynchronous API on one uv loop.
 *
 * Buyers 0..buyers-1 run in order, `concurrency` at a time (one slot each).
 * A buyer reserves qty with key "<key_prefix>-<index>" (also its buyer id);
 * on a hold it waits think_ms, then confirms the whole hold, releases it, or
 * abandons it to expire, chosen deterministically from (seed, index) by the
 * confirm/release ratios. TRY_LATER (every remaining unit held by others) is
 * retried with the same key, so units of abandoned holds that expire can
 * still be bought: after a capped exponential backoff with jitter
 * (backoff.h: 50 ms doubling to 2 s), until give_up_ms have passed since
 * the buyer's first TRY_LATER (or try_later_retries retries, when set).
 * Each buyer's final outcome is counted once.
 */
#ifndef ESC_LOAD_LOAD_H
#define ESC_LOAD_LOAD_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "escrow.h"
#include "esc_limits.h"
#include "hist.h"

/* Bounds of escrow-load's options (argv is validated against them). */
#define LOAD_BUYERS_MAX 100000000ULL
#define LOAD_CONCURRENCY_MAX 65536u /* ESC_CLIENT_INFLIGHT_MAX: one call per buyer */
#define LOAD_THINK_MS_MAX 3600000u
#define LOAD_TRY_LATER_RETRIES_MAX 100000u
#define LOAD_GIVE_UP_MS_MAX 3600000u
/* The TRY_LATER backoff (backoff.h): the first wait is 25..50 ms, each next
 * one up to twice as long, none longer than 2 s. */
#define LOAD_BACKOFF_BASE_MS 50u
#define LOAD_BACKOFF_CAP_MS 2000u
/* Error kinds counted by name: index -code for codes of the table, 0 for
 * anything else. */
#define LOAD_ERR_KINDS 32

/* Skewed demand: a buyer id is searched (suffix "~<n>") until it hashes
 * onto its wanted slots; at most this many candidates per buyer. */
#define LOAD_SKEW_TRIES_MAX 9999u
#define LOAD_SKEW_SUFFIX_LEN 5 /* "~9999" */
#define LOAD_SEGMENTS_MAX ESC_SEGMENTS_PER_ITEM_MAX

typedef struct load_config {
    const char *endpoint;    /* borrowed; single-node mode */
    const char *coordinator; /* borrowed; routing mode (instead of endpoint) */
    const char *routes;      /* borrowed; routing mode, optional */
    const char *tenant_id;   /* borrowed */
    const char *credential;  /* borrowed: the tenant's key, or NULL */
    const char *item_id;     /* borrowed */
    const char *key_prefix;  /* borrowed; keys are "<prefix>-<index>" */
    uint64_t buyers;
    uint32_t concurrency;
    int64_t qty;
    uint32_t think_ms;
    double confirm; /* share of holds confirmed */
    double release; /* share released; the rest is abandoned */
    uint32_t ttl_ms;
    uint32_t deadline_ms;
    uint64_t seed;
    uint32_t give_up_ms;        /* a buyer stops retrying TRY_LATER this long after the first */
    uint32_t try_later_retries; /* and after this many retries; 0 = no count bound */
    uint32_t buyer_pool;        /* 0: buyer id = key; N: "buyer-<index % N>" */
    /* Skew (segments > 0): hot_pct % of buyers get ids that esc_route_slot
     * puts on the first hot_segments_pct % of the `segments` slots, the
     * others on the remaining slots. */
    uint32_t segments;
    uint32_t hot_pct;
    uint32_t hot_segments_pct;
    bool quiet; /* no progress lines on stderr */
} load_config;

typedef struct load_stats {
    uint64_t buyers_done;
    uint64_t holds_ok;
    uint64_t rejected_sold_out;
    uint64_t rejected_try_later; /* still TRY_LATER after every retry */
    uint64_t rejected_segment_empty;
    uint64_t reserve_errors; /* any other reserve failure */
    uint64_t try_later_retries;
    uint64_t confirmed;
    uint64_t released;
    uint64_t abandoned;
    uint64_t confirm_errors;
    uint64_t release_errors;
    uint64_t errors_by_kind[LOAD_ERR_KINDS]; /* every failure, every stage */
    hist hold_latency_us;                    /* reserve round trips that got a hold */
    uint64_t hot_buyers;                     /* skew: buyers whose id lands on a hot slot */
    esc_stats client;                        /* libescrow's counters at the end */
    double run_s;
} load_stats;

/* Runs the sale on loop (borrowed) and returns when every buyer finished
 * and every handle is closed. Returns 0 (whatever the buyers' outcomes) or
 * the error that stopped the run from starting (ESC_EINVAL, ESC_ENOMEM,
 * ESC_EIO from the client library). */
int load_run(uv_loop_t *loop, const load_config *cfg, load_stats *stats);

/* Which decision buyer index makes for a hold: 0 confirm, 1 release,
 * 2 abandon. Deterministic in (seed, index). */
int load_decide(const load_config *cfg, uint64_t index);

/* The skew's buyer id for base (borrowed) into out (ESC_ID_MAX + 1 bytes):
 * base itself without skew, else "<base>~<n>" for the first n whose slot is
 * in the wanted range (hot or not, decided from (seed, pick)). Sets *hot.
 * Deterministic. */
void load_skew_buyer(const load_config *cfg, const char *base, uint64_t pick, char *out, bool *hot);

#endif

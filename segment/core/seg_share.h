/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_share.h - how many decisions each tenant may put in one batch of a
 * node's group commit while several tenants write on it: a share that
 * adapts to what the node's commits cost (AIMD on the commit round trip).
 *
 * Every tenant's request waits for the batch it rides in to commit, and
 * for the batch in flight before it. A flood that fills every batch makes
 * every commit slower (more rows, PostgreSQL's CPU, the disk), so another
 * tenant's latency grows with the flood's share of each batch. The share
 * starts at slots_max; a commit of a shared batch slower than
 * slack_pct % of the baseline (and by more than margin_us) halves it, down
 * to slots_min; a commit within the slack gives one slot back. The
 * baseline is the fastest commit of the last one to two windows
 * (window_us): what a small batch costs on this node lately.
 *
 * After a cut the next commit is not judged: that batch was filled under
 * the old share while the slow one committed. Commits while one tenant
 * writes alone feed the baseline and nothing else (no share applies then).
 *
 * Pure: time is a parameter, no I/O.
 */
#ifndef ESC_SEG_SHARE_H
#define ESC_SEG_SHARE_H

#include <stdbool.h>
#include <stdint.h>

/* Defaults: the share never exceeds the former fixed 64 slots and never
 * falls below 8 (a flood keeps committing; a tenant with up to 8 requests
 * in flight is never held back); a commit 1.5x the baseline, and more than
 * 1 ms over it, is slow; the baseline is the fastest commit of the last
 * 5 to 10 s. */
#define SEG_SHARE_SLOTS_MAX 64u
#define SEG_SHARE_SLOTS_MIN 8u
#define SEG_SHARE_SLACK_PCT 150u
#define SEG_SHARE_MARGIN_US 1000
#define SEG_SHARE_WINDOW_US 5000000

typedef struct seg_share_config {
    uint32_t slots_max, slots_min; /* 1 <= slots_min <= slots_max */
    uint32_t slack_pct;            /* >= 100 */
    int64_t margin_us;             /* >= 0 */
    int64_t window_us;             /* > 0 */
} seg_share_config;

typedef struct seg_share {
    seg_share_config cfg;
    uint32_t slots;          /* each tenant's decisions per batch while shared */
    bool skip;               /* the next commit is not judged (after a cut) */
    int64_t fastest_us;      /* the fastest commit of the current window, -1: none */
    int64_t fastest_prev_us; /* of the previous window, -1: none */
    int64_t window_start_us; /* when the current window started */
    uint64_t cuts, raises;   /* counters */
} seg_share;

/* The defaults above into cfg. */
void seg_share_defaults(seg_share_config *cfg);
/* s at slots_max with no baseline, its first window starting at now_us. */
void seg_share_init(seg_share *s, const seg_share_config *cfg, int64_t now_us);
/* New settings (a reload): the share is kept, within the new bounds. */
void seg_share_configure(seg_share *s, const seg_share_config *cfg);
/* A batch committed at now_us after rtt_us; shared: more than one tenant
 * wrote on the node when it was sent. Returns the share (s->slots). */
uint32_t seg_share_committed(seg_share *s, int64_t rtt_us, bool shared, int64_t now_us);
/* The baseline (the fastest commit of the last one to two windows), or -1
 * before the first commit. */
int64_t seg_share_baseline(const seg_share *s);

#endif

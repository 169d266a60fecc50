/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_stats.h - `escrowctl top`'s reads from the segment nodes: each
 * segment's counters as its owner has them in memory (StatsReq, the
 * tenant operation `stats`, which an admin key may also send).
 *
 * One round trip (ctl_rpc.h) per owner and item of the page, each bounded
 * by a timeout; a node that does not answer, or refuses, is asked nothing
 * more in this sample, its segments have no counters (so no rates) and
 * the snapshot's note names it. Nodes the database knows as down are not
 * asked.
 */
#ifndef CTL_TOP_STATS_H
#define CTL_TOP_STATS_H

#include "ctl_top_snap.h"

/* Fills the counters of s's segments (s borrowed, its segments written).
 * timeout_ms bounds each round trip. Never fails: what could not be asked
 * stays without counters, with a sentence in s->note. */
void ctl_top_stats_collect(ctl_top_snap *s, int timeout_ms);

#endif

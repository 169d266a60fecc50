/* SPDX-License-Identifier: Apache-2.0 */
/*
 * hb_sync.h - the pure bookkeeping of delta heartbeats (docs/protocols.md,
 * "Heartbeats"): what a node's heartbeat carries and how either end sums up
 * a whole set to notice that the other's view diverged.
 *
 *   - hashes: a segment's figures (wire_seg_stats) and an assignment entry,
 *     never 0 (0 means "none"); a set's digest is the wrapping sum of its
 *     members' hashes, so it is kept up to date entry by entry.
 *   - hb_sync: a node's memory of what the coordinator acknowledged, one
 *     slot per segment of the node's core (by index: segments are never
 *     removed from the core, a dropped one is fenced in place). A
 *     heartbeat carries a segment when its figures differ from the
 *     acknowledged ones (or changed in the last HB_SYNC_HOT_MS, so the
 *     coordinator sees demand fall back), and names it gone when it is no
 *     longer served but the coordinator still holds figures for it.
 *     The count and digest of the figures last seen are kept up to date
 *     slot by slot, and a heartbeat visits only the work list: the slots
 *     marked since (their figures may have changed) and those not settled
 *     yet (sent and not acknowledged, different from the acknowledged
 *     figures, or changed in the last HB_SYNC_HOT_MS). A node with many
 *     quiet segments does work per heartbeat for what changed, not for
 *     what it serves.
 *   - hb_assign_set: a node's assignment, sorted by segment id, with
 *     changes applied in place.
 * No I/O.
 */
#ifndef ESC_HB_SYNC_H
#define ESC_HB_SYNC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "wire.h"

/* A segment whose figures changed is re-sent for this long, so the
 * coordinator's demand estimate (a 1 s moving average) falls back to ~0. */
#define HB_SYNC_HOT_MS 5000

uint64_t hb_sync_stats_hash(const wire_seg_stats *s);
uint64_t hb_sync_assign_hash(const wire_assignment *a);

typedef struct hb_sync_slot {
    uint64_t acked;       /* figures the coordinator acknowledged; 0 = it holds none */
    uint64_t sent;        /* figures in heartbeat sent_corr (0 = sent as gone) */
    uint64_t sent_corr;   /* 0 = in no heartbeat waiting for its reply */
    uint64_t last;        /* figures at the previous heartbeat (0 = not served) */
    int64_t hot_until_ms; /* changed recently: carried until then */
    bool queued;          /* in the work list */
} hb_sync_slot;

typedef struct hb_sync {
    hb_sync_slot *slots; /* owned, by segment index */
    size_t nslots;
    size_t *work; /* owned, nslots entries: the slots a heartbeat visits */
    size_t nwork;
    /* Of the slots' last figures: how many are served (last != 0) and the
     * wrapping sum of their hashes, what a heartbeat reports. */
    uint32_t count;
    uint64_t digest;
    bool resync;          /* the next heartbeat begins a full report */
    uint64_t resync_corr; /* the first heartbeat of the full report in progress */
} hb_sync;

enum { HB_SYNC_SKIP = 0, HB_SYNC_SEND, HB_SYNC_GONE };

void hb_sync_init(hb_sync *t);
void hb_sync_fini(hb_sync *t);
/* Slots for n segments (new ones empty). Returns 0 or ESC_ENOMEM. */
int hb_sync_grow(hb_sync *t, size_t n);
/* Slot i (< nslots) may have new figures: the next heartbeat visits it. */
void hb_sync_mark(hb_sync *t, size_t i);
/* Every slot: the next heartbeat looks at all of them (a full report). */
void hb_sync_mark_all(hb_sync *t);
/* What the heartbeat does with slot i, whose figures hash to h now (0: the
 * segment is not served): HB_SYNC_SKIP, _SEND or _GONE. Notes h as seen
 * (count and digest follow). */
int hb_sync_want(hb_sync *t, size_t i, uint64_t h, int64_t now_ms);
/* Slot i went into heartbeat corr with figures h (0 = as gone). */
void hb_sync_sent(hb_sync *t, size_t i, uint64_t h, uint64_t corr);
/* Nothing left to do for slot i at now_ms until it is marked again: the
 * coordinator acknowledged its last figures, no heartbeat of it waits for
 * a reply, and it did not change in the last HB_SYNC_HOT_MS. */
bool hb_sync_settled(const hb_sync *t, size_t i, int64_t now_ms);
/* Takes entry k of the work list out; the list keeps its order (the slots
 * marked first are looked at, and sent, first) and closes up at
 * hb_sync_compact, after the heartbeat's visits. */
void hb_sync_unqueue(hb_sync *t, size_t k);
void hb_sync_compact(hb_sync *t);
/* The coordinator answered heartbeat corr: what it carried is acknowledged.
 * Replies are taken in increasing corr: a slot still waiting for an older
 * one waits no more (that reply is lost or was overtaken). */
void hb_sync_acked(hb_sync *t, uint64_t corr);
/* The coordinator holds nothing of ours (it restarted, or asked): forget
 * every acknowledgement; the next heartbeat begins a full report. */
void hb_sync_restart(hb_sync *t);

typedef struct hb_assign_set {
    wire_assignment *v; /* owned, sorted by segment_id */
    size_t n, cap;
    uint64_t digest; /* of the n entries, kept by the functions below */
} hb_assign_set;

void hb_assign_init(hb_assign_set *s);
void hb_assign_fini(hb_assign_set *s);
const wire_assignment *hb_assign_find(const hb_assign_set *s, uint64_t segment_id);
/* Replaces s by the n entries of a (any order; a later duplicate wins). */
int hb_assign_replace(hb_assign_set *s, const wire_assignment *a, size_t n);
/* Appends n entries (the set is sorted again by hb_assign_sort). */
int hb_assign_append(hb_assign_set *s, const wire_assignment *a, size_t n);
void hb_assign_sort(hb_assign_set *s);
/* Empties s (its memory stays). */
void hb_assign_clear(hb_assign_set *s);
/* Sets (or adds) the nupd entries and removes the ndel ids. Returns 0 or
 * ESC_ENOMEM. */
int hb_assign_apply(hb_assign_set *s, const wire_assignment *upd, size_t nupd, const uint64_t *del,
                    size_t ndel);
/* The set's count and digest, as kept (no walk). */
void hb_assign_sum(const hb_assign_set *s, uint32_t *count, uint64_t *digest);
/* The same summed over every entry: what the kept ones must equal. */
void hb_assign_sum_all(const hb_assign_set *s, uint32_t *count, uint64_t *digest);

#endif

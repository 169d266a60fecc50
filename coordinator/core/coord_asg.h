/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_asg.h - delta heartbeats, the coordinator's side (docs/protocols.md,
 * "Heartbeats"). No I/O.
 *
 * The mirror: per node, what it reported of each segment it serves, as the
 * hash of the figures (hb_sync.h), summed up as a count and a digest kept
 * up to date entry by entry. A delta heartbeat updates it; a complete one
 * (nothing left for a next message) carries the node's own count and
 * digest: when they differ the reply asks for a full report.
 *
 * The published assignment: coord_asg_publish compares the segments of the
 * items marked COORD_WORK_ASSIGN (coord_dirty.h: every change to an owner,
 * epoch, state, pause or node marks them; the daemon's tick adds a slice of
 * the rest in round robin, the safety sweep) with their
 * assignment now (owner, epoch, state, paused; in none when it is not
 * served) with what was published, and for each difference takes the next
 * version number and notes the segment in the log of each node concerned
 * (the one that had it, the one that has it). A reply carries the changes
 * after the version the node has (the segment's published entry, or its id
 * as unassigned), or, for a node without a usable version, the full
 * assignment at one version, in parts (a cursor over the catalog's
 * segments); the changes after that version follow as a delta. A node's
 * log keeps what its heartbeats have not acknowledged, up to
 * COORD_ASG_LOG_MAX entries (past that: a full assignment).
 */
#ifndef ESC_COORD_ASG_H
#define ESC_COORD_ASG_H

#include "coord_cat.h"

#define COORD_ASG_LOG_MAX 65536

typedef struct coord_asg_ent {
    uint64_t seq;
    coord_seg *seg; /* borrowed */
} coord_asg_ent;

typedef struct coord_mirror_ent {
    hmap_node by_id;
    uint64_t segment_id;
    uint64_t hash;
} coord_mirror_ent;

/* Versions start past first_version (a new process starts past every
 * version an earlier one gave out: the caller passes a clock reading). */
void coord_asg_start(coord_cat *c, uint64_t incarnation, uint64_t first_version);
void coord_asg_node_fini(coord_node *n);

/* Publishes the assignment of the marked items' segments (O(marked), no
 * allocation unless something changed). */
void coord_asg_publish(coord_cat *c);
/* True if the reply to hb starts a full assignment (publish first). */
bool coord_asg_full_start(const coord_cat *c, const coord_node *n, const wire_heartbeat *hb);
/* The assignment part of the reply to n's heartbeat hb. */
void coord_asg_reply(coord_cat *c, coord_node *n, const wire_heartbeat *hb, wire_hb_reply *out);

/* The mirror. */
void coord_mirror_clear(coord_node *n);
void coord_mirror_put(coord_node *n, uint64_t segment_id, uint64_t hash);
void coord_mirror_del(coord_node *n, uint64_t segment_id);

#endif

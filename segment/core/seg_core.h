/* SPDX-License-Identifier: Apache-2.0 */
/*
 * seg_core.h - the segment node's decisions: counters, holds, idempotency,
 * expiry. Pure: no libuv, libpq or nanomsg; time is a parameter. The node
 * (segment/node/) feeds it requests, collects the ops it returns into a
 * group-commit batch, and tells it afterwards whether the batch committed
 * (seg_core_commit_op) or not (seg_core_undo_op). cmocka and the simulator
 * drive it directly.
 *
 * Invariants (checked by seg_core_check over everything, asserted per
 * segment by seg_core_assert_segment before each batch is written):
 *   per segment: available + held + sold + returning == allocated, all >= 0;
 *   allocated changes only by transfers: a GIVE lowers it (and available)
 *   tentatively and an undo raises it back; a RECEIVE raises it (and
 *   available) only when its batch committed the transfer as received;
 *   held == sum of qty of its holds in state HELD (tentative ones included);
 *   a hold with a pending op is not touched by another op until it settles.
 * Tentative means "decided in memory, not yet committed": a tentative
 * change is visible to later decisions (so no unit is promised twice) but
 * nothing about it is told to anyone until its batch commits.
 */
#ifndef ESC_SEG_CORE_H
#define ESC_SEG_CORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"
#include "heap.h"
#include "hmap.h"
#include "seg_void.h"

enum seg_hold_state { SEG_HELD = 1, SEG_CONVERTED = 2, SEG_CANCELLED = 3, SEG_EXPIRED = 4 };
enum seg_segment_state { SEG_ACTIVE = 0, SEG_DRAINING = 1, SEG_RETIRED = 2 };
enum seg_op_kind {
    SEG_OP_RESERVE = 1,
    SEG_OP_CONFIRM,
    SEG_OP_RELEASE,
    SEG_OP_EXPIRE,
    SEG_OP_EXTEND,
    SEG_OP_GIVE,   /* transfer out: the donor's available -= qty (tentative) */
    SEG_OP_RECEIVE /* transfer in: available += qty only once the commit said received */
};
enum seg_pending { SEG_PENDING_NONE = 0, SEG_PENDING_CREATE, SEG_PENDING_CHANGE };

typedef struct seg_item seg_item;
typedef struct seg_tenant seg_tenant;
typedef struct seg_segment seg_segment;
typedef struct seg_hold seg_hold;

/* A tenant of the items this node serves: its live holds here, and its cap
 * (fairness between tenants: one tenant cannot fill the node's table of
 * ESC_LIVE_HOLDS_MAX alone). Over the cap a reserve is ESC_EBUSY. */
struct seg_tenant {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    size_t live_holds;
    size_t live_holds_max; /* 0 = no cap but the node's */
};

struct seg_item {
    hmap_node by_name;
    seg_tenant *tenant; /* borrowed; owned by the core */
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    int32_t max_per_order; /* 0 = none */
    int32_t max_per_buyer; /* 0 = none */
    uint32_t hold_ttl_ms;
    bool paused;
    uint32_t remote_segments; /* active segments of the item owned by other nodes */
    size_t nsegs;
    seg_segment *segs[ESC_SEGMENTS_PER_ITEM_MAX]; /* borrowed; owned by the core */
    size_t rr;                                    /* round-robin start for reserves */
};

struct seg_segment {
    hmap_node by_id;
    uint64_t segment_id;
    uint64_t epoch;
    int64_t available, held, sold;
    /* Units given back by ops whose batch has not committed yet. They are
     * not available until it commits: if it fails they go back to held, and
     * must not have been sold to someone else in the meantime. */
    int64_t returning;
    int64_t allocated; /* available + held + sold + returning; changes only by transfers */
    /* Sum of qty of its holds in state held, kept by the holds' state
     * changes apart from the counters: the pair seg_core_assert_segment
     * compares with held. */
    int64_t holds_qty;
    uint64_t next_seq; /* next hold sequence number */
    /* Hold ids this owner may give: next_seq < seq_limit. The limit is
     * durable in segments.hold_seq under this owner's epoch before any id
     * under it is given (ESC_HOLD_SEQ_RANGE), so no other owner can give
     * the same id. Reaching it answers reserves ESC_EBUSY and sets
     * seq_wanted until a commit raises it (seg_core_seq_granted). */
    uint64_t seq_limit;
    bool seq_wanted;
    int state;         /* SEG_ACTIVE ... */
    bool fenced;       /* a newer owner exists (or it was unassigned): serve nothing */
    bool dry;          /* answered SEGMENT_EMPTY and got no units since (reported while set) */
    bool xfer_pending; /* a GIVE or RECEIVE of this segment waits for its batch */
    bool touched;      /* in seg_core.touched */
    bool unswept;      /* fenced, its holds not yet dropped (seg_core_fence_sweep) */
    /* Owned by the node: a batch committing now names this segment; its
     * next ops wait for the next batch (seg_delta.h leaves it out). */
    bool committing;
    /* Owned by the node: dropped because the coordinator's assignment no
     * longer named it here, not because a newer owner wrote (fenced stays
     * at the epoch it had). If the same epoch is assigned here again (a
     * move announced and never committed), it is loaded again. */
    bool released;
    uint64_t reserved; /* units reserved (committed) since it was loaded: demand */
    uint64_t empties;  /* SEGMENT_EMPTY answers since it was loaded: unmet demand */
    seg_item *item;    /* borrowed */
};

struct seg_hold {
    hmap_node by_id;
    hmap_node by_key;
    hmap_node by_buyer; /* in pending_buyers while a reserve of a limited item is pending */
    heap_node expiry;   /* in seg_core.expiry while held, keyed by expires_at_ms */
    uint64_t hold_id;
    seg_segment *seg; /* borrowed */
    int64_t expires_at_ms;
    int64_t ended_at_ms; /* final holds: when they ended (retention) */
    int64_t request_hash;
    /* The reserve call that made it (ReserveReq.attempt); 0 when unknown (a
     * hold loaded from the database, or a caller that sends none). A retry
     * from another call is a replay (seg_result.replay). */
    uint64_t attempt;
    int32_t qty;           /* <= ESC_QTY_MAX */
    int32_t qty_sold;      /* <= qty */
    seg_hold *retain_next; /* final holds kept for answering retries */
    void *waiters;         /* owned by the node: requests parked until this hold settles */
    /* buyer_id and key point into strs, the tail of the hold's own
     * allocation: one malloc per hold (~184 bytes with typical ids), not
     * three. Sizes: the memory note at ESC_LIVE_HOLDS_MAX (esc_limits.h). */
    char *buyer_id;  /* in strs */
    char *key;       /* in strs (idempotency key) */
    uint8_t state;   /* seg_hold_state */
    uint8_t pending; /* seg_pending */
    bool extended;
    char strs[]; /* buyer_id NUL key NUL */
};

/* One decision that must be committed before anyone hears of it. Hold ops
 * name their hold (seg is hold->seg); transfer ops (GIVE, RECEIVE) have no
 * hold and name seg, transfer_id and qty. */
typedef struct seg_op {
    uint8_t kind;               /* seg_op_kind */
    bool by_operator;           /* release: recorded with actor 'operator' */
    seg_hold *hold;             /* borrowed; NULL for transfer ops */
    seg_segment *seg;           /* borrowed; the segment the op writes (always set) */
    uint64_t transfer_id;       /* GIVE, RECEIVE */
    int64_t qty;                /* GIVE: units taken out; RECEIVE: units to add on commit */
    int64_t sold;               /* confirm: units sold */
    int64_t returned;           /* units back to available (confirm rest, release, expire) */
    int64_t prev_expires_at_ms; /* extend: for undo */
    int64_t new_expires_at_ms;  /* extend */
    void *req;                  /* the node's request waiting for this op, or NULL */
} seg_op;

/* What the node must do with a request. */
typedef enum seg_disp {
    SEG_REPLY = 0, /* answer now with status (and hold if not NULL) */
    SEG_COMMIT,    /* op must go into the batch; answer after commit */
    SEG_PARK,      /* hold has a pending op: park on hold->waiters, re-run later */
    SEG_LOOKUP,    /* hold (or a resolve's key) not in memory: ask the database */
} seg_disp;

typedef struct seg_result {
    seg_disp disp;
    int status;          /* for SEG_REPLY (and the eventual reply of SEG_COMMIT) */
    const char *message; /* static; a more specific sentence than esc_strerror, or NULL */
    bool went_dry;       /* managed: a segment became dry with this answer (report it now) */
    seg_hold *hold;      /* borrowed */
    seg_op op;           /* for SEG_COMMIT */
    /* reserve answered with the key's existing hold: made by another call
     * (another attempt), or by one the core cannot name (attempt 0) */
    bool replay;
} seg_result;

typedef struct seg_reserve_in {
    const char *tenant_id, *item_id, *buyer_id, *key;
    int64_t qty;
    uint32_t ttl_ms;
    uint64_t segment_id; /* hint */
    int64_t request_hash;
    uint64_t attempt; /* the client's call number (0 = none): a voided one reserves nothing */
    bool resolve;     /* reserve nothing: the key's hold, or SEG_LOOKUP (seg_void.h) */
} seg_reserve_in;

typedef struct seg_core {
    hmap items;          /* seg_item by (tenant, item) */
    hmap holds;          /* seg_hold by hold_id */
    hmap keys;           /* seg_hold by (tenant, key) */
    hmap pending_buyers; /* pending reserves of items with a per-buyer maximum */
    hmap segments;       /* seg_segment by segment_id (they live in segs[]) */
    seg_segment *segs;   /* owned array */
    size_t nsegs, segs_cap;
    seg_item **item_list; /* owned array of owned items */
    size_t nitems, items_cap;
    seg_hold *retain_head, *retain_tail; /* final holds, oldest first */
    size_t nretained;
    size_t live_holds;
    seg_tenant **tenants; /* owned array of owned tenants (few: a linear list) */
    size_t ntenants, tenants_cap;
    size_t tenant_holds_max; /* a new tenant's live_holds_max; 0 = none */
    int64_t retain_ms;
    size_t retain_max;
    /* Held holds by expiry, soonest first. A held hold is in it unless the
     * sweeper found it busy (an op pending), until that op settles. */
    heap expiry;
    /* Managed mode (a coordinator assigns segments): a reserve never hears
     * SOLD_OUT or TRY_LATER from a node, only the coordinator sees the whole
     * item; a segment hint that is not served here, or is draining, is
     * NOT_OWNER; a dry segment is SEGMENT_EMPTY and marked dry. */
    bool managed;
    seg_voids voids; /* attempts resolves voided */
    /* Hold sequence numbers a commit asks for past next_seq
     * (ESC_HOLD_SEQ_RANGE; the simulator uses fewer). */
    uint64_t seq_range;
    size_t seq_wanted; /* segments whose seq_wanted is set */
    /* Segments whose figures (what a heartbeat reports: epoch, counters,
     * state, fence, reserved, empties, dry) may have changed since
     * seg_core_touched_clear: indices into segs, each once (segs_cap
     * entries). Every change here marks its segment; the node's heartbeat
     * looks at these, not at every segment. */
    uint32_t *touched;
    size_t ntouched;
    size_t unswept;        /* segments fenced whose holds are still here */
    uint64_t fence_sweeps; /* passes over the holds that dropped fenced ones */
} seg_core;

int seg_core_init(seg_core *c, size_t segs_cap);
void seg_core_fini(seg_core *c);

/* Notes that s's figures may have changed (into c->touched). The core does
 * it for every change it makes (seg_core_set_state included); a caller
 * that changed a figure itself would call it too (none does). */
void seg_core_touch(seg_core *c, seg_segment *s);
/* Sets s's state (SEG_ACTIVE, SEG_DRAINING: the coordinator's word). */
void seg_core_set_state(seg_core *c, seg_segment *s, int state);
/* Empties c->touched: its segments were looked at. */
void seg_core_touched_clear(seg_core *c);

/* Adds an item (copied) unless present; returns it via *out. */
int seg_core_add_item(seg_core *c, const seg_item *proto, seg_item **out);
seg_item *seg_core_find_item(seg_core *c, const char *tenant_id, const char *item_id);
bool seg_core_knows_tenant(const seg_core *c, const char *tenant_id);
/* The tenant's entry, or NULL when no item of it was added. */
seg_tenant *seg_core_find_tenant(seg_core *c, const char *tenant_id);
/* Adds a loaded segment of item: proto->next_seq..seq_limit is the range
 * of hold sequence numbers its loader reserved (written to
 * segments.hold_seq under the new epoch). Returns ESC_EINVAL if counters
 * are inconsistent or the range is empty or reversed, ESC_ECONFLICT if the
 * segment is served already. A segment
 * that was fenced (dropped) is loaded again in place, with the new counters
 * and epoch: the caller checks that the epoch is higher. */
int seg_core_add_segment(seg_core *c, seg_item *item, const seg_segment *proto, seg_segment **out);
seg_segment *seg_core_find_segment(seg_core *c, uint64_t segment_id);
/* Adds a loaded hold (state HELD or final). Strings copied. */
int seg_core_add_hold(seg_core *c, seg_segment *seg, const seg_hold *proto, const char *buyer_id,
                      const char *key, seg_hold **out);

/* Decisions. A reserve whose key has a hold gets that hold (PARK while it
 * is being created), with res->replay unless this call's attempt made it.
 * A resolve (in->resolve) never reserves: with the key not in memory it
 * voids in->attempt and answers SEG_LOOKUP (the database says whether the
 * key has a hold anywhere), or NOT_OWNER when the segment it names is not
 * served here, or ESC_EBUSY when the void table is full. A reserve whose
 * attempt was voided is ESC_ECONFLICT: a late copy. */
void seg_core_reserve(seg_core *c, const seg_reserve_in *in, int64_t now_ms, seg_result *res);
void seg_core_confirm(seg_core *c, const char *tenant_id, uint64_t hold_id, int64_t qty,
                      int64_t now_ms, seg_result *res);
void seg_core_release(seg_core *c, const char *tenant_id, uint64_t hold_id, int64_t now_ms,
                      seg_result *res);
void seg_core_extend(seg_core *c, const char *tenant_id, uint64_t hold_id, uint32_t ttl_ms,
                     int64_t now_ms, seg_result *res);
void seg_core_get(seg_core *c, const char *tenant_id, uint64_t hold_id, seg_result *res);

/* Transfers (demarcation). GIVE moves min(qty, available) out of seg at
 * once, tentatively (available and allocated), so no unit given away is
 * sold meanwhile; RECEIVE adds nothing until its batch commits as received
 * (the node then sets op->qty to what the database received and calls
 * seg_core_commit_op). A GIVE that the database found stale, or whose batch
 * failed, is undone with seg_core_undo_op. One transfer op per segment at a
 * time. Return 0 and fill *op, ESC_ENOT_OWNER (fenced), ESC_EBUSY (the
 * segment has a transfer op pending) or ESC_EINVAL (qty < 1). */
int seg_core_give(seg_core *c, seg_segment *s, uint64_t transfer_id, int64_t qty, seg_op *op);
int seg_core_receive(seg_core *c, seg_segment *s, uint64_t transfer_id, int64_t qty, seg_op *op);

/* Hold id ranges (ESC_HOLD_SEQ_RANGE). seg_core_seq_ask: the limit a batch
 * touching s asks for (segments.hold_seq = GREATEST(hold_seq, ask), under
 * the fence): next_seq + c->seq_range, at most 2^ESC_HOLD_SEQ_BITS.
 * seg_core_seq_granted: the batch that asked for limit committed; raises
 * s->seq_limit to it (never lowers) and clears s->seq_wanted. Ignored for
 * a fenced segment. */
uint64_t seg_core_seq_ask(const seg_core *c, const seg_segment *s);
void seg_core_seq_granted(seg_core *c, seg_segment *s, uint64_t limit);

/* Expiry: fills up to max ops for held holds whose expiry passed. */
size_t seg_core_sweep(seg_core *c, int64_t now_ms, seg_op *ops, size_t max);

/* Batch outcome: the op's batch committed / did not commit. After commit of
 * a reserve whose hold the database refused (duplicate key, buyer limit)
 * call undo instead. Either may free the hold (tentative reserve undone, or
 * retention trimmed later): take hold->waiters first. */
void seg_core_commit_op(seg_core *c, const seg_op *op, int64_t now_ms);
void seg_core_undo_op(seg_core *c, const seg_op *op);

/* A newer owner took the segment: it serves nothing from now on, and its
 * holds leave memory at the next seg_core_fence_sweep. The caller has
 * undone every pending op on it first, and sweeps before anything else
 * runs (a segment loaded again under its id would meet its old holds). */
void seg_core_fence_mark(seg_core *c, seg_segment *seg);
/* Drops the holds of every segment marked since the last sweep, in one
 * pass over the holds: dropping many segments at once (a rebalance moving
 * them away) costs one pass, not one per segment. Waiters of dropped holds
 * are handed to waiters_cb (may be NULL if none can exist). Returns the
 * holds dropped. */
size_t seg_core_fence_sweep(seg_core *c, void (*waiters_cb)(void *waiters, void *arg), void *arg);
/* seg_core_fence_mark(seg), then seg_core_fence_sweep. */
void seg_core_fence(seg_core *c, seg_segment *seg, void (*waiters_cb)(void *waiters, void *arg),
                    void *arg);

/* Trims final holds kept past retention (by age and count), and old voids. */
void seg_core_trim(seg_core *c, int64_t now_ms);

/* Checks every invariant in one pass over the holds; returns 0, ESC_EINTERNAL
 * (and names the segment) or ESC_ENOMEM. For state that came from outside
 * (loaded from the database): a failure is answered, not asserted. */
int seg_core_check(const seg_core *c, uint64_t *bad_segment);
/* Asserts (ESC_ASSERT, every build) the invariants of one served segment
 * at O(1): counters >= 0, available + held + sold + returning == allocated,
 * held == holds_qty. A fenced segment serves nothing and is not checked.
 * Called for every segment a batch touches before the batch is written
 * (seg_delta_build). */
void seg_core_assert_segment(const seg_segment *s);

/* Hold id helpers. */
static inline uint64_t seg_core_hold_segment(uint64_t hold_id)
{
    return hold_id >> ESC_HOLD_SEQ_BITS;
}

#endif

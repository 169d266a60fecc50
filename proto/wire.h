/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire.h - escrow frames <-> validated domain structs.
 *
 * The only code that touches protobuf-c. Decoding validates every field
 * against common/limits.h and returns a struct the rest of the program can
 * trust; anything malformed is ESC_EPROTO, anything out of bounds ESC_EINVAL
 * (or ESC_ETOOBIG), with a sentence in *why for the error reply. Encoding
 * writes into caller memory (no allocation on the hot path).
 *
 * This header is proto/'s whole contract. Behind it, one file per job:
 * wire_request.c (the Request frame, the tenant operations), wire_cluster.c
 * (heartbeat and its answer, admin, quota), wire_reply.c (the Reply frame),
 * wire_route.c (routes and the PUB frame), wire_field.c (the field rules),
 * wire_arena.c (decoding memory); their own headers are proto/'s private.
 */
#ifndef ESC_WIRE_H
#define ESC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "auth.h"
#include "esc_limits.h"

#define WIRE_VERSION 1
#define WIRE_WHY_MAX 160
/* A signed frame ends with its MAC field: tag, length, AUTH_MAC_BYTES. */
#define WIRE_MAC_TRAILER_BYTES (2 + AUTH_MAC_BYTES)
/* sent_at_ms above this (the year 6429) is not a clock: refused. */
#define WIRE_SENT_AT_MS_MAX (1LL << 47)

typedef enum wire_op {
    WIRE_OP_NONE = 0,
    WIRE_OP_RESERVE,
    WIRE_OP_CONFIRM,
    WIRE_OP_RELEASE,
    WIRE_OP_EXTEND,
    WIRE_OP_GET,
    WIRE_OP_STATS,
    WIRE_OP_ROUTE,     /* libescrow -> coordinator: an item's routing table */
    WIRE_OP_HEARTBEAT, /* node -> coordinator: lease, stats, transfer results */
    WIRE_OP_ADMIN,     /* escrowctl -> coordinator: item and node operations */
    WIRE_OP_QUOTA,     /* coordinator <-> coordinator, escrowctl quota move */
} wire_op;

/* Administrative operations (AdminReq.op). */
typedef enum wire_admin_op {
    WIRE_ADMIN_NONE = 0,
    WIRE_ADMIN_RESTOCK,   /* item, qty > 0: add units (splits a collapsed item again) */
    WIRE_ADMIN_REDUCE,    /* item, qty > 0: remove units that are not held or sold */
    WIRE_ADMIN_PAUSE,     /* item: no new reserves; holds go on */
    WIRE_ADMIN_RESUME,    /* item */
    WIRE_ADMIN_SPLIT,     /* item, segments 1..ESC_SEGMENTS_PER_ITEM_MAX */
    WIRE_ADMIN_COLLAPSE,  /* item: everything into one tail segment now */
    WIRE_ADMIN_REBALANCE, /* item: run the rebalancer for it now */
    WIRE_ADMIN_RETIRE,    /* item: stops selling for good */
    WIRE_ADMIN_DRAIN,     /* node: hand its segments to other nodes */
    WIRE_ADMIN_UNDRAIN,   /* node: may take segments again */
    WIRE_ADMIN_RELOAD,    /* re-read the catalog (items created by escrowctl) now */
    WIRE_ADMIN_LAST_
} wire_admin_op;

/* Segment states, as segments.state and seg_core's SEG_ACTIVE... */
enum { WIRE_SEG_ACTIVE = 0, WIRE_SEG_DRAINING = 1, WIRE_SEG_RETIRED = 2 };
/* Transfer commands (TransferCmd.kind) and results (TransferResult.outcome). */
enum { WIRE_XFER_GIVE = 1, WIRE_XFER_RECEIVE = 2 };
enum { WIRE_XFER_SENT = 1, WIRE_XFER_RECEIVED, WIRE_XFER_CANCELLED, WIRE_XFER_STALE };

/* QuotaReq.kind. STATUS: the sender's global items, answered with the
 * receiver's view of the same items. OFFER: the donor's transfer, applied
 * by the receiver once per (from_region, transfer_id). MOVE: an operator
 * asks the donor (the receiver of the request) to send qty to to_region. */
enum { WIRE_QUOTA_STATUS = 1, WIRE_QUOTA_OFFER, WIRE_QUOTA_MOVE };

typedef struct wire_quota_item {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    int64_t quota;        /* items.total in that region */
    int64_t unused;       /* available + unallocated */
    int64_t demand_milli; /* units per 1000 s */
    int64_t floor;
    int64_t in_flight; /* sent, not yet confirmed by the receiver */
    bool known;
    int64_t held, sold;
    int64_t reduce_pending; /* a global reduce carried out there still takes this many */
    int64_t reduce_ask;     /* running total the sender's reduce asks of the receiver (proto) */
    uint64_t changes;       /* global restocks and reduces carried out there */
    int64_t change_sum;     /* their sum */
    uint32_t share;         /* [quota] share; 0 = not said */
} wire_quota_item;

typedef struct wire_quota {
    uint32_t kind; /* WIRE_QUOTA_* */
    char from_region[ESC_REGION_LEN_MAX + 1];
    char to_region[ESC_REGION_LEN_MAX + 1];
    uint64_t transfer_id;
    bool fresh; /* STATUS: answer with sold units read after it arrived (coord_gfresh.h) */
    size_t nitems;
    wire_quota_item items[ESC_QUOTA_ITEMS_MAX];
} wire_quota;

/* Hold states, numbered as in escrow.proto and esc_hold_state. */
enum { WIRE_HOLD_HELD = 1, WIRE_HOLD_CONVERTED, WIRE_HOLD_CANCELLED, WIRE_HOLD_EXPIRED };

typedef struct wire_request {
    uint64_t corr_id;
    wire_op op;
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];   /* reserve, stats (may be empty for stats) */
    char buyer_id[ESC_BUYER_LEN_MAX + 1]; /* reserve */
    char key[ESC_KEY_LEN_MAX + 1];        /* reserve */
    int64_t qty;                          /* reserve: 1..ESC_QTY_MAX; confirm: 0 = all */
    uint32_t ttl_ms;                      /* reserve, extend: 0 or within bounds */
    uint64_t segment_id;                  /* reserve: routing hint, 0 = any */
    uint64_t attempt;                     /* reserve: the call's number, 0 = none */
    bool resolve;                         /* reserve: look the key up, reserve nothing */
    uint64_t hold_id;                     /* confirm, release, extend, get */
    bool by_operator;                     /* release by escrowctl */
    /* admin: op, node (drain/undrain), segments (split); item_id and qty as above */
    uint32_t admin_op;
    char node_id[ESC_NODE_ID_LEN_MAX + 1];
    uint32_t nsegments;
    /* admin restock/reduce of a global item: global set, op_id 1..128
     * printable bytes, region "" or a region's name (restock: where to put
     * the units); both empty otherwise */
    bool global;
    char op_id[ESC_KEY_LEN_MAX + 1];
    char region[ESC_REGION_LEN_MAX + 1];
    /* heartbeat: decoded into storage owned by wire.c, one per thread, valid
     * until the next wire_decode_request on the same thread */
    const struct wire_heartbeat *hb;
    /* quota: the same (item_id and qty above carry offer/move's) */
    const wire_quota *quota;
    /* Encode only: the key that signs the frame (borrowed); NULL = the
     * process's (wire_set_credential), unless unsigned_frame. Decoding
     * leaves both zero: the signature is checked during decoding
     * (wire_decode_request_checked). */
    const auth_key *signer;
    bool unsigned_frame;
} wire_request;

typedef struct wire_hold {
    uint64_t hold_id;
    uint64_t segment_id;
    char item_id[ESC_ITEM_LEN_MAX + 1];
    char buyer_id[ESC_BUYER_LEN_MAX + 1];
    int64_t qty;
    int64_t qty_sold;
    int state; /* WIRE_HOLD_* */
    int64_t expires_at_ms;
    bool extended;
} wire_hold;

typedef struct wire_seg_stats {
    uint64_t segment_id;
    char item_id[ESC_ITEM_LEN_MAX + 1];
    uint64_t epoch;
    int64_t available;
    int64_t held;
    int64_t sold;
    uint32_t state;
    char tenant_id[ESC_TENANT_LEN_MAX + 1]; /* heartbeat: may be empty */
    uint64_t reserved;                      /* heartbeat: units reserved since loaded (demand) */
    uint64_t empties;                       /* heartbeat: SEGMENT_EMPTY answers since loaded */
} wire_seg_stats;

typedef struct wire_transfer_result {
    uint64_t transfer_id;
    uint32_t outcome; /* WIRE_XFER_SENT ... */
    int64_t qty;
} wire_transfer_result;

typedef struct wire_heartbeat {
    char node_id[ESC_NODE_ID_LEN_MAX + 1];
    uint64_t incarnation;
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1];
    bool stopping;
    size_t nsegs;
    wire_seg_stats segs[ESC_HB_SEGMENTS_MAX];
    size_t nxfers;
    wire_transfer_result xfers[ESC_HB_TRANSFERS_MAX];
    size_t ndry;
    uint64_t dry[ESC_HB_SEGMENTS_MAX];
    /* delta heartbeats (escrow.proto HeartbeatReq): false = segs is the
     * whole set (an older node) */
    bool delta, resync, more;
    size_t ngone;
    uint64_t gone[ESC_HB_SEGMENTS_MAX];
    uint32_t seg_count;
    uint64_t seg_digest;
    uint64_t assign_version, assign_full_version, assign_cursor;
} wire_heartbeat;

typedef struct wire_assignment {
    uint64_t segment_id;
    uint64_t epoch;
    uint32_t state; /* WIRE_SEG_ACTIVE / WIRE_SEG_DRAINING */
    bool paused;
} wire_assignment;

typedef struct wire_xfer_cmd {
    uint64_t transfer_id;
    uint32_t kind; /* WIRE_XFER_GIVE / WIRE_XFER_RECEIVE */
    uint64_t segment_id;
    int64_t qty;
} wire_xfer_cmd;

typedef struct wire_hb_reply {
    uint32_t lease_ms;
    uint32_t heartbeat_ms;
    size_t nsegs;
    wire_assignment segs[ESC_HB_SEGMENTS_MAX];
    size_t nxfers;
    wire_xfer_cmd xfers[ESC_HB_TRANSFERS_MAX];
    /* delta assignments (escrow.proto HeartbeatReply): coord_incarnation 0
     * = an older coordinator, segs is the whole set */
    uint64_t coord_incarnation;
    bool assign_delta, assign_more, resync;
    uint64_t assign_base, assign_version, assign_cursor, assign_next;
    size_t nunassigned;
    uint64_t unassigned[ESC_HB_SEGMENTS_MAX];
    uint32_t assign_count;
    uint64_t assign_digest;
} wire_hb_reply;

typedef struct wire_route_seg {
    uint64_t segment_id;
    uint64_t epoch;
    uint32_t state;                          /* WIRE_SEG_* */
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1]; /* empty: no owner right now */
} wire_route_seg;

typedef struct wire_route {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    uint64_t version;
    bool sold_out;
    bool paused;
    uint64_t tail_segment; /* non-zero: collapsed, every reserve goes there */
    size_t nsegs;
    wire_route_seg segs[ESC_ROUTE_SEGMENTS_MAX];
} wire_route;

typedef struct wire_reply {
    uint64_t corr_id;
    int status; /* 0 or ESC_E* */
    char message[WIRE_WHY_MAX];
    bool has_hold;
    wire_hold hold;
    /* reserve: the hold existed before this call (Reply.replay); only with
     * has_hold, a decoder refuses it otherwise */
    bool replay;
    size_t nsegs;
    wire_seg_stats *segs; /* borrowed; encode reads nsegs, decode fills up to segs_cap */
    size_t segs_cap;
    /* Optional parts. Encode: sent when non-NULL (borrowed). Decode: filled
     * when the caller points them at storage and the reply carries them
     * (has_route / has_hb say so); ignored when NULL. */
    wire_route *route;
    bool has_route;
    wire_hb_reply *hb;
    bool has_hb;
    /* QuotaReq's answer: encode sends nquota entries of quota; decode
     * writes up to quota_cap of them (NULL: ignored). */
    wire_quota_item *quota;
    size_t nquota, quota_cap;
    char region[ESC_REGION_LEN_MAX + 1];
} wire_reply;

/* The field rules, shared by the decoder and by libescrow (which checks
 * before it sends, so a bad call fails locally). */
/* True if s is 1..max bytes of printable ASCII (0x21..0x7e). */
bool wire_id_valid(const char *s, size_t max);
/* 0 (the item's) or ESC_TTL_MS_MIN..ESC_TTL_MS_MAX. */
bool wire_ttl_valid(uint32_t ttl_ms);
/* Names a segment 1..ESC_SEGMENT_ID_MAX (hold ids are segment << 40 | seq). */
bool wire_hold_id_valid(uint64_t hold_id);

/* Decodes and validates a request. Returns 0, or ESC_EPROTO / ESC_EINVAL /
 * ESC_ETOOBIG with *why set; out->corr_id is set whenever the frame parsed,
 * so the error reply can be correlated. */
int wire_decode_request(const void *buf, size_t len, wire_request *out, char why[WIRE_WHY_MAX]);

/* Who may send an operation: values as auth.h's AUTH_ACCESS_*. TENANT:
 * reserve, confirm, release, extend, get, stats, route. ADMIN: AdminReq,
 * quota MOVE, release by_operator. INTERNAL: heartbeat, quota STATUS and
 * OFFER. */
typedef enum wire_access {
    WIRE_ACCESS_TENANT = 1,
    WIRE_ACCESS_ADMIN = 2,
    WIRE_ACCESS_INTERNAL = 3
} wire_access;

/* The outer frame of a request, as an access check sees it: parsed and
 * bounded, the operation not yet decoded. Pointers are valid during the
 * check only. */
typedef struct wire_head {
    uint64_t corr_id;
    const char *tenant_id; /* validated; "" when the operation names none */
    auth_sig sig;          /* the signature, bounded (key id well formed, MAC last) */
    wire_op op;
    wire_access access;
} wire_head;

/* Returns 0 to let the request be decoded, or an ESC_E* code with a sentence
 * in why: the decode then fails with that code and out holds nothing but
 * corr_id and tenant_id. */
typedef int (*wire_check_fn)(const wire_head *head, char why[WIRE_WHY_MAX], void *arg);

/* wire_decode_request with check (NULL: none) called right after the outer
 * frame (version, signature fields, tenant) parsed and before the
 * operation is decoded into out. The signature fields are bounded here
 * whether or not a check runs: key_id empty or AUTH_KEY_ID_LEN lowercase
 * hex, all four fields or none, the MAC AUTH_MAC_BYTES long and the
 * frame's last field, sent_at_ms <= WIRE_SENT_AT_MS_MAX, the retired
 * cleartext credential <= ESC_CREDENTIAL_LEN_MAX bytes. */
int wire_decode_request_checked(const void *buf, size_t len, wire_request *out,
                                char why[WIRE_WHY_MAX], wire_check_fn check, void *arg);

/* The process's own key (its text, NUL-terminated; NULL or "" = none): it
 * signs wire_encode_heartbeat's, wire_encode_admin's and
 * wire_encode_quota's frames, and wire_encode_request's when req->signer
 * is NULL. The text is parsed here and never kept: only the key id and the
 * signing key. Set once at start, before any thread encodes: the daemons'
 * cluster key, escrowctl's admin key. libescrow never sets it (each handle
 * signs with its own). Returns 0 or ESC_EAUTH (not a well-formed key; the
 * process then has none). */
int wire_set_credential(const char *credential);
/* Encodes req into buf, signed (see wire_request.signer). It does not
 * validate the fields (libescrow does, before it sends; the server
 * validates again on decode). Returns 0 and *len, ESC_EINVAL for an
 * unknown op, ESC_ETOOBIG if cap is too small. */
int wire_encode_request(const wire_request *req, void *buf, size_t cap, size_t *len);

/* Signs an encoded request again: frame (len bytes, signed or not) is
 * copied into out (cap bytes) with its signature fields replaced by
 * signer's (NULL: none) made at sent_at_ms (0: now). For tools and tests
 * that need a frame signed at another time; the encoders sign on their
 * own. Returns 0 and *out_len, ESC_EPROTO (not a request), ESC_ETOOBIG. */
int wire_sign_frame(const void *frame, size_t len, const auth_key *signer, int64_t sent_at_ms,
                    void *out, size_t cap, size_t *out_len);

/* Every field of a Request, unvalidated and unbounded (pointers, any
 * version, any credential length): what a careless or hostile client could
 * send. For tests and tools that must produce such frames; libescrow uses
 * wire_encode_request. */
typedef struct wire_raw_request {
    uint32_t version;
    uint64_t corr_id;
    const char *tenant_id;  /* borrowed, as every pointer here */
    const void *credential; /* the retired cleartext field */
    size_t credential_len;
    const auth_key *signer; /* NULL: unsigned */
    int64_t sent_at_ms;     /* the signature's clock; 0 = now */
    int op;                 /* WIRE_OP_*; anything else encodes a frame without an operation */
    const char *item_id, *buyer_id, *key;
    int64_t qty;
    uint32_t ttl_ms;
    uint64_t segment_id, hold_id;
    bool by_operator; /* release */
    uint64_t attempt; /* reserve */
    bool resolve;     /* reserve */
} wire_raw_request;

/* Encodes r into buf. Returns 0 and *len, or ESC_ETOOBIG if cap is too small. */
int wire_encode_raw(const wire_raw_request *r, void *buf, size_t cap, size_t *len);

/* Heartbeat and admin requests (wire_encode_request covers the other ops,
 * route included). Return 0 and *len, ESC_EINVAL (bounds), ESC_ETOOBIG. */
int wire_encode_heartbeat(uint64_t corr_id, const wire_heartbeat *hb, void *buf, size_t cap,
                          size_t *len);
int wire_encode_admin(uint64_t corr_id, const char *tenant_id, uint32_t admin_op,
                      const char *item_id, const char *node_id, int64_t qty, uint32_t nsegments,
                      void *buf, size_t cap, size_t *len);

/* A restock or reduce (admin_op) of a global item: op_id (1..128 printable
 * bytes) names the operation, region (NULL or "" = the coordinator picks)
 * where a restock's units go. Returns as wire_encode_admin. */
int wire_encode_admin_global(uint64_t corr_id, const char *tenant_id, uint32_t admin_op,
                             const char *item_id, int64_t qty, const char *op_id,
                             const char *region, void *buf, size_t cap, size_t *len);

/* A QuotaReq (tenant_id: the item's for offer and move, may be NULL for
 * status). Returns 0 and *len, ESC_EINVAL (bounds), ESC_ETOOBIG. */
int wire_encode_quota(uint64_t corr_id, const char *tenant_id, const wire_quota *q,
                      const char *item_id, int64_t qty, void *buf, size_t cap, size_t *len);

/* A routing update on the PUB socket: tenant_id, NUL, encoded Route. */
int wire_encode_route_pub(const wire_route *r, void *buf, size_t cap, size_t *len);
/* Decodes and validates one; ESC_EPROTO / ESC_EINVAL if malformed. */
int wire_decode_route_pub(const void *buf, size_t len, wire_route *out);

int wire_encode_reply(const wire_reply *rep, void *buf, size_t cap, size_t *len);
/* Decodes a reply into out, which the caller zero-initialises and then
 * points at the storage it wants filled (the decoder reads segs, segs_cap,
 * route, hb, quota and quota_cap from it: an uninitialised sink is a write
 * through a garbage pointer). segs are written up to segs_cap (nsegs says
 * how many); route and hb as described in wire_reply. A route or heartbeat part that
 * breaks its bounds makes the whole reply ESC_EPROTO. */
int wire_decode_reply(const void *buf, size_t len, wire_reply *out);

/* Hash of the parameters that make a reserve "the same request" (item,
 * buyer, qty): a key reused with another hash is IDEMPOTENCY_MISMATCH. */
int64_t wire_reserve_hash(const char *item_id, const char *buyer_id, int64_t qty);

#endif

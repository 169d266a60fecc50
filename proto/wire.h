/*
 * wire.h - escrow frames <-> validated domain structs.
 *
 * The only code that touches protobuf-c. Decoding validates every field
 * against common/limits.h and returns a struct the rest of the program can
 * trust; anything malformed is ESC_EPROTO, anything out of bounds ESC_EINVAL
 * (or ESC_ETOOBIG), with a sentence in *why for the error reply. Encoding
 * writes into caller memory (no allocation on the hot path).
 */
#ifndef ESC_WIRE_H
#define ESC_WIRE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"

#define WIRE_VERSION 1
#define WIRE_WHY_MAX 160

typedef enum wire_op {
    WIRE_OP_NONE = 0,
    WIRE_OP_RESERVE,
    WIRE_OP_CONFIRM,
    WIRE_OP_RELEASE,
    WIRE_OP_EXTEND,
    WIRE_OP_GET,
    WIRE_OP_STATS,
} wire_op;

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
    uint64_t hold_id;                     /* confirm, release, extend, get */
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
} wire_seg_stats;

typedef struct wire_reply {
    uint64_t corr_id;
    int status; /* 0 or ESC_E* */
    char message[WIRE_WHY_MAX];
    bool has_hold;
    wire_hold hold;
    size_t nsegs;
    wire_seg_stats *segs; /* borrowed; encode reads nsegs, decode fills up to segs_cap */
    size_t segs_cap;
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
/* Encodes req into buf. It does not validate the fields (libescrow does,
 * before it sends; the server validates again on decode). Returns 0 and
 * *len, ESC_EINVAL for an unknown op, ESC_ETOOBIG if cap is too small. */
int wire_encode_request(const wire_request *req, void *buf, size_t cap, size_t *len);

/* Every field of a Request, unvalidated and unbounded (pointers, any
 * version, any credential length): what a careless or hostile client could
 * send. For tests and tools that must produce such frames; libescrow uses
 * wire_encode_request. */
typedef struct wire_raw_request {
    uint32_t version;
    uint64_t corr_id;
    const char *tenant_id; /* borrowed, as every pointer here */
    const void *credential;
    size_t credential_len;
    int op; /* WIRE_OP_*; anything else encodes a frame without an operation */
    const char *item_id, *buyer_id, *key;
    int64_t qty;
    uint32_t ttl_ms;
    uint64_t segment_id, hold_id;
} wire_raw_request;

/* Encodes r into buf. Returns 0 and *len, or ESC_ETOOBIG if cap is too small. */
int wire_encode_raw(const wire_raw_request *r, void *buf, size_t cap, size_t *len);

int wire_encode_reply(const wire_reply *rep, void *buf, size_t cap, size_t *len);
/* Decodes a reply; segs are written up to segs_cap (nsegs says how many). */
int wire_decode_reply(const void *buf, size_t len, wire_reply *out);

/* Hash of the parameters that make a reserve "the same request" (item,
 * buyer, qty): a key reused with another hash is IDEMPOTENCY_MISMATCH. */
int64_t wire_reserve_hash(const char *item_id, const char *buyer_id, int64_t qty);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * esc_limits.h - every bound in escrow, in one place: every queue, batch,
 * message, retry loop and table has a named maximum.
 *
 * Each limit names its unit and says what it costs. Input over a limit is
 * answered with an error (ESC_EINVAL / ESC_ETOOBIG), never truncated.
 */
#ifndef ESC_LIMITS_H
#define ESC_LIMITS_H

/* Identifiers: tenant, item, buyer, idempotency key. Printable ASCII only
 * (0x21..0x7e); bounded so a hold stays small in memory and in the index. */
#define ESC_TENANT_LEN_MAX 64
#define ESC_ITEM_LEN_MAX 128
#define ESC_BUYER_LEN_MAX 128
#define ESC_KEY_LEN_MAX 128
#define ESC_CREDENTIAL_LEN_MAX 256

/* Units per hold request. A hold is a checkout, not a warehouse transfer. */
#define ESC_QTY_MAX 10000
/* Units per item. */
#define ESC_TOTAL_MAX 1000000000LL

/* Hold lifetime bounds. The lower bound keeps the sweeper meaningful; the
 * upper bound keeps units from being parked forever. */
#define ESC_TTL_MS_MIN 50u
#define ESC_TTL_MS_MAX (24u * 3600u * 1000u)
#define ESC_TTL_MS_DEFAULT (10u * 60u * 1000u)

/* Largest frame any escrow message may take on the wire (NN_RCVMAXSIZE).
 * A Request is at most ~1 KiB; a stats Reply carries up to
 * ESC_STATS_SEGMENTS_MAX segments of ~180 bytes. */
#define ESC_STATS_SEGMENTS_MAX 256
#define ESC_FRAME_BYTES_MAX (64 * 1024)
/* The largest frame a segment node's client socket accepts: a request is
 * its ids (tenant 64, item 128, buyer 128, key 128 bytes), a credential
 * (256) and a few numbers, well under 2 KiB encoded; twice that leaves room
 * for fields to come. A connection announcing more is dropped by nanomsg
 * before it sends the frame, so a slow half-sent frame holds at most this
 * much of the node's memory. */
#define ESC_REQUEST_BYTES_MAX (4 * 1024)

/* Segments per item. */
#define ESC_SEGMENTS_PER_ITEM_MAX 256
/* Segments one node serves (its table is allocated at this size; pages
 * nobody touched cost no memory). */
#define ESC_NODE_SEGMENTS_MAX 262144

/* Group commit: a batch closes when it holds ESC_BATCH_ROWS_MAX decisions or
 * when its oldest decision waited ESC_BATCH_WAIT_US_MAX (only while the
 * previous batch is still committing; an idle node commits at once). */
#define ESC_BATCH_ROWS_MAX 2048
/* Requests read from the socket per poll callback: without a cap a flood of
 * sold-out requests starves commit completions (docs/architecture.md,
 * Transport: durable p50 76 ms without the cap, 7 ms with it). */
#define ESC_RECV_PER_CB_MAX 64
/* Requests waiting for a commit (in the filling and the committing batch).
 * Over it, reserves are answered ESC_EBUSY. Each costs ~200 bytes. */
#define ESC_PENDING_MAX 65536
/* Expired holds returned per sweeper pass. */
#define ESC_SWEEP_ROWS_MAX 1024
/* Live holds one node keeps in memory. Memory note, measured (RSS growth
 * over 200,000 live holds / 200,000, ids of ~16 bytes): ~255 bytes each:
 * the seg_hold with its buyer id and key in one allocation (~184), one
 * bucket in each of two hash maps (~21) and an expiry-heap entry (~21),
 * the rest allocator slack. (Measured before the expiry heap became
 * intrusive, heap.h: its 16-byte node now sits in the seg_hold and the
 * heap keeps an 8-byte pointer per held hold, about the same in all.) */
#define ESC_LIVE_HOLDS_MAX (4u * 1024u * 1024u)
/* Voided reserve attempts one node remembers (seg_void.h): a resolve marks
 * the attempt, so late copies of its frames reserve nothing. Each costs
 * ~100 bytes plus the key; a resolve finding the table full is ESC_EBUSY.
 * ESC_VOID_MS is how long a mark lives: far longer than any frame stays in
 * flight (a TCP connection or a proxy holding it), which is seconds. */
#define ESC_VOIDS_MAX 65536u
#define ESC_VOID_MS (120 * 1000)

/* Hold ids: (segment_id << ESC_HOLD_SEQ_BITS) | seq. */
#define ESC_HOLD_SEQ_BITS 40
/* Hold ids are unique across owners by construction: an owner gives out
 * only sequence numbers below its limit, and a limit is made durable
 * (segments.hold_seq, under the owner's epoch) before any id under it is
 * given. Taking a segment reserves a fresh range of this many numbers past
 * everything earlier owners reserved; each committed batch moves the limit
 * to next_seq + this. So a stale owner's ids all lie below where the new
 * owner starts. Each change of owner leaves at most this many numbers
 * unused: 2^40 / 2^20, a million changes of owner per segment. */
#define ESC_HOLD_SEQ_RANGE (1ULL << 20)
#define ESC_SEGMENT_ID_MAX ((1ULL << (63 - ESC_HOLD_SEQ_BITS)) - 1)

/* Under a coordinator: node ids, endpoints, and what ONE heartbeat message
 * (or its reply) carries. A node serves any number of segments: a heartbeat
 * carries what changed, and a full report or assignment goes in parts of at
 * most ESC_HB_SEGMENTS_MAX entries (and ESC_HB_BYTES_BUDGET bytes of segment
 * figures), which keeps each message under ESC_FRAME_BYTES_MAX. */
#define ESC_HB_BYTES_BUDGET (40 * 1024)
#define ESC_NODE_ID_LEN_MAX 64
#define ESC_ENDPOINT_LEN_MAX 255
#define ESC_HB_SEGMENTS_MAX 1024
#define ESC_HB_TRANSFERS_MAX 256
/* Regions: names as regions.region, and the global items one quota status
 * message carries (~320 bytes each at most: 41 KiB, under
 * ESC_FRAME_BYTES_MAX; a round sends as many messages as it takes). */
#define ESC_REGION_LEN_MAX 64
#define ESC_QUOTA_ITEMS_MAX 128
/* A region's global restocks and reduces of one item, as its status
 * reports them: how many, and their sum (restocks in one region and reduces
 * in another make each sum grow without bound, never near these). */
#define ESC_GLOBAL_CHANGES_MAX (1LL << 40)
#define ESC_GLOBAL_CHANGE_SUM_MAX (1LL << 60)
/* [quota] share (region_cfg.h). */
#define ESC_QUOTA_SHARE_MAX 1000
/* Segments of one item in a routing table. */
#define ESC_ROUTE_SEGMENTS_MAX ESC_SEGMENTS_PER_ITEM_MAX

/* Client-side bounds. */
#define ESC_CLIENT_INFLIGHT_MAX 65536
#define ESC_CART_LINES_MAX 64
#define ESC_DEADLINE_MS_MAX (10u * 60u * 1000u)

#endif

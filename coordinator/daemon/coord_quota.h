/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_quota.h - quota transfers between two regions' databases, exactly
 * once (migration 0008 explains the three steps and the global invariant),
 * and the operator's moves that ask for one:
 *
 *   1. send (the donor): units of a global item's unallocated quota leave it,
 *      recorded 'sent' to the receiver (escrow_quota_send), then offered;
 *   2. apply (the receiver, on WIRE_QUOTA_OFFER): at most once per
 *      (from_region, transfer_id) (escrow_quota_apply), and answered;
 *   3. done (the donor, on the answer): 'received', or 'refused' with the
 *      units back in unallocated (escrow_quota_done).
 * A donor that crashed re-offers its open transfers every round
 * (coord_region.c); the receiver answers an offer it applied before with
 * the same outcome.
 *
 * Moves (WIRE_QUOTA_MOVE, escrowctl quota move) set an export intent on the
 * item (coord_gitem.h); the policy reclaims units from the segments into
 * unallocated, and step 1 sends them as they come. The operator is answered
 * when everything was sent or after COORD_QUOTA_ANSWER_MS with what was sent
 * so far (the rest follows).
 */
#ifndef ESC_COORD_QUOTA_H
#define ESC_COORD_QUOTA_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "coord_peer.h"
#include "nnx.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;

/* An operator's move is answered after at most this long; it goes on. */
#define COORD_QUOTA_ANSWER_MS 2000
/* An export that cannot find its units for this long is dropped. */
#define COORD_QUOTA_INTENT_MS 60000

typedef struct coord_quota {
    const region_cfg *cfg; /* borrowed: this region */
    coord_peers *peers;    /* borrowed */
    uint64_t n_sent, n_applied, n_refused, n_done;
    wire_quota_item view; /* scratch: the donor's figures in a move's answer */
} coord_quota;

/* cfg and peers are borrowed for q's life. */
void coord_quota_init(coord_quota *q, const region_cfg *cfg, coord_peers *peers);

/* Step 1: sends what the item's export intent wants and unallocated has, if
 * the item is free (no write in flight, not reconciling). */
void coord_quota_send_ready(coord *c, coord_quota *q, coord_item *it);
/* Step 2: a peer's WIRE_QUOTA_OFFER (hdr and rq borrowed); answered when
 * applied, or at once when it cannot be. */
void coord_quota_apply(coord *c, coord_quota *q, const nnx_hdr *hdr, const wire_request *rq);
/* Step 3: the receiver answered transfer_id (refused: it does not have the
 * item); recorded at most once. */
void coord_quota_done(coord *c, coord_quota *q, uint64_t transfer_id, bool refused);

/* WIRE_QUOTA_MOVE from escrowctl (hdr and rq borrowed): refused at once, or
 * an export intent whose answer comes later (coord_quota_answer_move). */
void coord_quota_move(coord *c, coord_quota *q, const nnx_hdr *hdr, const wire_request *rq);
/* Answers the operator waiting for the item's move, if one does: what was
 * sent, what is still coming. */
void coord_quota_answer_move(coord *c, coord_quota *q, coord_item *it);
/* The coordinator stops: operators still waiting are answered ESC_ECLOSED. */
void coord_quota_close(coord *c, coord_quota *q);

#endif

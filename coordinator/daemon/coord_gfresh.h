/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gfresh.h - every peer region's figures of one global item as of
 * after a moment: what a global reduce is judged on (coord_gstock.h).
 *
 * An ask sends each peer a status of that one item marked fresh
 * (WIRE_QUOTA_STATUS, fresh set; corr_id COORD_PEER_CORR_FRESH | the ask's
 * id). The peer reads its sold units from its database before it answers
 * (coord_status.h), so the answer counts every sale acknowledged before the
 * ask arrived there, and so before the ask was made: one round trip, not a
 * sweep. When every peer has answered, the ask's callback gets the sum of
 * their sold and pending reduce; a peer that does not answer within
 * COORD_GFRESH_WAIT_MS, or answers with an error, ends the ask with
 * ESC_EUNAVAILABLE and a sentence naming it ("try later: region us
 * unreachable"). A peer whose answer says it has no such item counts 0.
 */
#ifndef ESC_COORD_GFRESH_H
#define ESC_COORD_GFRESH_H

#include <stdbool.h>
#include <stdint.h>

#include "coord_cat.h"
#include "coord_peer.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;

/* Asks open at once, at most (more: ESC_EBUSY, retry). */
#define COORD_GFRESH_MAX 32
/* How long an ask waits for every peer: under escrowctl's default wait for
 * the coordinator's answer (3 s), so the operator hears which region did not
 * answer rather than a timeout. */
#define COORD_GFRESH_WAIT_MS 2000

/* status 0: elsewhere is the peers' sold + pending reduce of the item;
 * else an ESC_E* code and msg (borrowed during the call). */
typedef void (*coord_gfresh_cb)(coord *c, int status, const char *msg, int64_t elsewhere,
                                void *arg);

typedef struct coord_gfresh_ask {
    uint64_t id; /* 0 = free */
    coord_item *it;
    int64_t deadline_us;
    bool waiting[REGION_PEERS_MAX];
    int64_t elsewhere;
    coord_gfresh_cb cb;
    void *arg;
} coord_gfresh_ask;

typedef struct coord_gfresh {
    const region_cfg *cfg; /* borrowed: this region */
    coord_peers *peers;    /* borrowed */
    uint64_t last_id;
    coord_gfresh_ask asks[COORD_GFRESH_MAX];
    wire_quota scratch; /* the status being sent */
} coord_gfresh;

/* cfg and peers are borrowed for f's life. */
void coord_gfresh_init(coord_gfresh *f, const region_cfg *cfg, coord_peers *peers);

/* Asks every peer for it's figures now; cb runs exactly once (at once when
 * there is no peer or no room). */
void coord_gfresh_ask_all(coord *c, coord_gfresh *f, coord_item *it, coord_gfresh_cb cb, void *arg);

/* Peer i's answer to a fresh status (rep->corr_id has COORD_PEER_CORR_FRESH). */
void coord_gfresh_answered(coord *c, coord_gfresh *f, int i, const wire_reply *rep);

/* Every coordinator tick: ends the asks past their deadline. */
void coord_gfresh_tick(coord *c, coord_gfresh *f);

/* The coordinator stops: every open ask ends with ESC_ECLOSED. */
void coord_gfresh_close(coord *c, coord_gfresh *f);

#endif

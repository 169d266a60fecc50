/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_peer.h - the sockets to the other regions' coordinators (the
 * [peers] of the region's INI file): one REQ socket each, watched on the
 * loop. Sends quota messages (WIRE_OP_QUOTA) and hands every decoded reply
 * to the owner's callback; a peer silent for COORD_PEER_RECONNECT_ROUNDS
 * rounds is reconnected (nnx_reconnect), since a REQ socket whose peer
 * restarted may otherwise wait forever.
 *
 * An offer's correlation id is COORD_PEER_CORR_OFFER | transfer_id, so its
 * answer names the transfer it answers; a fresh status's is
 * COORD_PEER_CORR_FRESH | the ask's id; a status uses a per-peer sequence
 * below both bits.
 */
#ifndef ESC_COORD_PEER_H
#define ESC_COORD_PEER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"
#include "nnx.h"
#include "region_cfg.h"
#include "wire.h"

typedef struct coord coord;

/* corr_id of an offer: this bit | transfer_id. */
#define COORD_PEER_CORR_OFFER (1ULL << 62)
/* corr_id of a fresh status (coord_gfresh.h): this bit | the ask's id. */
#define COORD_PEER_CORR_FRESH (1ULL << 61)
/* Reconnect a peer's socket after this many silent rounds. */
#define COORD_PEER_RECONNECT_ROUNDS 5

/* A reply from peer i (rep borrowed, valid during the call). */
typedef void (*coord_peer_reply_cb)(coord *c, int i, const wire_reply *rep, void *arg);

typedef struct coord_peer {
    struct coord_peers *set; /* borrowed: the set it belongs to */
    const region_peer *cfg;  /* borrowed from the region's configuration */
    int sock;
    nnx_eids eid;
    nnx_watch watch;
    bool watch_open;
    int64_t last_reply_us;
    uint32_t silent_rounds;
} coord_peer;

typedef struct coord_peers {
    coord *c;         /* borrowed */
    const char *self; /* borrowed: this region's name, the offers' sender */
    size_t n;         /* peers opened */
    coord_peer p[REGION_PEERS_MAX];
    coord_peer_reply_cb cb;
    void *arg;
    unsigned char frame[ESC_FRAME_BYTES_MAX]; /* encoding scratch */
    wire_quota offer;                         /* scratch of coord_peers_offer */
    wire_quota_item rx[ESC_QUOTA_ITEMS_MAX];  /* a decoded reply's items */
} coord_peers;

/* Opens, connects and watches one socket per peer of cfg (borrowed; its
 * name is the sender of offers). c->handles_open counts the watches.
 * Returns 0, or an ESC_E* code after logging (the peers opened so far stay
 * open: coord_peers_close, coord_peers_free). */
int coord_peers_open(coord *c, coord_peers *ps, const region_cfg *cfg, coord_peer_reply_cb cb,
                     void *arg);
/* Stops watching (from coord_stop); the watches close on the loop. */
void coord_peers_close(coord_peers *ps);
/* Closes the sockets (after the loop ended). */
void coord_peers_free(coord_peers *ps);

/* The index of the peer named name, or -1. */
int coord_peers_find(const coord_peers *ps, const char *name);
/* Peer i's region name (borrowed). */
const char *coord_peers_name(const coord_peers *ps, int i);

/* Sends a quota message to peer i (q and the strings borrowed); a message
 * that cannot be encoded or sent is logged and dropped (the next round
 * sends again). */
void coord_peers_send(coord_peers *ps, int i, uint64_t corr, const char *tenant_id,
                      const wire_quota *q, const char *item_id, int64_t qty);
/* Offers quota transfer transfer_id (qty units of tenant_id/item_id) to
 * peer i: WIRE_QUOTA_OFFER from this region. */
void coord_peers_offer(coord_peers *ps, int i, uint64_t transfer_id, const char *tenant_id,
                       const char *item_id, int64_t qty);
/* A round began: counts one more silent round for peer i and reconnects it
 * after COORD_PEER_RECONNECT_ROUNDS. */
void coord_peers_check(coord_peers *ps, int i);

#endif

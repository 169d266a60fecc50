/* SPDX-License-Identifier: Apache-2.0 */
/*
 * region_cfg.h - one region's deployment, described by one INI file (in the
 * style of pgbouncer.ini), parsed with libinih and validated before anything
 * starts.
 *
 *   [region]
 *   name        = eu                          ; required, [!-~]{1,64}
 *   dsn         = host=... dbname=escrow_eu   ; required, checked with PQconninfoParse
 *   coordinator = tcp://127.0.0.1:7100        ; required: the coordinator's REP endpoint
 *                                             ; (nodes, clients' routes, escrowctl, peers)
 *   publish     = tcp://127.0.0.1:7101        ; required: routing updates (PUB)
 *   metrics     = 127.0.0.1:9100              ; optional: the coordinator's /metrics
 *
 *   [coordinator]                             ; all optional, escrow-coordinator's defaults
 *   lease_ms, heartbeat_ms, rebalance_ms, collapse_pct, low_water_pct,
 *   catalog_poll_ms, check_ms, check_sweep_ms ; same ranges as the command-line flags
 *
 *   [quota]                                   ; all optional
 *   share       = 1      ; weight when `escrowctl item create --global` splits a total (1..1000)
 *   floor       = 0      ; units of every global item this region never gives away (0..2^40)
 *   interval_ms = 1000   ; status exchange with peers and the automatic policy (100..600000)
 *   horizon_ms  = 5000   ; automatic moves cover this long of a peer's demand (100..3600000)
 *   auto        = on     ; on|off: the automatic policy (manual moves always work)
 *
 *   [floors]                                  ; optional, per item
 *   TENANT/ITEM = UNITS                       ; overrides [quota] floor for that item
 *
 *   [nodes]                                   ; the region's segment nodes
 *   NODE_ID = tcp://127.0.0.1:7110            ; its client endpoint (listen = advertise)
 *
 *   [peers]                                   ; the other regions
 *   REGION = tcp://127.0.0.1:7200             ; that region's coordinator endpoint
 *
 * Errors name the file, the line and the key: "eu.ini:7: [region] unknown
 * key 'lisen'", "eu.ini:3: [region] dsn: missing \"=\" after \"host\" ...",
 * "eu.ini:12: [nodes] n2: endpoint tcp://127.0.0.1:7100 is already used by
 * coordinator (line 4)", "eu.ini:1: [region] missing key 'dsn'" (the line
 * of the section header; line 0 when the section is missing). Unknown
 * sections, unknown keys, duplicate keys, values out of range, malformed
 * endpoints and two endpoints (of this file, peers included) on the same
 * address are errors.
 */
#ifndef ESC_REGION_CFG_H
#define ESC_REGION_CFG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"

#define REGION_NAME_LEN_MAX 64
#define REGION_DSN_LEN_MAX 1024
#define REGION_NODES_MAX 64
#define REGION_PEERS_MAX 16
#define REGION_FLOORS_MAX 1024
#define REGION_ERR_LEN 512
/* Bytes per line of the file, newline excluded: room for a dsn of
 * REGION_DSN_LEN_MAX and its key. A longer line is an error. */
#define REGION_LINE_LEN_MAX 1200
/* [quota] floor and [floors] units: 0..2^40. */
#define REGION_FLOOR_UNITS_MAX (1LL << 40)

typedef struct region_node {
    char node_id[ESC_NODE_ID_LEN_MAX + 1];
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1];
    int line;
} region_node;

typedef struct region_peer {
    char name[REGION_NAME_LEN_MAX + 1];
    char coordinator[ESC_ENDPOINT_LEN_MAX + 1];
    int line;
} region_peer;

typedef struct region_floor {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char item_id[ESC_ITEM_LEN_MAX + 1];
    int64_t units;
    int line;
} region_floor;

typedef struct region_cfg {
    char path[1024];
    /* [region] */
    char name[REGION_NAME_LEN_MAX + 1];
    char dsn[REGION_DSN_LEN_MAX + 1];
    char coordinator[ESC_ENDPOINT_LEN_MAX + 1];
    char publish[ESC_ENDPOINT_LEN_MAX + 1];
    char metrics[ESC_ENDPOINT_LEN_MAX + 1]; /* "" = off */
    /* [coordinator]: 0 = not set (the daemon's default applies) */
    uint32_t lease_ms, heartbeat_ms, rebalance_ms, catalog_poll_ms, check_ms, check_sweep_ms;
    int32_t collapse_pct, low_water_pct; /* -1 = not set */
    /* [quota] */
    uint32_t share;       /* default 1 */
    int64_t floor;        /* default 0 */
    uint32_t interval_ms; /* default 1000 */
    uint32_t horizon_ms;  /* default 5000 */
    bool quota_auto;      /* default true */
    size_t nnodes, npeers, nfloors;
    region_node nodes[REGION_NODES_MAX];
    region_peer peers[REGION_PEERS_MAX];
    region_floor floors[REGION_FLOORS_MAX];
} region_cfg;

/* Reads and validates path into *out (large: allocate it, do not put it on
 * a small stack). Returns 0, or -1 with a one-line message in err
 * ("FILE:LINE: ..."). Nothing is opened but the file. Not for concurrent
 * use: it sets libinih's process-wide options (region_cfg.c). */
int region_cfg_load(const char *path, region_cfg *out, char *err, size_t errlen);

/* The floor of one item in this region ([floors], else [quota] floor). */
int64_t region_cfg_floor(const region_cfg *c, const char *tenant_id, const char *item_id);

/* The node's entry, or NULL. */
const region_node *region_cfg_node(const region_cfg *c, const char *node_id);
/* The peer's entry, or NULL. */
const region_peer *region_cfg_peer(const region_cfg *c, const char *name);

#endif

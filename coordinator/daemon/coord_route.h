/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_route.h - the coordinator's routing tables: one per item, derived
 * from the catalog (coord_cat_route), versioned, published on the PUB
 * socket and answered to WIRE_OP_ROUTE requests.
 *
 * A route's version only grows: it is bumped to at least the wall clock (in
 * microseconds, never below the coordinator's start) whenever the route's
 * content changes, so a restarted coordinator's routes are newer than its
 * predecessor's. The routing watches the catalog (coord_cat_watch): a new
 * item gets a version; a change reported with coord_cat_changed is published
 * at once if the route's content differs. Every ROUTE_TICK_MS (the route
 * timer) the items marked COORD_WORK_ROUTE (coord_cat_touch) are checked and a
 * changed route published, and a slice of the rest is checked and published
 * even when unchanged, so that every route is published at least once every
 * second, or with a large catalog once every nitems / ROUTE_REPUBLISH_PER_S
 * seconds: a subscriber that missed an update catches up, and an idle
 * catalog costs a bounded number of routes per second, not all of them. With --auth on
 * every update is sealed once per live key of its tenant (auth_route.h)
 * and nothing is published in clear; the keys are the credential check's
 * table (coord_auth.h), so a revoked key stops receiving within its reload.
 */
#ifndef ESC_COORD_ROUTE_H
#define ESC_COORD_ROUTE_H

#include <stdint.h>

#include "nnx.h"
#include "wire.h"

/* The route timer's period. */
#define ROUTE_TICK_MS 100

typedef struct coord coord;

/* Before anything can fail in coord_start: no socket yet, the version floor
 * from the wall clock now. */
void coord_route_init(coord *c);
/* Opens and binds the PUB socket (c->cfg.publish) and starts watching the
 * catalog. Returns 0 or an ESC_E* code after logging. */
int coord_route_open(coord *c);
/* Closes the PUB socket (coord_fini). */
void coord_route_close(coord *c);

/* The route timer: publishes changed routes, and all of them once a second. */
void coord_route_tick(coord *c);
/* WIRE_OP_ROUTE: answers with the item's route (by item or by segment id). */
void coord_route_handle(coord *c, const nnx_hdr *hdr, const wire_request *q);

#endif

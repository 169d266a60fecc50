/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_admin.h - AdminReq: item and node operations for escrowctl
 * (restock, reduce, pause, resume, retire, split, collapse, rebalance,
 * drain, undrain, reload). coord_admin.c says how each is carried out.
 *
 * A request waits (owned by the lists below) while its item has a write in
 * flight (up to COORD_DEFER_MS_MAX, then ESC_EBUSY) or until the next catalog
 * read when its item or node is unknown (one read, then "unknown").
 */
#ifndef ESC_COORD_ADMIN_H
#define ESC_COORD_ADMIN_H

#include <stddef.h>

#include "nnx.h"
#include "wire.h"

typedef struct coord coord;

/* Admin requests waiting for their item to be free. */
#define COORD_DEFERRED_MAX 256
/* How long an admin request may wait for its item. */
#define COORD_DEFER_MS_MAX 3000

/* WIRE_OP_ADMIN: hdr and q are copied; the reply goes out now or later. */
void coord_admin_handle(coord *c, const nnx_hdr *hdr, const wire_request *q);
/* Every coordinator tick: the deferred requests are decided again. */
void coord_admin_tick(coord *c);
/* A catalog read finished: the requests that waited for it are decided. */
void coord_admin_reload_done(coord *c);
/* The coordinator stops: every waiting request is answered ESC_ECLOSED. */
void coord_admin_stop(coord *c);

#endif

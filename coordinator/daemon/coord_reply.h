/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_reply.h - answers on the coordinator's REP socket (c->sock): the
 * reply is encoded into c->frame and sent to the requester named by hdr.
 * A reply that cannot be encoded is logged and dropped (a programmer error);
 * one that cannot be sent is dropped (the requester times out and retries).
 */
#ifndef ESC_COORD_REPLY_H
#define ESC_COORD_REPLY_H

#include <stdint.h>

#include "nnx.h"
#include "wire.h"

typedef struct coord coord;

/* Sends rep (borrowed) to hdr's requester. */
/* Returns the bytes of the encoded reply (0: it could not be encoded). */
size_t coord_reply_send(coord *c, const nnx_hdr *hdr, const wire_reply *rep);
/* A reply with only a status and a message: msg NULL means the status's own
 * text; a message longer than the wire allows is cut, not refused. */
void coord_reply(coord *c, const nnx_hdr *hdr, uint64_t corr_id, int status, const char *msg);

#endif

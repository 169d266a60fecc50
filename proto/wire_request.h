/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_request.h - proto/'s Request frame helpers for its other encoders
 * (wire_cluster.c); not for use outside proto/, whose contract is wire.h.
 */
#ifndef ESC_WIRE_REQUEST_H
#define ESC_WIRE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "escrow.pb-c.h"

/* The MAC field's tag byte: field 8, length-delimited. */
#define WIRE_MAC_TAG ((8 << 3) | 2)

/* Fills m's outer frame: version, corr_id, tenant_id (borrowed; NULL leaves
 * the field unset). */
void wire_request_head(Escrow__Request *m, uint64_t corr_id, const char *tenant_id);

/* Packs m into buf, signed with the process's key (wire_set_credential)
 * when it has one; m's signature fields are overwritten. Returns 0 and
 * *len, or ESC_ETOOBIG when the frame is larger than cap or than
 * ESC_FRAME_BYTES_MAX. */
int wire_request_pack(Escrow__Request *m, void *buf, size_t cap, size_t *len);

#endif

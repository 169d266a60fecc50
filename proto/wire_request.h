/*
 * wire_request.h - proto/'s Request frame helpers for its other encoders
 * (wire_cluster.c); not for use outside proto/, whose contract is wire.h.
 */
#ifndef ESC_WIRE_REQUEST_H
#define ESC_WIRE_REQUEST_H

#include <stddef.h>
#include <stdint.h>

#include "escrow.pb-c.h"

/* Fills m's outer frame: version, corr_id, tenant_id (borrowed; NULL leaves
 * the field unset) and the process's credential (wire_set_credential). */
void wire_request_head(Escrow__Request *m, uint64_t corr_id, const char *tenant_id);

/* Packs m into buf. Returns 0 and *len, or ESC_ETOOBIG when the frame is
 * larger than cap or than ESC_FRAME_BYTES_MAX. */
int wire_request_pack(const Escrow__Request *m, void *buf, size_t cap, size_t *len);

#endif

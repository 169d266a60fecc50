/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_reply.c - see coord_reply.h.
 */
#include "coord_reply.h"

#include <inttypes.h>
#include <string.h>

#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"

size_t coord_reply_send(coord *c, const nnx_hdr *hdr, const wire_reply *rep)
{
    size_t len = 0;
    int rc = wire_encode_reply(rep, c->frame, sizeof c->frame, &len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_ERROR, "COORD-REPLY", "cannot encode reply corr=%" PRIu64 ": %s",
                rep->corr_id, esc_err_name(rc));
        return 0;
    }
    rc = nnx_send(c->sock, hdr, c->frame, len);
    if (rc != 0) {
        ESC_LOG(ESC_LOG_DEBUG, "COORD-REPLY", "send failed: %s", esc_err_name(rc));
    }
    return len;
}

void coord_reply(coord *c, const nnx_hdr *hdr, uint64_t corr_id, int status, const char *msg)
{
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    rep.corr_id = corr_id;
    rep.status = status;
    const char *m = msg ? msg : (status ? esc_strerror(status) : "");
    size_t n = strnlen(m, sizeof rep.message - 1); /* a long sentence is cut, not refused */
    memcpy(rep.message, m, n);
    rep.message[n] = '\0';
    coord_reply_send(c, hdr, &rep);
}

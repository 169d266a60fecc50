/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_req.h - a raw nanomsg REQ socket for the test drivers (esc_probe's
 * raw and frame sub-commands, coord_probe): frames built by hand, sent to a
 * node or a coordinator and resent until the reply to that very request
 * arrives, the way no libescrow client would talk.
 *
 * A raw socket drops what it is asked to send while it has no connection
 * and reports success, so a call resends on a timer; replies to earlier
 * requests (answers to an earlier resend) are dropped.
 */
#ifndef ESC_PROBE_REQ_H
#define ESC_PROBE_REQ_H

#include <stddef.h>
#include <stdint.h>

typedef struct probe_req {
    int sock;         /* owned: a raw REQ socket */
    int rcvfd;        /* NN_RCVFD of sock, for poll */
    uint32_t next_id; /* the next request id, from 1 */
} probe_req;

/* Opens a raw REQ socket connected to endpoint (borrowed). Returns 0, or
 * ESC_EINVAL / ESC_EIO (then nothing is open). */
int probe_req_open(probe_req *c, const char *endpoint);
void probe_req_close(probe_req *c);

/* Sends len bytes of buf (borrowed) as the next request, again every
 * resend_ms (0: once; a send nanomsg refuses is retried after 10 ms either
 * way), until the reply to it arrives or timeout_ms have passed. Returns 1
 * with the reply in *msg (owned by the caller: nnx_free) and *msg_len, 0
 * when none arrived in time, or a negative ESC_E* when the socket failed. */
int probe_req_call(probe_req *c, const void *buf, size_t len, int64_t timeout_ms, int64_t resend_ms,
                   void **msg, size_t *msg_len);

#endif

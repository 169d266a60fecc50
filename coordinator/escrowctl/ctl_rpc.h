/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_rpc.h - escrowctl's one request/reply round trip over nanomsg.
 *
 * escrowctl talks to a daemon (the coordinator for admin requests, a segment
 * node for an operator release) exactly once per command: a raw REQ socket
 * (common/nnx), one frame, one reply matched by request id and corr_id, a
 * deadline. A private libuv loop polls the socket and a timer drives the
 * deadline, so nothing blocks without bound.
 *
 * The frame is sent once and never resent: admin requests such as restock
 * are not idempotent. A raw REQ socket refuses to send (EAGAIN) while no
 * connection exists, so until the first successful send the frame is offered
 * again every few milliseconds; whether it ever left is reported, because
 * "nothing was sent" means "nothing was done" while "sent, no answer" means
 * "outcome unknown".
 */
#ifndef CTL_RPC_H
#define CTL_RPC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "wire.h"

/* Milliseconds between attempts to send while no connection exists. */
#define CTL_RPC_SEND_RETRY_MS 5

/* Sends frame (len bytes, borrowed; its corr_id is corr_id) to url and waits
 * up to timeout_ms for the matching reply. Returns 0 with rep->status and
 * rep->message (rep's optional parts are ignored), or: ESC_ETIMEDOUT (no
 * answer in time; *sent says whether the frame left), ESC_EINVAL (url not
 * usable), ESC_EPROTO (the answer was not a reply), ESC_EIO (socket or loop
 * failure). *sent is always written. */
int ctl_rpc_call(const char *url, uint64_t corr_id, const void *frame, size_t len, int timeout_ms,
                 wire_reply *rep, bool *sent);

/* One QuotaReq (wire_encode_quota: tenant, q, item_id and qty borrowed) round
 * trip to url, as ctl_rpc_call; the reply's first quota item lands in *item
 * (rep->quota points at it). */
int ctl_rpc_quota(const char *url, const char *tenant, const wire_quota *q, const char *item_id,
                  int64_t qty, int timeout_ms, wire_reply *rep, wire_quota_item *item, bool *sent);

struct ctl_json;
/* A reply's sentence: its message, else the error's. */
const char *ctl_rpc_message(const wire_reply *rep);
/* Opens the --json object of a reply: status, code, message (the caller adds
 * its own keys, then ctl_json_end_obj and ctl_json_finish). */
void ctl_rpc_json_begin(struct ctl_json *j, FILE *out, const wire_reply *rep);

/* A sentence on stderr for a daemon that did not answer: "coordinator at
 * URL did not answer within 3 s" plus what that means for the outcome
 * (nothing sent: nothing done; sent: unknown when outcome_matters). who and
 * url borrowed. */
void ctl_rpc_no_answer(const char *who, const char *url, int timeout_ms, bool sent,
                       bool outcome_matters);

/* A corr_id / request id for this process: random enough that two escrowctl
 * processes never confuse their replies. Never 0. */
uint64_t ctl_rpc_corr_id(void);

#endif

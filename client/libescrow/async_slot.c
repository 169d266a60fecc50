/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_slot.c - see async_slot.h: the in-flight table and the calls in it.
 *
 * Asserted here: a slot taken is empty, a call freed is the one its slot
 * holds, and the table holds as many calls as the heap (each call is in
 * both or in neither).
 */
#include "async_slot.h"

#include <stdlib.h>
#include <string.h>

#include "async_answer.h"
#include "async_conn.h"
#include "async_routing.h"
#include "async_timer.h"
#include "esc_assert.h"

static uint32_t slot_of(const call *c)
{
    return (uint32_t)(c->corr_id & CLI_SLOT_MASK);
}

/* A corr_id never used before by this client, for slot. */
static uint64_t next_corr_id(esc_async *a, uint32_t slot)
{
    return (a->seq++ << CLI_SLOT_BITS) | slot;
}

/* Every call is in the table and in the heap, or in neither. */
static void check_counts(const esc_async *a)
{
    ESC_ASSERT(a->nfree <= a->cap && a->cap - a->nfree == cli_timer_calls(a));
}

/* Grows every table together. A failed realloc leaves the old, still
 * consistent capacity (a larger array than cap is harmless). */
static int slots_grow(esc_async *a)
{
    if (a->cap >= ESC_CLIENT_INFLIGHT_MAX) {
        return ESC_EBUSY;
    }
    uint32_t ncap = a->cap == 0 ? CLI_SLOTS_INITIAL : a->cap * 2;
    if (ncap > ESC_CLIENT_INFLIGHT_MAX) {
        ncap = ESC_CLIENT_INFLIGHT_MAX;
    }
    call **slots = realloc(a->slots, ncap * sizeof *slots);
    if (slots == NULL) {
        return ESC_ENOMEM;
    }
    a->slots = slots;
    uint32_t *free_slots = realloc(a->free_slots, ncap * sizeof *free_slots);
    if (free_slots == NULL) {
        return ESC_ENOMEM;
    }
    a->free_slots = free_slots;
    if (cli_timer_grow(a, ncap) < 0) {
        return ESC_ENOMEM;
    }
    /* Push high indices first so the lowest free slot is taken next. */
    for (uint32_t i = ncap; i > a->cap; i--) {
        a->slots[i - 1] = NULL;
        a->free_slots[a->nfree++] = i - 1;
    }
    a->cap = ncap;
    return 0;
}

static int slot_take(esc_async *a, uint32_t *slot)
{
    if (a->nfree == 0) {
        int rc = slots_grow(a);
        if (rc < 0) {
            return rc;
        }
    }
    *slot = a->free_slots[--a->nfree];
    ESC_ASSERT(*slot < a->cap && a->slots[*slot] == NULL);
    return 0;
}

static void slot_put(esc_async *a, uint32_t slot)
{
    ESC_ASSERT(a->nfree < a->cap);
    a->slots[slot] = NULL;
    a->free_slots[a->nfree++] = slot;
}

call *cli_slot_find(esc_async *a, uint64_t corr_id, const nnx_hdr *hdr)
{
    if (corr_id != 0) {
        uint32_t slot = (uint32_t)(corr_id & CLI_SLOT_MASK);
        call *c = slot < a->cap ? a->slots[slot] : NULL;
        return c != NULL && c->corr_id == corr_id ? c : NULL;
    }
    /* No corr_id in the body: the node could not parse our frame. The
     * transport's request id still names the call. */
    uint32_t id = nnx_hdr_get_request_id(hdr);
    uint32_t slot = id & CLI_SLOT_MASK;
    call *c = id != 0 && slot < a->cap ? a->slots[slot] : NULL;
    return c != NULL && (c->corr_id & CLI_REQUEST_ID_MASK) == id ? c : NULL;
}

/* The attempt number of a new reserve (ReserveReq.attempt): a bijection of
 * the client's random seed and its sequence, so unique per call and, across
 * clients, unique but by chance (2^-64 per pair); never 0. */
static uint64_t next_attempt(const esc_async *a)
{
    uint64_t x = a->attempt_seed + a->seq * 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x != 0 ? x : 1;
}

int cli_slot_new(esc_async *a, int kind, const wire_request *req, uint32_t dl_ms, int64_t now,
                 call **out)
{
    uint32_t slot;
    int rc = slot_take(a, &slot);
    if (rc < 0) {
        return rc;
    }
    call *c = calloc(1, sizeof *c);
    /* Routing mode re-encodes every call as it moves; a reserve may be
     * re-encoded as a resolve (settle) in either mode. */
    bool keep = a->opts.routing || req->op == WIRE_OP_RESERVE;
    wire_request *copy = keep ? malloc(sizeof *copy) : NULL;
    if (c == NULL || (keep && copy == NULL)) {
        free(c);
        free(copy);
        slot_put(a, slot);
        return ESC_ENOMEM;
    }
    if (copy != NULL) {
        *copy = *req;
        if (req->op == WIRE_OP_RESERVE) {
            copy->attempt = next_attempt(a);
        }
    }
    c->req = copy;
    c->corr_id = next_corr_id(a, slot);
    c->kind = (uint8_t)kind;
    c->phase = PH_PARKED;
    c->op = req->op;
    c->qty = req->qty;
    c->deadline_us = now + (int64_t)dl_ms * 1000;
    a->slots[slot] = c;
    cli_timer_push(a, c, now);
    check_counts(a);
    *out = c;
    return 0;
}

int cli_slot_encode(const esc_async *a, call *c, wire_request *req)
{
    uint8_t buf[CLI_FRAME_BYTES_MAX];
    size_t len = 0;
    req->corr_id = c->corr_id;
    /* the handle's key or none, never the process's */
    req->signer = a->opts.has_signer ? &a->opts.signer : NULL;
    req->unsigned_frame = !a->opts.has_signer;
    if (wire_encode_request(req, buf, sizeof buf, &len) < 0) {
        return ESC_EINVAL;
    }
    uint8_t *frame = realloc(c->frame, len);
    if (frame == NULL) {
        return ESC_ENOMEM;
    }
    memcpy(frame, buf, len);
    c->frame = frame;
    c->len = len;
    nnx_hdr_request_id(&c->hdr, (uint32_t)(c->corr_id & CLI_REQUEST_ID_MASK));
    return 0;
}

void cli_slot_free(esc_async *a, call *c)
{
    uint32_t slot = slot_of(c);
    ESC_ASSERT(slot < a->cap && a->slots[slot] == c);
    cli_timer_remove(a, c);
    slot_put(a, slot);
    check_counts(a);
    cli_routing_unwait(c);
    cli_conn_untarget(c);
    if (cli_timer_calls(a) == 0) {
        cli_timer_arm(a); /* stops it: an idle client must not keep the loop alive */
    }
    free(c->req);
    free(c->frame);
    free(c);
}

void cli_slot_aim(esc_async *a, call *c, conn *k, uint64_t seg, int64_t now)
{
    ESC_ASSERT(c->req != NULL); /* kept by cli_slot_new for every call that moves */
    if (c->phase == PH_SENT && c->target == k && c->target_seg == seg) {
        cli_conn_send(a, c, now);
        return;
    }
    if (c->frame != NULL) {
        a->stats.retargets++;
    }
    c->corr_id = next_corr_id(a, slot_of(c));
    c->req->segment_id = c->op == WIRE_OP_RESERVE ? seg : 0;
    int rc = cli_slot_encode(a, c, c->req);
    if (rc < 0) {
        cli_answer_complete(a, c, rc);
        return;
    }
    cli_conn_target(c, k);
    c->target_seg = seg;
    c->phase = PH_SENT;
    c->sends = 0;
    c->answers = 0;
    c->doubt = false;
    cli_conn_send(a, c, now);
}

int cli_slot_init(esc_async *a)
{
    return slots_grow(a);
}

void cli_slot_fini(esc_async *a)
{
    free(a->slots);
    free(a->free_slots);
    a->slots = NULL;
    a->free_slots = NULL;
}

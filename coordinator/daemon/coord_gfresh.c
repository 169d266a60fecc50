/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_gfresh.c - see coord_gfresh.h.
 */
#include "coord_gfresh.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "coord_gitem.h"
#include "coord_state.h"
#include "escrow_errors.h"
#include "log.h"

void coord_gfresh_init(coord_gfresh *f, const region_cfg *cfg, coord_peers *peers)
{
    memset(f, 0, sizeof *f);
    f->cfg = cfg;
    f->peers = peers;
}

/* Ends ask a: its callback runs, its slot is free again. */
static void end_ask(coord *c, coord_gfresh_ask *a, int status, const char *msg)
{
    coord_gfresh_cb cb = a->cb;
    void *arg = a->arg;
    int64_t elsewhere = a->elsewhere;
    memset(a, 0, sizeof *a);
    cb(c, status, msg, elsewhere, arg);
}

void coord_gfresh_ask_all(coord *c, coord_gfresh *f, coord_item *it, coord_gfresh_cb cb, void *arg)
{
    coord_gfresh_ask *a = NULL;
    for (size_t k = 0; k < COORD_GFRESH_MAX && a == NULL; k++) {
        a = f->asks[k].id == 0 ? &f->asks[k] : NULL;
    }
    if (a == NULL) {
        cb(c, ESC_EBUSY, "too many global reduces are being judged at once; retry", 0, arg);
        return;
    }
    *a = (coord_gfresh_ask){.id = ++f->last_id,
                            .it = it,
                            .deadline_us = esc_mono_us() + COORD_GFRESH_WAIT_MS * 1000LL,
                            .cb = cb,
                            .arg = arg};
    wire_quota *q = &f->scratch;
    memset(q, 0, offsetof(wire_quota, items));
    q->kind = WIRE_QUOTA_STATUS;
    q->fresh = true;
    snprintf(q->from_region, sizeof q->from_region, "%s", f->cfg->name);
    coord_gitem_view(c, f->cfg, f->peers->n, it, &q->items[0]);
    q->nitems = 1;
    for (size_t i = 0; i < f->peers->n; i++) {
        a->waiting[i] = true;
        coord_peers_send(f->peers, (int)i, COORD_PEER_CORR_FRESH | a->id, NULL, q, NULL, 0);
    }
    if (f->peers->n == 0) {
        end_ask(c, a, 0, "");
    }
}

static coord_gfresh_ask *find_ask(coord_gfresh *f, uint64_t id)
{
    for (size_t k = 0; k < COORD_GFRESH_MAX; k++) {
        if (id != 0 && f->asks[k].id == id) {
            return &f->asks[k];
        }
    }
    return NULL;
}

/* Peer i's figures of the ask's item from its answer; false (msg set) when
 * the answer does not give them. */
static bool take_answer(coord_gfresh_ask *a, const char *name, const wire_reply *rep, char *msg,
                        size_t cap)
{
    if (rep->status != 0) {
        snprintf(msg, cap, "try later: region %s could not answer (%s: %.80s)", name,
                 esc_err_name(rep->status), rep->message);
        return false;
    }
    if (strcmp(rep->region, name) != 0 || rep->nquota != 1 ||
        strcmp(rep->quota[0].tenant_id, a->it->tenant_id) != 0 ||
        strcmp(rep->quota[0].item_id, a->it->item_id) != 0) {
        snprintf(msg, cap, "try later: region %s answered for another region or item", name);
        return false;
    }
    if (rep->quota[0].known) {
        a->elsewhere += rep->quota[0].sold + rep->quota[0].reduce_pending;
    }
    return true;
}

void coord_gfresh_answered(coord *c, coord_gfresh *f, int i, const wire_reply *rep)
{
    coord_gfresh_ask *a = find_ask(f, rep->corr_id & ~COORD_PEER_CORR_FRESH);
    if (a == NULL || !a->waiting[i]) {
        return; /* an answer after its ask ended */
    }
    const char *name = coord_peers_name(f->peers, i);
    char msg[WIRE_WHY_MAX];
    a->waiting[i] = false;
    if (!take_answer(a, name, rep, msg, sizeof msg)) {
        ESC_LOG(ESC_LOG_WARN, "COORD-GLOBAL", "item=%s/%s fresh figures: %s", a->it->tenant_id,
                a->it->item_id, msg);
        end_ask(c, a, ESC_EUNAVAILABLE, msg);
        return;
    }
    for (size_t k = 0; k < f->peers->n; k++) {
        if (a->waiting[k]) {
            return;
        }
    }
    end_ask(c, a, 0, "");
}

void coord_gfresh_tick(coord *c, coord_gfresh *f)
{
    int64_t now = esc_mono_us();
    for (size_t k = 0; k < COORD_GFRESH_MAX; k++) {
        coord_gfresh_ask *a = &f->asks[k];
        if (a->id == 0 || now < a->deadline_us) {
            continue;
        }
        char msg[WIRE_WHY_MAX] = "try later: no answer";
        for (size_t i = 0; i < f->peers->n; i++) {
            if (a->waiting[i]) {
                snprintf(msg, sizeof msg,
                         "try later: region %s unreachable (no answer within %d ms); nothing "
                         "changed",
                         coord_peers_name(f->peers, (int)i), COORD_GFRESH_WAIT_MS);
                break;
            }
        }
        ESC_LOG(ESC_LOG_WARN, "COORD-GLOBAL", "item=%s/%s fresh figures: %s", a->it->tenant_id,
                a->it->item_id, msg);
        end_ask(c, a, ESC_EUNAVAILABLE, msg);
    }
}

void coord_gfresh_close(coord *c, coord_gfresh *f)
{
    for (size_t k = 0; k < COORD_GFRESH_MAX; k++) {
        if (f->asks[k].id != 0) {
            end_ask(c, &f->asks[k], ESC_ECLOSED, "the coordinator is stopping; retry");
        }
    }
}

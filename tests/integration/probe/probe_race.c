/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_race.c - esc_probe's races (see probe_race.h): which calls meet,
 * and how their answers are judged. The calls are kept in flight by
 * probe_inflight.c.
 */
#include "probe_race.h"

#include <inttypes.h>
#include <stdlib.h>

#include "clock.h"
#include "probe.h"
#include "probe_inflight.h"

/* ---- same-key: N reserves with one key, all in flight at once ----------- */

int probe_same_key(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, false);
    probe_outcome *o = probe_xcalloc(args->n, sizeof *o);
    const char *buyer = args->buyer ? args->buyer : args->key;
    for (uint32_t i = 0; i < args->n; i++) {
        probe_submit_reserve(&p, args->item, buyer, args->key, args->qty, args->ttl_ms,
                             args->deadline_ms, &o[i]);
    }
    probe_async_wait(&p);
    int bad = 0;
    for (uint32_t i = 0; i < args->n; i++) {
        printf("REPLY %u ", i);
        probe_print_outcome(stdout, o[i].status, o[i].has_hold ? &o[i].hold : NULL);
        if (!o[i].done || o[i].status != 0 || !o[i].has_hold) {
            bad++;
        } else if (o[i].hold.hold_id != o[0].hold.hold_id) {
            fprintf(stderr, "esc_probe: reply %u has hold %" PRIu64 ", reply 0 has %" PRIu64 "\n",
                    i, o[i].hold.hold_id, o[0].hold.hold_id);
            bad++;
        }
    }
    probe_async_close(&p);
    if (bad != 0) {
        probe_die("same-key: %d of %u replies were not OK with one and the same hold", bad,
                  args->n);
    }
    printf("HOLD %" PRIu64 "\n", o[0].hold.hold_id);
    free(o);
    return 0;
}

/* ---- cr-race: confirm and release of one hold, both in flight ----------- */

/* 1 confirm won, 2 release won, 0 a broken outcome (printed). */
static int cr_judge(uint64_t hold_id, const probe_outcome *c, const probe_outcome *r)
{
    bool c_won = c->status == 0 && c->has_hold && c->hold.state == ESC_HOLD_CONVERTED &&
                 c->hold.qty_sold == c->hold.qty;
    bool r_won = r->status == 0 && r->has_hold && r->hold.state == ESC_HOLD_CANCELLED;
    bool c_lost = c->status == ESC_ENOT_HELD && c->has_hold && c->hold.state == ESC_HOLD_CANCELLED;
    bool r_lost = r->status == ESC_ENOT_HELD && r->has_hold && r->hold.state == ESC_HOLD_CONVERTED;
    if (c_won && r_lost) {
        return 1;
    }
    if (r_won && c_lost) {
        return 2;
    }
    fprintf(stderr,
            "esc_probe: hold %" PRIu64 ": confirm -> %s (%s), release -> %s (%s): not exactly "
            "one winner\n",
            hold_id, esc_err_name(c->status), c->has_hold ? probe_state_name(&c->hold) : "none",
            esc_err_name(r->status), r->has_hold ? probe_state_name(&r->hold) : "none");
    return 0;
}

/* Judges every hold; "<hold> converted|cancelled|broken" lines to --out. */
static void cr_report(const probe_args *args, const probe_outcome *held, const probe_outcome *conf,
                      const probe_outcome *rel, uint32_t won[3])
{
    FILE *out = probe_open_out(args);
    for (uint32_t i = 0; i < args->n; i++) {
        int w = cr_judge(held[i].hold.hold_id, &conf[i], &rel[i]);
        won[w]++;
        if (out != NULL) {
            fprintf(out, "%" PRIu64 " %s\n", held[i].hold.hold_id,
                    w == 1   ? "converted"
                    : w == 2 ? "cancelled"
                             : "broken");
        }
    }
    if (out != NULL) {
        fclose(out);
    }
}

int probe_cr_race(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, true);
    probe_outcome *held = probe_reserve_many(&p, args, args->ttl_ms);
    probe_outcome *conf = probe_xcalloc(args->n, sizeof *conf);
    probe_outcome *rel = probe_xcalloc(args->n, sizeof *rel);
    /* Confirms in hold order on one connection, releases in reverse order
     * on the other: the node interleaves the two streams, so the first
     * holds meet their confirm first and the last ones their release. */
    for (uint32_t i = 0; i < args->n; i++) {
        probe_submit_hold_op(&p, true, held[i].hold.hold_id, args->deadline_ms, &conf[i]);
        uint32_t j = args->n - 1 - i;
        probe_submit_hold_op(&p, false, held[j].hold.hold_id, args->deadline_ms, &rel[j]);
    }
    probe_async_wait(&p);
    uint32_t won[3] = {0, 0, 0};
    cr_report(args, held, conf, rel, won);
    probe_async_close(&p);
    printf("WON confirm=%u release=%u broken=%u\n", won[1], won[2], won[0]);
    free(held);
    free(conf);
    free(rel);
    if (won[0] != 0) {
        probe_die("cr-race: %u holds without exactly one winner", won[0]);
    }
    return 0;
}

/* ---- rx-race: releases fired around the moment a hold expires ----------- */

/* When shot j of hold i fires, in ms from the hold's expires_at: the holds
 * are centred on -6, -3, 0, +3, +6 ms (so both outcomes occur), and each
 * hold's per_hold shots spread over 4 ms around its centre. */
static int64_t rx_offset_ms(uint32_t i, uint32_t j, uint32_t per_hold)
{
    int64_t centre = ((int64_t)(i % 5) - 2) * 3;
    if (per_hold == 1) {
        return centre;
    }
    return centre - 2 + (int64_t)j * 4 / (int64_t)(per_hold - 1);
}

/* Every reply for one hold names the same final state: OK with cancelled,
 * or EXPIRED with expired (a release that found the hold lapsed says so). */
static int rx_judge(const probe_shot *shots, uint32_t k)
{
    int state = 0;
    for (uint32_t j = 0; j < k; j++) {
        const probe_outcome *o = &shots[j].o;
        bool cancelled = o->status == 0 && o->hold.state == ESC_HOLD_CANCELLED;
        bool expired = o->status == ESC_EEXPIRED && o->hold.state == ESC_HOLD_EXPIRED;
        if (!o->has_hold || !(cancelled || expired) ||
            (state != 0 && (int)o->hold.state != state)) {
            fprintf(stderr, "esc_probe: hold %" PRIu64 " release #%u -> %s (%s)\n",
                    shots[j].hold_id, j, esc_err_name(o->status),
                    o->has_hold ? probe_state_name(&o->hold) : "none");
            return 0;
        }
        state = (int)o->hold.state;
    }
    return state;
}

/* Judges every hold into n[] (cancelled, expired, broken); lines to --out. */
static void rx_report(const probe_args *args, const probe_outcome *held, const probe_shot *shots,
                      uint32_t n[3])
{
    FILE *out = probe_open_out(args);
    uint32_t k = args->per_hold;
    for (uint32_t i = 0; i < args->n; i++) {
        int st = rx_judge(&shots[(size_t)i * k], k);
        n[0] += st == ESC_HOLD_CANCELLED;
        n[1] += st == ESC_HOLD_EXPIRED;
        n[2] += st == 0;
        if (out != NULL) {
            fprintf(out, "%" PRIu64 " %s\n", held[i].hold.hold_id,
                    st == 0 ? "broken" : esc_hold_state_name((esc_hold_state)st));
        }
    }
    if (out != NULL) {
        fclose(out);
    }
}

int probe_rx_race(const probe_args *args)
{
    probe_async p;
    probe_async_open(&p, args, false);
    probe_outcome *held = probe_reserve_many(&p, args, args->ttl_ms);
    uint32_t k = args->per_hold;
    probe_shot *shots = probe_xcalloc((size_t)args->n * k, sizeof *shots);
    int64_t now = probe_async_now_ms(&p);
    for (uint32_t i = 0; i < args->n; i++) {
        for (uint32_t j = 0; j < k; j++) {
            int64_t at = held[i].hold.expires_at_ms + rx_offset_ms(i, j, k);
            probe_shot_arm(&p, &shots[(size_t)i * k + j], held[i].hold.hold_id, args->deadline_ms,
                           at > now ? (uint64_t)(at - now) : 0);
        }
    }
    probe_async_wait(&p);
    uint32_t n[3] = {0, 0, 0};
    rx_report(args, held, shots, n);
    probe_async_close(&p);
    printf("RX cancelled=%u expired=%u broken=%u\n", n[0], n[1], n[2]);
    free(held);
    free(shots);
    if (n[2] != 0) {
        probe_die("rx-race: %u holds got releases that disagree or failed", n[2]);
    }
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_single.c - esc_probe's blocking sub-commands (see probe_single.h).
 */
#include "probe_single.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "esc_limits.h"
#include "probe.h"

static esc_client *client_open(const probe_args *args)
{
    esc_options o = probe_options(args);
    esc_client *c = NULL;
    int rc = esc_client_new(&o, &c);
    if (rc != 0) {
        probe_die("esc_client_new(%s): %s", args->endpoint ? args->endpoint : args->coordinator,
                  esc_err_name(rc));
    }
    return c;
}

static int single_call(esc_client *c, const probe_args *args, esc_hold *h)
{
    if (strcmp(args->cmd, "reserve") == 0) {
        esc_reserve_req req = {.item_id = args->item,
                               .buyer_id = args->buyer ? args->buyer : args->key,
                               .qty = args->qty,
                               .idempotency_key = args->key,
                               .ttl_ms = args->ttl_ms};
        return esc_reserve(c, &req, 0, h);
    }
    if (strcmp(args->cmd, "confirm") == 0) {
        return esc_confirm(c, args->hold_id, args->qty_set ? args->qty : 0, 0, h);
    }
    if (strcmp(args->cmd, "release") == 0) {
        return esc_release(c, args->hold_id, 0, h);
    }
    if (strcmp(args->cmd, "extend") == 0) {
        return esc_extend(c, args->hold_id, args->ttl_ms, 0, h);
    }
    return esc_get(c, args->hold_id, 0, h);
}

int probe_single(const probe_args *args)
{
    esc_client *c = client_open(args);
    esc_hold h;
    memset(&h, 0, sizeof h);
    h.state = ESC_HOLD_UNKNOWN;
    int rc = single_call(c, args, &h);
    /* *out is written on success and with a final state; hold_id 0 = not written */
    probe_print_outcome(stdout, rc, h.hold_id != 0 ? &h : NULL);
    if (rc == ESC_ETIMEDOUT) {
        fprintf(stderr, "esc_probe: %" PRId64 " %s hold=%" PRIu64 " key=%s: no answer in %u ms\n",
                esc_wall_ms(), args->cmd, args->hold_id, args->key ? args->key : "-",
                args->deadline_ms);
    }
    esc_client_free(c);
    return 0;
}

int probe_reserve_each(const probe_args *args)
{
    esc_client *c = client_open(args);
    uint32_t ok = 0;
    for (uint32_t i = 1; i <= args->n; i++) {
        char item[ESC_ITEM_LEN_MAX + 1], key[ESC_KEY_LEN_MAX + 1];
        snprintf(item, sizeof item, "%s%u", args->item, i);
        snprintf(key, sizeof key, "%s-%u", args->key, i);
        esc_reserve_req req = {.item_id = item, .buyer_id = key, .qty = 1, .idempotency_key = key};
        esc_hold h;
        memset(&h, 0, sizeof h);
        int rc = esc_reserve(c, &req, 0, &h);
        if (rc == 0) {
            ok++;
        } else {
            printf("REFUSED item=%s %s\n", item, esc_err_name(rc));
        }
    }
    printf("reserved=%u of=%u\n", ok, args->n);
    esc_client_free(c);
    return 0;
}

/* Prints "<STATUS> holds=N failed_line=I" and one "HOLD ..." line per hold. */
int probe_cart(const probe_args *args)
{
    char spec[1024];
    esc_cart_line lines[ESC_CART_LINES_MAX];
    snprintf(spec, sizeof spec, "%s", args->item);
    size_t n = probe_cart_lines(spec, lines);
    esc_client *c = client_open(args);
    esc_hold holds[ESC_CART_LINES_MAX];
    size_t nholds = 0, failed = 0;
    int rc = esc_reserve_cart(c, args->buyer ? args->buyer : args->key, lines, n, args->key,
                              args->ttl_ms, 0, holds, &nholds, &failed);
    printf("%s holds=%zu failed_line=%zu\n", esc_err_name(rc), rc == 0 ? nholds : 0,
           rc == 0 ? n : failed);
    for (size_t i = 0; rc == 0 && i < nholds; i++) {
        printf("HOLD item=%s qty=%lld hold=%llu\n", holds[i].item_id, (long long)holds[i].qty,
               (unsigned long long)holds[i].hold_id);
    }
    esc_client_free(c);
    return 0;
}

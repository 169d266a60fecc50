/* SPDX-License-Identifier: Apache-2.0 */
/* checkout.c - reserve a unit, take the payment, sell it (or give it back). */
#include <stdio.h>
#include <stdlib.h>

#include "escrow.h"

int main(int argc, char **argv)
{
    /* The coordinator routes each buyer to a segment; its PUB endpoint (optional)
     * pushes routing changes and the sold-out flag. */
    esc_options opts = {.coordinator = argc > 1 ? argv[1] : "tcp://127.0.0.1:7000",
                        .routes = argc > 2 ? argv[2] : NULL,
                        .tenant_id = "shop-1",
                        .deadline_ms = 2000};
    esc_client *c;
    int rc = esc_client_new(&opts, &c);
    if (rc != 0) {
        fprintf(stderr, "escrow: %s\n", esc_strerror(rc));
        return 1;
    }
    /* The key names this checkout: a retry after a timeout reuses it. */
    esc_reserve_req req = {
        .item_id = "tee", .buyer_id = "buyer-17", .qty = 1, .idempotency_key = "order-2026-0001"};
    esc_hold hold;
    rc = esc_reserve(c, &req, 0, &hold);
    /* TRY_LATER: every unit left is held by someone, some may come back. Ask again
     * (same key) after 50-100 ms, twice as long each time up to 1-2 s, for 10 s. */
    srand((unsigned)uv_hrtime());
    for (unsigned wait_ms = 100, waited_ms = 0; rc == ESC_ETRY_LATER && waited_ms < 10000;
         wait_ms = wait_ms < 2000 ? wait_ms * 2 : 2000) {
        unsigned ms = wait_ms / 2 + (unsigned)rand() % (wait_ms / 2 + 1); /* jitter */
        uv_sleep(ms);
        waited_ms += ms;
        rc = esc_reserve(c, &req, 0, &hold);
    }
    if (rc == ESC_ESOLD_OUT || rc == ESC_ETRY_LATER) {
        printf("%s: %s\n", esc_err_name(rc), esc_strerror(rc)); /* two different buttons */
        esc_client_free(c);
        return 0;
    }
    if (rc != 0) {
        fprintf(stderr, "reserve: %s\n", esc_strerror(rc));
        esc_client_free(c);
        return 1;
    }
    printf("hold %llu: %lld unit(s) until %lld\n", (unsigned long long)hold.hold_id,
           (long long)hold.qty, (long long)hold.expires_at_ms);
    rc = esc_extend(c, hold.hold_id, 0, 0, &hold); /* payment started: once per hold */
    bool paid = rc == 0;                           /* ... the payment provider answers here ... */
    rc = paid ? esc_confirm(c, hold.hold_id, 0, 0, &hold) : esc_release(c, hold.hold_id, 0, &hold);
    printf("%s: hold is %s\n", esc_err_name(rc), esc_hold_state_name(hold.state));
    esc_client_free(c);
    return rc == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_idem.c - see gw_idem.h.
 */
#include "gw_idem.h"

#include <string.h>

#include "esc_limits.h"
#include "wire.h"

/* The "no" says the hold already is what op would have made it. */
static bool done_already(gw_op op, int status, const esc_hold *h, int64_t qty)
{
    switch (op) {
    case GW_OP_CONFIRM:
        return status == ESC_ENOT_HELD && h->state == ESC_HOLD_CONVERTED &&
               (qty == 0 || h->qty_sold == qty);
    case GW_OP_RELEASE:
        return status == ESC_ENOT_HELD && h->state == ESC_HOLD_CANCELLED;
    case GW_OP_EXTEND:
        return status == ESC_EALREADY_EXTENDED && h->state == ESC_HOLD_HELD && h->extended;
    default:
        return false;
    }
}

gw_outcome gw_idem_hold(gw_op op, int status, const esc_hold *hold, bool keyed, int64_t qty)
{
    gw_outcome o = {status, 0, false};
    if (status == 0 && hold != NULL) {
        o.err = 0;
        o.replay = op == GW_OP_RESERVE && hold->replayed;
        o.http = op == GW_OP_RESERVE && !o.replay ? 201 : 200;
        return o;
    }
    if (status == 0) {
        o.err = ESC_EPROTO; /* libescrow never says yes without the hold */
        return o;
    }
    if (keyed && hold != NULL && done_already(op, status, hold, qty)) {
        o.err = 0;
        o.http = 200;
        o.replay = true;
    }
    return o;
}

gw_outcome gw_idem_cart(int status, const esc_hold *holds, size_t nholds)
{
    gw_outcome o = {status, 0, false};
    if (status != 0) {
        return o;
    }
    if (holds == NULL || nholds == 0) {
        o.err = ESC_EPROTO;
        return o;
    }
    bool all = true;
    for (size_t i = 0; i < nholds; i++) {
        all = all && holds[i].replayed;
    }
    o.replay = all;
    o.http = all ? 200 : 201;
    return o;
}

bool gw_idem_key_valid(const char *key)
{
    return key != NULL && wire_id_valid(key, ESC_KEY_LEN_MAX);
}

bool gw_idem_cart_key_fits(const char *key, size_t item_len)
{
    return strlen(key) + 1 + item_len <= ESC_KEY_LEN_MAX;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * req.c - see req.h.
 */
#include "req.h"

#include <string.h>

#include "esc_limits.h"

/* dst has room for max + 1 bytes; src was checked by wire_id_valid(src, max). */
static void copy_id(char *dst, const char *src)
{
    memcpy(dst, src, strlen(src) + 1);
}

int cli_req_reserve(wire_request *out, const char *tenant_id, const esc_reserve_req *req)
{
    if (req == NULL || !wire_id_valid(req->item_id, ESC_ITEM_LEN_MAX) ||
        !wire_id_valid(req->buyer_id, ESC_BUYER_LEN_MAX) ||
        !wire_id_valid(req->idempotency_key, ESC_KEY_LEN_MAX)) {
        return ESC_EINVAL;
    }
    if (req->qty < 1 || req->qty > ESC_QTY_MAX || !wire_ttl_valid(req->ttl_ms)) {
        return ESC_EINVAL;
    }
    if (!wire_id_valid(tenant_id, ESC_TENANT_LEN_MAX)) {
        return ESC_EINVAL;
    }
    memset(out, 0, sizeof *out);
    out->op = WIRE_OP_RESERVE;
    copy_id(out->tenant_id, tenant_id);
    copy_id(out->item_id, req->item_id);
    copy_id(out->buyer_id, req->buyer_id);
    copy_id(out->key, req->idempotency_key);
    out->qty = req->qty;
    out->ttl_ms = req->ttl_ms;
    return 0;
}

int cli_req_hold(wire_request *out, const char *tenant_id, wire_op op, uint64_t hold_id,
                 int64_t qty, uint32_t ttl_ms)
{
    if (!wire_hold_id_valid(hold_id) || !wire_id_valid(tenant_id, ESC_TENANT_LEN_MAX)) {
        return ESC_EINVAL;
    }
    switch (op) {
    case WIRE_OP_CONFIRM:
        if (qty < 0 || qty > ESC_QTY_MAX) {
            return ESC_EINVAL;
        }
        break;
    case WIRE_OP_EXTEND:
        if (!wire_ttl_valid(ttl_ms)) {
            return ESC_EINVAL;
        }
        break;
    case WIRE_OP_RELEASE:
    case WIRE_OP_GET:
        break;
    default:
        return ESC_EINVAL;
    }
    memset(out, 0, sizeof *out);
    out->op = op;
    copy_id(out->tenant_id, tenant_id);
    out->hold_id = hold_id;
    out->qty = op == WIRE_OP_CONFIRM ? qty : 0;
    out->ttl_ms = op == WIRE_OP_EXTEND ? ttl_ms : 0;
    return 0;
}

void cli_hold_from_wire(esc_hold *out, const wire_hold *in)
{
    memset(out, 0, sizeof *out);
    out->hold_id = in->hold_id;
    out->segment_id = in->segment_id;
    memcpy(out->item_id, in->item_id, sizeof out->item_id);
    out->item_id[ESC_ID_MAX] = '\0';
    memcpy(out->buyer_id, in->buyer_id, sizeof out->buyer_id);
    out->buyer_id[ESC_ID_MAX] = '\0';
    out->qty = in->qty;
    out->qty_sold = in->qty_sold;
    switch (in->state) {
    case WIRE_HOLD_HELD:
        out->state = ESC_HOLD_HELD;
        break;
    case WIRE_HOLD_CONVERTED:
        out->state = ESC_HOLD_CONVERTED;
        break;
    case WIRE_HOLD_CANCELLED:
        out->state = ESC_HOLD_CANCELLED;
        break;
    case WIRE_HOLD_EXPIRED:
        out->state = ESC_HOLD_EXPIRED;
        break;
    default:
        out->state = ESC_HOLD_UNKNOWN;
        break;
    }
    out->expires_at_ms = in->expires_at_ms;
    out->extended = in->extended;
}

bool cli_goal_reached(wire_op op, int64_t qty, const wire_hold *hold)
{
    switch (op) {
    case WIRE_OP_CONFIRM:
        return hold->state == WIRE_HOLD_CONVERTED && (qty == 0 || hold->qty_sold == qty);
    case WIRE_OP_RELEASE:
        return hold->state == WIRE_HOLD_CANCELLED;
    default:
        return false;
    }
}

int cli_reply_status(int status, bool has_hold)
{
    if (status == 0) {
        return has_hold ? 0 : ESC_EPROTO;
    }
    if (status > 0 || status <= ESC_E_LAST_) {
        return ESC_EPROTO;
    }
    return status;
}

const char *esc_hold_state_name(esc_hold_state state)
{
    switch (state) {
    case ESC_HOLD_HELD:
        return "held";
    case ESC_HOLD_CONVERTED:
        return "converted";
    case ESC_HOLD_CANCELLED:
        return "cancelled";
    case ESC_HOLD_EXPIRED:
        return "expired";
    default:
        return "unknown";
    }
}

bool cli_hold_shown(int status)
{
    return status != ESC_EIDEMPOTENCY_MISMATCH && status != ESC_ESOLD_OUT &&
           status != ESC_ETRY_LATER && status != ESC_ESEGMENT_EMPTY;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_stock.c - see ctl_region_stock.h.
 */
#include "ctl_region_stock.h"

#include <inttypes.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "pg_result.h"
#include "wire.h"

#define TAG "/* escrow:ctl-region-stock */ "

/* An AdminReq is a few hundred bytes at most (ids are bounded). */
#define STOCK_FRAME_MAX 1024

static const char sql_home[] =
    TAG "SELECT regions[1] FROM global_items WHERE tenant_id = $1 AND item_id = $2";

/* The region that carries the operation out: --via, else the item's first
 * region as the first database that answers says. Returns its index or -1
 * after a sentence on stderr. */
static int carrier(ctl_region_set *set, const ctl_args *a)
{
    if (a->op_region[0] != '\0' && ctl_region_set_find(set, a->op_region) < 0) {
        fprintf(stderr, "escrowctl: --region %s: no --config describes that region\n",
                a->op_region);
        return -1;
    }
    if (a->via_region[0] != '\0') {
        int r = ctl_region_set_find(set, a->via_region);
        if (r < 0) {
            fprintf(stderr, "escrowctl: --via %s: no --config describes that region\n",
                    a->via_region);
        }
        return r;
    }
    const char *p[] = {a->tenant, a->item};
    for (size_t r = 0; r < set->n; r++) {
        PGresult *res = NULL;
        if (ctl_region_set_open(&set->r[r]) != 0 ||
            ctl_db_query(set->r[r].conn, sql_home, 2, p, &res) != 0) {
            continue; /* said on stderr; another region may know */
        }
        char home[CTL_REGION_LEN_MAX + 1] = "";
        if (PQntuples(res) == 1 && !PQgetisnull(res, 0, 0)) {
            snprintf(home, sizeof home, "%s", PQgetvalue(res, 0, 0));
        }
        PQclear(res);
        int h = home[0] != '\0' ? ctl_region_set_find(set, home) : -1;
        if (h < 0 && home[0] != '\0') {
            fprintf(stderr, "escrowctl: %s/%s is carried out by region %s: give its --config\n",
                    a->tenant, a->item, home);
            return -1;
        }
        if (h >= 0) {
            return h;
        }
    }
    fprintf(stderr, "escrowctl: no region's database has a global item %s/%s\n", a->tenant,
            a->item);
    return -1;
}

static const char sql_op[] =
    TAG "SELECT item_id, kind, qty FROM global_ops WHERE tenant_id = $1 AND op_id = $2";

/* Whether region r carried out operation a->op_id already: 0 no, 1 yes (the
 * same change: answered on out), or an ESC_E* code after a sentence (its
 * database does not answer: the outcome cannot be known; ESC_ECONFLICT: the
 * id was used there for another change). */
static int carried_in(ctl_region *r, const ctl_args *a, FILE *out)
{
    const char *p[] = {a->tenant, a->op_id};
    const char *kind = a->admin_op == WIRE_ADMIN_RESTOCK ? "restock" : "reduce";
    PGresult *res = NULL;
    int rc = ctl_region_set_open(r);
    rc = rc != 0 ? rc : ctl_db_query(r->conn, sql_op, 2, p, &res);
    if (rc != 0) {
        fprintf(stderr,
                "escrowctl: cannot tell whether region %s carried out operation %s before (its "
                "database does not answer): nothing was sent; retry once it answers\n",
                r->cfg.name, a->op_id);
        return rc;
    }
    int64_t qty = 0; /* stays 0 (never a change's size) if unreadable: a conflict */
    bool found = PQntuples(res) == 1;
    if (found) {
        (void)ctl_db_i64(res, 0, 2, &qty);
    }
    bool same = found && strcmp(PQgetvalue(res, 0, 0), a->item) == 0 &&
                strcmp(PQgetvalue(res, 0, 1), kind) == 0 && qty == a->qty;
    if (found && !same) {
        fprintf(stderr,
                "escrowctl: operation %s was used before in region %s for %s of %" PRId64
                " units of %s/%s\n",
                a->op_id, r->cfg.name, PQgetvalue(res, 0, 1), qty, a->tenant,
                PQgetvalue(res, 0, 0));
    } else if (same && a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "outcome", "before");
        ctl_json_str(&j, "region", r->cfg.name);
        ctl_json_str(&j, "op_id", a->op_id);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    } else if (same) {
        fprintf(out,
                "region %s, operation %s: carried out before by region %s (%s of %" PRId64
                " units); nothing sent\n",
                r->cfg.name, a->op_id, r->cfg.name, kind, qty);
    }
    PQclear(res);
    return !found ? 0 : same ? 1 : ESC_ECONFLICT;
}

/* A given id may be a retry through another region than the first try's:
 * every region but the carrier (which answers a known id itself) is asked
 * first. Returns as carried_in, over all of them. */
static int carried_elsewhere(ctl_region_set *set, int carrier_idx, const ctl_args *a, FILE *out)
{
    for (size_t r = 0; r < set->n && a->op_id[0] != '\0'; r++) {
        int rc = (int)r == carrier_idx ? 0 : carried_in(&set->r[r], a, out);
        if (rc != 0) {
            return rc;
        }
    }
    return 0;
}

static void print_answer(const ctl_args *a, const char *region, const char *op_id,
                         const wire_reply *rep, FILE *out)
{
    const char *msg = ctl_rpc_message(rep);
    if (a->json) {
        ctl_json j;
        ctl_rpc_json_begin(&j, out, rep);
        ctl_json_str(&j, "region", region);
        ctl_json_str(&j, "op_id", op_id);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    }
    if (rep->status != 0) {
        fprintf(stderr, "escrowctl: the coordinator of region %s refused operation %s: %s (%s)\n",
                region, op_id, msg, esc_err_name(rep->status));
    } else if (!a->json) {
        fprintf(out, "region %s, operation %s: %s\n", region, op_id, msg);
    }
}

int ctl_region_stock(ctl_region_set *set, const ctl_args *a, FILE *out, bool *refused)
{
    int r = carrier(set, a);
    if (r < 0) {
        return ESC_EINVAL;
    }
    int before = carried_elsewhere(set, r, a, out);
    if (before != 0) {
        *refused = before == ESC_ECONFLICT;
        return before == 1 ? 0 : before;
    }
    const region_cfg *c = &set->r[r].cfg;
    char op_id[ESC_KEY_LEN_MAX + 1];
    if (a->op_id[0] != '\0') {
        snprintf(op_id, sizeof op_id, "%s", a->op_id);
    } else {
        snprintf(op_id, sizeof op_id, "op-%016" PRIx64, ctl_rpc_corr_id());
    }
    bool restock = a->admin_op == WIRE_ADMIN_RESTOCK;
    unsigned char frame[STOCK_FRAME_MAX];
    size_t len = 0;
    uint64_t corr = ctl_rpc_corr_id();
    int rc = wire_encode_admin_global(corr, a->tenant, a->admin_op, a->item, a->qty, op_id,
                                      restock ? a->op_region : "", frame, sizeof frame, &len);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot encode the request: %s\n", esc_strerror(rc));
        return rc;
    }
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    bool sent = false;
    rc = ctl_rpc_call(c->coordinator, corr, frame, len, a->timeout_ms, &rep, &sent);
    if (rc == ESC_ETIMEDOUT) {
        char who[CTL_REGION_LEN_MAX + 32];
        snprintf(who, sizeof who, "the coordinator of region %s", c->name);
        ctl_rpc_no_answer(who, c->coordinator, a->timeout_ms, sent, false);
        if (sent) {
            fprintf(stderr,
                    "escrowctl: the outcome is unknown: run the same command with --op-id %s "
                    "to learn it (an operation is never carried out twice)\n",
                    op_id);
        }
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot reach the coordinator of region %s at %s: %s\n", c->name,
                c->coordinator, esc_strerror(rc));
        return rc;
    }
    print_answer(a, c->name, op_id, &rep, out);
    if (rep.status != 0) {
        *refused = true;
        return rep.status;
    }
    return 0;
}

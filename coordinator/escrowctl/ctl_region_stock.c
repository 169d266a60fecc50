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
    wire_reply rep;
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

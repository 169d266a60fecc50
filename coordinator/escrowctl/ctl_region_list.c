/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_list.c - see ctl_region_list.h.
 */
#include "ctl_region_list.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_json.h"
#include "ctl_num.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "wire.h"

#define TAG "/* escrow:ctl-region */ "

static const char sql_counts[] =
    TAG "SELECT (SELECT count(*) FROM global_items), "
        "(SELECT count(*) FROM quota_transfers WHERE state = 'sent'), "
        "(SELECT count(*) FROM quota_transfers WHERE state = 'received'), "
        "(SELECT count(*) FROM quota_transfers WHERE state = 'refused'), "
        "(SELECT count(*) FROM quota_transfers), "
        "(SELECT count(*) FROM quota_receipts WHERE outcome = 'applied'), "
        "(SELECT count(*) FROM quota_receipts WHERE outcome = 'refused')";
enum { N_GITEMS, N_SENT, N_RECEIVED, N_REFUSED, N_ALL, N_APPLIED, N_RREFUSED, N_COLS_ };

/* Answer to a WIRE_QUOTA_STATUS from escrowctl: its own sender name. */
#define CTL_QUOTA_SENDER "escrowctl"

/* What `regions` found about one region. */
typedef struct region_look {
    bool db_ok;
    int64_t n[N_COLS_];
    bool coord_answers;
    char coord_region[ESC_REGION_LEN_MAX + 1];
    char coord_why[CTL_WHY_MAX]; /* when it does not answer, or refused */
} region_look;

/* A status with zero items: a live coordinator answers with its region. */
static void probe_coordinator(const ctl_region *r, const ctl_args *a, region_look *l)
{
    wire_quota *q = calloc(1, sizeof *q);
    if (q == NULL) {
        snprintf(l->coord_why, sizeof l->coord_why, "out of memory");
        return;
    }
    q->kind = WIRE_QUOTA_STATUS;
    snprintf(q->from_region, sizeof q->from_region, "%s", CTL_QUOTA_SENDER);
    wire_reply rep = {0};
    wire_quota_item item;
    bool sent = false;
    int ms = a->timeout_ms < CTL_REGION_PROBE_MS_MAX ? a->timeout_ms : CTL_REGION_PROBE_MS_MAX;
    int rc = ctl_rpc_quota(r->cfg.coordinator, NULL, q, NULL, 0, ms, &rep, &item, &sent);
    free(q);
    if (rc == ESC_ETIMEDOUT) {
        char t[32];
        ctl_num_format_ms(ms, t, sizeof t);
        snprintf(l->coord_why, sizeof l->coord_why, "no answer within %s", t);
    } else if (rc != 0) {
        snprintf(l->coord_why, sizeof l->coord_why, "%s", esc_strerror(rc));
    } else {
        l->coord_answers = true;
        snprintf(l->coord_region, sizeof l->coord_region, "%s", rep.region);
        if (rep.status != 0) {
            snprintf(l->coord_why, sizeof l->coord_why, "refused: %s",
                     rep.message[0] != '\0' ? rep.message : esc_err_name(rep.status));
        }
    }
}

static void look_region(ctl_region *r, const ctl_args *a, region_look *l)
{
    memset(l, 0, sizeof *l);
    PGresult *res = NULL;
    if (ctl_region_set_open(r) == 0 && ctl_db_query(r->conn, sql_counts, 0, NULL, &res) == 0) {
        l->db_ok = true;
        for (int c = 0; c < N_COLS_; c++) {
            ctl_db_i64(res, 0, c, &l->n[c]);
        }
    }
    PQclear(res);
    probe_coordinator(r, a, l);
}

static const char *coord_state(const ctl_region *r, const region_look *l)
{
    if (!l->coord_answers) {
        return "not answering";
    }
    return strcmp(l->coord_region, r->cfg.name) == 0 ? "answers" : "answers as another region";
}

static void print_region_human(const ctl_region *r, const region_look *l, FILE *out)
{
    fprintf(out, "region %s (%s)\n", r->cfg.name, r->cfg.path);
    fprintf(out, "  database     %s, region_self=%s\n", l->db_ok ? "reachable" : "NOT REACHABLE",
            !l->db_ok ? "?" : (r->self[0] != '\0' ? r->self : "(unclaimed)"));
    fprintf(out, "  coordinator  %s %s", r->cfg.coordinator, coord_state(r, l));
    if (l->coord_answers && strcmp(l->coord_region, r->cfg.name) != 0) {
        fprintf(out, " '%s'", l->coord_region);
    }
    fprintf(out, "%s%s%s\n", l->coord_why[0] != '\0' ? " (" : "", l->coord_why,
            l->coord_why[0] != '\0' ? ")" : "");
    fprintf(out, "  peers       ");
    for (size_t p = 0; p < r->cfg.npeers; p++) {
        fprintf(out, " %s=%s", r->cfg.peers[p].name, r->cfg.peers[p].coordinator);
    }
    fprintf(out, "%s\n", r->cfg.npeers == 0 ? " (none)" : "");
    if (l->db_ok) {
        fprintf(out,
                "  global items %" PRId64 "; quota transfers sent %" PRId64 " (open %" PRId64
                ", received %" PRId64 ", refused %" PRId64 "); receipts applied %" PRId64
                ", refused %" PRId64 "\n",
                l->n[N_GITEMS], l->n[N_ALL], l->n[N_SENT], l->n[N_RECEIVED], l->n[N_REFUSED],
                l->n[N_APPLIED], l->n[N_RREFUSED]);
    }
}

static void json_region(ctl_json *j, const ctl_region *r, const region_look *l)
{
    static const char *const keys[N_COLS_] = {
        "global_items",       "transfers_open",   "transfers_received", "transfers_refused",
        "transfers_sent_all", "receipts_applied", "receipts_refused"};
    ctl_json_begin_obj(j, NULL);
    ctl_json_str(j, "region", r->cfg.name);
    ctl_json_str(j, "config", r->cfg.path);
    ctl_json_bool(j, "database_reachable", l->db_ok);
    ctl_json_str(j, "region_self", l->db_ok ? r->self : NULL);
    ctl_json_str(j, "coordinator", r->cfg.coordinator);
    ctl_json_bool(j, "coordinator_answers", l->coord_answers);
    ctl_json_str(j, "coordinator_region", l->coord_answers ? l->coord_region : NULL);
    ctl_json_begin_arr(j, "peers");
    for (size_t p = 0; p < r->cfg.npeers; p++) {
        ctl_json_begin_obj(j, NULL);
        ctl_json_str(j, "region", r->cfg.peers[p].name);
        ctl_json_str(j, "coordinator", r->cfg.peers[p].coordinator);
        ctl_json_end_obj(j);
    }
    ctl_json_end_arr(j);
    for (int c = 0; l->db_ok && c < N_COLS_; c++) {
        ctl_json_i64(j, keys[c], l->n[c]);
    }
    ctl_json_end_obj(j);
}

/* Every region, reachable or not: the command shows, it does not refuse. */
int ctl_region_list(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    ctl_json j;
    if (a->json) {
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_begin_arr(&j, "regions");
    }
    for (size_t i = 0; i < set->n; i++) {
        region_look l;
        look_region(&set->r[i], a, &l);
        if (a->json) {
            json_region(&j, &set->r[i], &l);
        } else {
            print_region_human(&set->r[i], &l, out);
        }
    }
    if (a->json) {
        ctl_json_end_arr(&j);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    }
    return 0;
}

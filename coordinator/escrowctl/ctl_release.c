/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_release.c - see ctl_release.h.
 */
#include "ctl_release.h"

#include <inttypes.h>
#include <string.h>

#include "ctl_admin.h"
#include "ctl_db.h"
#include "ctl_json.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "pg_result.h"
#include "wire.h"

#define TAG "/* escrow:ctl-release */ "
#define TS(col) "to_char(" col " AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS.MS\"Z\"')"

/* A release frame: ids are bounded, a few hundred bytes. */
#define RELEASE_FRAME_MAX 1024

/* The hold, its segment's owner and the owner's lease. A node whose lease
 * ran out (lease_until is only written under a coordinator) or that the
 * coordinator marked down cannot act on the hold now. */
static const char sql_lookup[] = TAG "SELECT h.tenant_id, h.item_id, h.segment_id, h.state, " TS(
    "h.ended_at") ", "
                  "s.node_id, n.endpoint, n.state, "
                  "(n.state = 'down' OR (n.lease_until IS NOT NULL AND n.lease_until < "
                  "now())), " TS("n.last_seen_at") " "
                                                   "FROM holds h LEFT JOIN segments s ON "
                                                   "s.segment_id = h.segment_id "
                                                   "LEFT JOIN nodes n ON n.node_id = s.node_id "
                                                   "WHERE h.hold_id = $1";

enum { L_TENANT, L_ITEM, L_SEG, L_STATE, L_ENDED, L_NODE, L_EP, L_NSTATE, L_DOWN, L_SEEN, L_COLS_ };

typedef struct hold_loc {
    char tenant[ESC_TENANT_LEN_MAX + 1];
    char item[ESC_ITEM_LEN_MAX + 1];
    char segment[24];
    char state[16];
    char ended_at[40];
    char node[ESC_NODE_ID_LEN_MAX + 1]; /* "" = no owner */
    char endpoint[ESC_ENDPOINT_LEN_MAX + 1];
    char last_seen[40];
    bool down;
} hold_loc;

static void copy_cell(char *dst, size_t cap, const PGresult *res, int col)
{
    snprintf(dst, cap, "%s", pg_result_text_or(res, 0, col, ""));
}

static int lookup(PGconn *conn, const char *hold, hold_loc *loc)
{
    const char *params[] = {hold};
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_lookup, 1, params, &res);
    if (rc != 0) {
        return rc;
    }
    if (PQnfields(res) != L_COLS_) {
        fprintf(stderr, "escrowctl: unexpected answer to the hold lookup\n");
        rc = ESC_EDB;
    } else if (PQntuples(res) == 0) {
        fprintf(stderr, "escrowctl: no hold %s\n", hold);
        rc = ESC_ENOT_FOUND;
    } else {
        copy_cell(loc->tenant, sizeof loc->tenant, res, L_TENANT);
        copy_cell(loc->item, sizeof loc->item, res, L_ITEM);
        copy_cell(loc->segment, sizeof loc->segment, res, L_SEG);
        copy_cell(loc->state, sizeof loc->state, res, L_STATE);
        copy_cell(loc->ended_at, sizeof loc->ended_at, res, L_ENDED);
        copy_cell(loc->node, sizeof loc->node, res, L_NODE);
        copy_cell(loc->endpoint, sizeof loc->endpoint, res, L_EP);
        copy_cell(loc->last_seen, sizeof loc->last_seen, res, L_SEEN);
        loc->down = pg_result_true(res, 0, L_DOWN);
    }
    PQclear(res);
    return rc;
}

static const char *hold_state_name(int state)
{
    switch (state) {
    case WIRE_HOLD_HELD:
        return "held";
    case WIRE_HOLD_CONVERTED:
        return "converted";
    case WIRE_HOLD_CANCELLED:
        return "cancelled";
    case WIRE_HOLD_EXPIRED:
        return "expired";
    default:
        return "unknown";
    }
}

static void print_result(const ctl_args *a, const hold_loc *loc, const char *hold,
                         const char *state, int status, const char *message, FILE *out)
{
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_num(&j, "hold_id", hold);
        ctl_json_str(&j, "tenant", loc->tenant);
        ctl_json_str(&j, "item", loc->item);
        ctl_json_num(&j, "segment_id", loc->segment);
        ctl_json_str(&j, "node", loc->node[0] != '\0' ? loc->node : NULL);
        ctl_json_str(&j, "state", state);
        ctl_json_str(&j, "status", esc_err_name(status));
        ctl_json_str(&j, "message", message);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    } else if (status == 0) {
        fprintf(out, "hold %s (%s/%s, segment %s): %s\n", hold, loc->tenant, loc->item,
                loc->segment, message);
    }
    if (status != 0) {
        fprintf(stderr, "escrowctl: hold %s: %s (%s)\n", hold, message, esc_err_name(status));
    }
}

/* A hold that already ended: its final state is in the database. */
static int answer_ended(const ctl_args *a, const hold_loc *loc, const char *hold, FILE *out,
                        bool *refused)
{
    char msg[WIRE_WHY_MAX];
    if (strcmp(loc->state, "converted") == 0) {
        snprintf(msg, sizeof msg, "it was converted (sold) at %s; a sold hold is not released",
                 loc->ended_at);
        print_result(a, loc, hold, loc->state, ESC_ENOT_HELD, msg, out);
        *refused = true;
        return ESC_ENOT_HELD;
    }
    snprintf(msg, sizeof msg, "already %s at %s; nothing to release", loc->state, loc->ended_at);
    print_result(a, loc, hold, loc->state, 0, msg, out);
    return 0;
}

/* Nobody can act on the hold now: no owner, no endpoint, or a dead owner. */
static int owner_unusable(const hold_loc *loc, const char *hold)
{
    if (loc->node[0] == '\0') {
        fprintf(stderr,
                "escrowctl: hold %s: segment %s has no owner right now (the coordinator has "
                "not placed it on a node); nothing was done, retry once 'escrowctl status' "
                "shows an owner\n",
                hold, loc->segment);
        return ESC_ECLOSED;
    }
    if (loc->down) {
        fprintf(stderr,
                "escrowctl: hold %s: node %s, owner of segment %s, is down (last seen %s); "
                "nothing was done, retry once its segments moved to a live node\n",
                hold, loc->node, loc->segment, loc->last_seen);
        return ESC_ECLOSED;
    }
    if (loc->endpoint[0] == '\0') {
        fprintf(stderr,
                "escrowctl: hold %s: node %s, owner of segment %s, has no endpoint on record; "
                "nothing was done\n",
                hold, loc->node, loc->segment);
        return ESC_ECLOSED;
    }
    return 0;
}

/* One ReleaseReq to the owner. */
static int send_release(const ctl_args *a, const hold_loc *loc, wire_reply *rep)
{
    static wire_request zero;
    wire_request req = zero;
    req.corr_id = ctl_rpc_corr_id();
    req.op = WIRE_OP_RELEASE;
    snprintf(req.tenant_id, sizeof req.tenant_id, "%s", loc->tenant);
    req.hold_id = (uint64_t)a->hold_id;
    req.by_operator = true;
    unsigned char frame[RELEASE_FRAME_MAX];
    size_t len = 0;
    int rc = wire_encode_request(&req, frame, sizeof frame, &len);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot encode the release: %s\n", esc_strerror(rc));
        return rc;
    }
    bool sent = false;
    rc = ctl_rpc_call(loc->endpoint, req.corr_id, frame, len, a->timeout_ms, rep, &sent);
    if (rc == ESC_ETIMEDOUT) {
        char who[ESC_NODE_ID_LEN_MAX + 16];
        snprintf(who, sizeof who, "node %s", loc->node);
        ctl_rpc_no_answer(who, loc->endpoint, a->timeout_ms, sent, false);
        if (sent) {
            fprintf(stderr, "escrowctl: a release is safe to repeat\n");
        }
    } else if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot reach node %s at %s: %s\n", loc->node, loc->endpoint,
                esc_strerror(rc));
    }
    return rc;
}

int ctl_release(PGconn *conn, const ctl_args *a, FILE *out, bool *refused)
{
    char hold[24];
    snprintf(hold, sizeof hold, "%" PRId64, a->hold_id);
    for (int attempt = 1;; attempt++) {
        hold_loc loc;
        memset(&loc, 0, sizeof loc);
        int rc = lookup(conn, hold, &loc);
        if (rc != 0) {
            return rc;
        }
        if (strcmp(loc.state, "held") != 0) {
            return answer_ended(a, &loc, hold, out, refused);
        }
        rc = owner_unusable(&loc, hold);
        if (rc != 0) {
            return rc;
        }
        wire_reply rep = {0};
        memset(&rep, 0, sizeof rep);
        rc = send_release(a, &loc, &rep);
        if (rc != 0) {
            return rc;
        }
        bool moved = rep.status == ESC_ENOT_OWNER || rep.status == ESC_EFENCED;
        if (moved && attempt < CTL_RELEASE_TRIES_MAX) {
            continue; /* the segment changed owner meanwhile: ask the new one */
        }
        const char *state = rep.has_hold ? hold_state_name(rep.hold.state) : loc.state;
        char msg[WIRE_WHY_MAX + ESC_NODE_ID_LEN_MAX + 64];
        if (rep.status == 0) {
            snprintf(msg, sizeof msg, "%s", state);
        } else {
            snprintf(msg, sizeof msg, "node %s refused: %s", loc.node,
                     rep.message[0] != '\0' ? rep.message : esc_strerror(rep.status));
        }
        print_result(a, &loc, hold, state, rep.status, msg, out);
        *refused = rep.status != 0;
        return rep.status;
    }
}

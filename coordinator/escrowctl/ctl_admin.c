/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_admin.c - see ctl_admin.h.
 */
#include "ctl_admin.h"

#include <string.h>

#include "ctl_json.h"
#include "ctl_num.h"
#include "ctl_rpc.h"
#include "escrow_errors.h"
#include "wire.h"

/* An AdminReq is a few hundred bytes at most (ids are bounded). */
#define ADMIN_FRAME_MAX 1024

/* Sends one AdminReq; the reply lands in *rep. Errors other than the
 * coordinator's own answer are explained here. */
static int admin_call(const ctl_args *a, uint32_t op, wire_reply *rep, bool outcome_matters,
                      bool quiet)
{
    unsigned char frame[ADMIN_FRAME_MAX];
    size_t len = 0;
    uint64_t corr = ctl_rpc_corr_id();
    bool item_op = op != WIRE_ADMIN_DRAIN && op != WIRE_ADMIN_UNDRAIN && op != WIRE_ADMIN_RELOAD;
    int rc = wire_encode_admin(corr, item_op ? a->tenant : "", op, item_op ? a->item : "", a->node,
                               a->qty, (uint32_t)a->nsegments, frame, sizeof frame, &len);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot encode the request: %s\n", esc_strerror(rc));
        return rc;
    }
    bool sent = false;
    rc = ctl_rpc_call(a->coordinator, corr, frame, len, a->timeout_ms, rep, &sent);
    if (rc == ESC_ETIMEDOUT) {
        if (!quiet) {
            ctl_rpc_no_answer("coordinator", a->coordinator, a->timeout_ms, sent, outcome_matters);
        }
    } else if (rc == ESC_EPROTO) {
        fprintf(stderr, "escrowctl: the coordinator at %s sent an answer that is not a reply\n",
                a->coordinator);
    } else if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot reach the coordinator at %s: %s\n", a->coordinator,
                esc_strerror(rc));
    }
    return rc;
}

static void print_reply(const ctl_args *a, const wire_reply *rep, FILE *out)
{
    const char *msg = ctl_rpc_message(rep);
    if (a->json) {
        ctl_json j;
        ctl_rpc_json_begin(&j, out, rep);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    }
    if (rep->status == 0) {
        if (!a->json) {
            fprintf(out, "%s\n", msg);
        }
        return;
    }
    fprintf(stderr, "escrowctl: the coordinator refused: %s (%s)\n", msg,
            esc_err_name(rep->status));
}

int ctl_admin(const ctl_args *a, FILE *out, bool *refused)
{
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    bool outcome_matters = a->admin_op == WIRE_ADMIN_RESTOCK || a->admin_op == WIRE_ADMIN_REDUCE;
    int rc = admin_call(a, a->admin_op, &rep, outcome_matters, false);
    if (rc != 0) {
        return rc;
    }
    print_reply(a, &rep, out);
    if (rep.status != 0) {
        *refused = true;
        return rep.status;
    }
    return 0;
}

bool ctl_admin_reload(const ctl_args *a)
{
    if (a->coordinator[0] == '\0') {
        return false;
    }
    wire_reply rep = {0};
    memset(&rep, 0, sizeof rep);
    int rc = admin_call(a, WIRE_ADMIN_RELOAD, &rep, false, true);
    if (rc == 0 && rep.status == 0) {
        return true;
    }
    char t[32];
    ctl_num_format_ms(a->timeout_ms, t, sizeof t);
    if (rc == ESC_ETIMEDOUT) {
        fprintf(stderr,
                "escrowctl: warning: the coordinator at %s did not answer within %s; it will "
                "see the new item at its next catalog poll\n",
                a->coordinator, t);
    } else if (rc == 0) {
        fprintf(stderr, "escrowctl: warning: the coordinator at %s refused to reload: %s (%s)\n",
                a->coordinator, rep.message[0] != '\0' ? rep.message : esc_strerror(rep.status),
                esc_err_name(rep.status));
    } else {
        fprintf(stderr,
                "escrowctl: warning: the coordinator was not asked to reload; it will see the "
                "new item at its next catalog poll\n");
    }
    return false;
}

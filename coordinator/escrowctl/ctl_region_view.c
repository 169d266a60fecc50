/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_view.c - see ctl_region_view.h.
 *
 * Why one snapshot per region, read one region after the other, is exact.
 * A transfer of q units from donor D to receiver R takes three
 * transactions: s1 at D (total -= q, row 'sent'), s2 at R (receipt
 * 'applied', total += q), s3 at D (row 'received'); s1 commits before the
 * offer is sent, so s1 < s2 < s3. Each region's total, rows and receipts
 * come from the same snapshot (they change together, so any split would
 * count q twice or not at all). With D read at time tD and R at tR, q is
 * counted by D's total iff tD < s1, by R's total iff tR >= s2, and as in
 * flight iff tD >= s1 and tR < s2. Every case gives exactly one q but one:
 * tD < s1 and tR >= s2 (D read before the send, R after the apply): two.
 * Reading every receiver before its donors would exclude it, but no order
 * can do that for two regions that send to each other, so instead the
 * case is recognised: R shows an applied receipt whose donor row is not in
 * D's snapshot. Rows are never deleted, so after all the snapshots
 * (later than tR >= s2 > s1) the row must be visible; a second look at D
 * (its own, later read) finds it 'sent' or 'received' with the same
 * figures: then it was inserted after tD, D's snapshot still counted q in
 * its total, and q is subtracted once (counted_twice). A row still missing
 * in the second look, or 'refused', or with other figures, is a violation.
 * A refused transfer is never counted twice: R's total does not change,
 * and D counts q in its total or in flight in every snapshot.
 */
#include "ctl_region_view.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_check.h"
#include "ctl_db.h"
#include "escrow_errors.h"
#include "log.h"
#include "pg_array.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-region-view */ "
#define STR_(x) #x
#define STR(x) STR_(x)

static const char sql_items[] =
    TAG "SELECT g.tenant_id, g.item_id, g.global_total, array_to_string(g.regions, ' '), "
        "i.state, c.total, c.available, c.held, c.sold, c.unallocated, c.in_flight, "
        "COALESCE((SELECT sum(t.qty) FROM quota_transfers t WHERE t.tenant_id = g.tenant_id "
        "AND t.item_id = g.item_id AND t.state = 'sent'), 0), i.reduce_pending, "
        "COALESCE((SELECT sum(d.delta) FROM global_changes d WHERE d.tenant_id = g.tenant_id "
        "AND d.item_id = g.item_id AND d.region = (SELECT region FROM region_self)), 0), "
        "COALESCE((SELECT sum(d.delta) FROM global_changes d WHERE d.tenant_id = g.tenant_id "
        "AND d.item_id = g.item_id), 0) "
        "FROM global_items g JOIN items i USING (tenant_id, item_id) "
        "JOIN conservation c USING (tenant_id, item_id) "
        "WHERE ($1::text IS NULL OR g.tenant_id = $1) AND ($2::text IS NULL OR g.item_id = $2) "
        "ORDER BY g.tenant_id COLLATE \"C\", g.item_id COLLATE \"C\" "
        "LIMIT " STR(CTL_STATUS_ITEMS_MAX) " + 1";
enum {
    I_TENANT,
    I_ITEM,
    I_GTOTAL,
    I_REGIONS,
    I_STATE,
    I_TOTAL,
    I_AVAIL,
    I_HELD,
    I_SOLD,
    I_UNALLOC,
    I_SEGFLIGHT,
    I_SENT,
    I_REDUCE,
    I_OWN_DELTA,
    I_KNOWN_DELTA
};
static const char sql_xfers[] =
    TAG "SELECT transfer_id, tenant_id, item_id, to_region, qty, state FROM quota_transfers "
        "WHERE ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR item_id = $2) "
        "ORDER BY transfer_id LIMIT " STR(CTL_VIEW_ROWS_MAX) " + 1";
enum { X_ID, X_TENANT, X_ITEM, X_TO, X_QTY, X_STATE };
static const char sql_receipts[] =
    TAG "SELECT from_region, transfer_id, tenant_id, item_id, qty FROM quota_receipts "
        "WHERE outcome = 'applied' "
        "AND ($1::text IS NULL OR tenant_id = $1) AND ($2::text IS NULL OR item_id = $2) "
        "LIMIT " STR(CTL_VIEW_ROWS_MAX) " + 1";
enum { R_FROM, R_ID, R_TENANT, R_ITEM, R_QTY };
/* The second look (see the file comment): its own snapshot, later than all. */
static const char sql_late[] =
    TAG "SELECT transfer_id, tenant_id, item_id, to_region, qty, state FROM quota_transfers "
        "WHERE transfer_id = ANY($1::bigint[])";

void ctl_region_view_note(ctl_region_view *v, bool violation, const char *fmt, ...)
{
    if (violation) {
        v->violations++;
    } else {
        v->cannot_judge++;
    }
    if (v->nnotes >= CTL_VIEW_NOTES_MAX) {
        return;
    }
    struct ctl_region_view_note *n = &v->notes[v->nnotes++];
    n->violation = violation;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(n->text, sizeof n->text, fmt, ap);
    va_end(ap);
}

/* One region's snapshot: its local check (if asked), then its rows. */
static int read_region(ctl_region *r, ctl_region_view_region *vr, const ctl_args *a, int what,
                       FILE *out)
{
    const char *p[] = {a->tenant[0] != '\0' ? a->tenant : NULL,
                       a->item[0] != '\0' ? a->item : NULL};
    PGconn *conn = r->conn;
    int rc = ctl_db_begin(conn, "ISOLATION LEVEL REPEATABLE READ READ ONLY");
    if (rc == 0 && (what & CTL_VIEW_CHECK) != 0) {
        if (out != NULL) {
            fprintf(out, "== region %s (%s)\n", r->cfg.name, r->cfg.path);
        }
        rc = ctl_check_tx(conn, out, &vr->local_items_violated, &vr->local_segments_violated);
    }
    rc = rc != 0 ? rc : ctl_db_query(conn, sql_items, 2, p, &vr->items);
    if (rc == 0 && (what & CTL_VIEW_MATCH) != 0) {
        rc = ctl_db_query(conn, sql_xfers, 2, p, &vr->xfers);
        rc = rc != 0 ? rc : ctl_db_query(conn, sql_receipts, 2, p, &vr->receipts);
    }
    rc = rc != 0 ? rc : ctl_db_commit(conn);
    if (rc != 0) {
        ctl_db_rollback(conn);
        fprintf(stderr, "escrowctl: region %s: cannot read its global items\n", r->cfg.name);
    }
    return rc;
}

static int key_cmp(const char *t1, const char *i1, const char *t2, const char *i2)
{
    int c = strcmp(t1, t2);
    return c != 0 ? c : strcmp(i1, i2);
}

static int item_cmp(const void *x, const void *y)
{
    const ctl_region_view_item *a = x, *b = y;
    return key_cmp(a->tenant, a->item, b->tenant, b->item);
}

/* The view's index of (tenant, item), or -1. */
static long find_item(const ctl_region_view *v, const char *tenant, const char *item)
{
    size_t lo = 0, hi = v->nitems;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = key_cmp(tenant, item, v->items[mid].tenant, v->items[mid].item);
        if (c == 0) {
            return (long)mid;
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return -1;
}

/* The union of every region's global items, then their figures. */
static int build_items(ctl_region_set *set, ctl_region_view *v)
{
    size_t cap = 0;
    for (size_t r = 0; r < set->n; r++) {
        cap += (size_t)PQntuples(v->reg[r].items);
    }
    v->items = calloc(cap + 1, sizeof *v->items);
    if (v->items == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t r = 0; r < set->n; r++) {
        const PGresult *res = v->reg[r].items;
        for (int i = 0; i < PQntuples(res) && i < CTL_STATUS_ITEMS_MAX; i++) {
            v->items[v->nitems].tenant = PQgetvalue(res, i, I_TENANT);
            v->items[v->nitems++].item = PQgetvalue(res, i, I_ITEM);
        }
        v->more = v->more || PQntuples(res) > CTL_STATUS_ITEMS_MAX;
    }
    qsort(v->items, v->nitems, sizeof *v->items, item_cmp);
    size_t n = 0;
    for (size_t i = 0; i < v->nitems; i++) {
        if (n == 0 || item_cmp(&v->items[n - 1], &v->items[i]) != 0) {
            v->items[n++] = v->items[i];
        }
    }
    v->nitems = n;
    v->figs = calloc(n * set->n + 1, sizeof *v->figs);
    if (v->figs == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < n; i++) {
        v->items[i].fig = &v->figs[i * set->n];
        v->items[i].judged = true;
    }
    return 0;
}

int64_t ctl_region_view_unused(const ctl_region_view_fig *f)
{
    int64_t u = f->available + f->seg_in_flight + f->unallocated - f->reduce_pending;
    return u > 0 ? u : 0;
}

static void fill_figs(ctl_region_set *set, ctl_region_view *v)
{
    for (size_t r = 0; r < set->n; r++) {
        const PGresult *res = v->reg[r].items;
        for (int i = 0; i < PQntuples(res) && i < CTL_STATUS_ITEMS_MAX; i++) {
            long k = find_item(v, PQgetvalue(res, i, I_TENANT), PQgetvalue(res, i, I_ITEM));
            ESC_ASSERT(k >= 0);
            ctl_region_view_item *it = &v->items[k];
            ctl_region_view_fig *f = &it->fig[r];
            f->present = true;
            f->regions = PQgetvalue(res, i, I_REGIONS);
            f->state = PQgetvalue(res, i, I_STATE);
            f->global_total = pg_result_i64_or(res, i, I_GTOTAL, 0);
            f->quota = pg_result_i64_or(res, i, I_TOTAL, 0);
            f->available = pg_result_i64_or(res, i, I_AVAIL, 0);
            f->held = pg_result_i64_or(res, i, I_HELD, 0);
            f->sold = pg_result_i64_or(res, i, I_SOLD, 0);
            f->unallocated = pg_result_i64_or(res, i, I_UNALLOC, 0);
            f->seg_in_flight = pg_result_i64_or(res, i, I_SEGFLIGHT, 0);
            f->sent_out = pg_result_i64_or(res, i, I_SENT, 0);
            f->reduce_pending = pg_result_i64_or(res, i, I_REDUCE, 0);
            f->own_delta = pg_result_i64_or(res, i, I_OWN_DELTA, 0);
            f->known_delta = pg_result_i64_or(res, i, I_KNOWN_DELTA, 0);
            f->floor = region_cfg_floor(&set->r[r].cfg, it->tenant, it->item);
            if (it->quotas == 0 && it->available == 0 && it->held == 0 && it->sold == 0) {
                it->global_total = f->global_total; /* until verdict_item compares them */
            }
            it->quotas += f->quota;
            it->pending += f->reduce_pending;
            it->unused += ctl_region_view_unused(f);
            it->changes += f->own_delta;
            it->available += f->available;
            it->held += f->held;
            it->sold += f->sold;
        }
    }
}

/* The row of transfer id in a donor's result (ordered by transfer_id), or -1. */
static int find_xfer(const PGresult *x, int64_t id)
{
    int lo = 0, hi = PQntuples(x) < CTL_VIEW_ROWS_MAX ? PQntuples(x) : CTL_VIEW_ROWS_MAX;
    while (lo < hi) {
        int mid = lo + (hi - lo) / 2;
        int64_t m = pg_result_i64_or(x, mid, X_ID, 0);
        if (m == id) {
            return mid;
        }
        if (id < m) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return -1;
}

/* True if donor row j of x is the transfer that receipt row i of rc answers. */
static bool same_transfer(const PGresult *x, int j, const char *receiver, const PGresult *rc, int i)
{
    return strcmp(PQgetvalue(x, j, X_TO), receiver) == 0 &&
           strcmp(PQgetvalue(x, j, X_TENANT), PQgetvalue(rc, i, R_TENANT)) == 0 &&
           strcmp(PQgetvalue(x, j, X_ITEM), PQgetvalue(rc, i, R_ITEM)) == 0 &&
           pg_result_i64_or(x, j, X_QTY, 0) == pg_result_i64_or(rc, i, R_QTY, 0);
}

/* An applied receipt whose donor row was not in the donor's snapshot. */
typedef struct late_receipt {
    size_t donor, receiver;
    int row; /* in the receiver's receipts */
} late_receipt;

static void note_receipt(ctl_region_view *v, bool violation, const char *why, const char *receiver,
                         const PGresult *rc, int i)
{
    ctl_region_view_note(
        v, violation, "region %s applied transfer %s/%s (%s units of %s/%s) but %s", receiver,
        PQgetvalue(rc, i, R_FROM), PQgetvalue(rc, i, R_ID), PQgetvalue(rc, i, R_QTY),
        PQgetvalue(rc, i, R_TENANT), PQgetvalue(rc, i, R_ITEM), why);
}

/* The late receipts' transfer ids from donor d, as a bigint[] literal in ids
 * (initialised by the caller). */
static void late_ids(const ctl_region_view *v, const late_receipt *late, size_t nlate, size_t d,
                     pg_array *ids)
{
    for (size_t i = 0; i < nlate; i++) {
        if (late[i].donor == d) {
            const PGresult *rc = v->reg[late[i].receiver].receipts;
            pg_array_i64(ids, pg_result_i64_or(rc, late[i].row, R_ID, 0));
        }
    }
}

/* The second look at donor d for its late receipts (see the file comment). */
static int late_look(ctl_region_set *set, ctl_region_view *v, const late_receipt *late,
                     size_t nlate, size_t d)
{
    pg_array ids;
    pg_array_init(&ids);
    late_ids(v, late, nlate, d, &ids);
    const char *p[] = {pg_array_text(&ids)};
    PGresult *res = NULL;
    int rc = ctl_db_query(set->r[d].conn, sql_late, 1, p, &res);
    pg_array_fini(&ids);
    if (rc != 0) {
        return rc;
    }
    for (size_t i = 0; i < nlate; i++) {
        if (late[i].donor != d) {
            continue;
        }
        const char *receiver = set->r[late[i].receiver].cfg.name;
        const PGresult *rcp = v->reg[late[i].receiver].receipts;
        int row = late[i].row;
        int j = find_xfer(res, pg_result_i64_or(rcp, row, R_ID, 0));
        const char *state = j >= 0 ? PQgetvalue(res, j, X_STATE) : "";
        long k = find_item(v, PQgetvalue(rcp, row, R_TENANT), PQgetvalue(rcp, row, R_ITEM));
        if (j >= 0 && strcmp(state, "refused") != 0 && same_transfer(res, j, receiver, rcp, row)) {
            if (k >= 0) {
                v->items[k].counted_twice +=
                    pg_result_i64_or(rcp, row, R_QTY, 0); /* sent after tD */
            }
        } else if (j < 0) {
            note_receipt(v, true, "the donor has no such transfer", receiver, rcp, row);
        } else {
            note_receipt(v, true, "the donor's row is refused or has other figures", receiver, rcp,
                         row);
        }
    }
    PQclear(res);
    return 0;
}

/* Receipts against donor rows: marks the answered rows, collects the late. */
static void match_receipts(ctl_region_set *set, ctl_region_view *v, bool **answered,
                           late_receipt *late, size_t *nlate)
{
    for (size_t r = 0; r < set->n; r++) {
        const PGresult *rc = v->reg[r].receipts;
        int n = PQntuples(rc) < CTL_VIEW_ROWS_MAX ? PQntuples(rc) : CTL_VIEW_ROWS_MAX;
        v->reg[r].receipts_applied = PQntuples(rc);
        for (int i = 0; i < n; i++) {
            int d = ctl_region_set_find(set, PQgetvalue(rc, i, R_FROM));
            if (d < 0) {
                note_receipt(v, false, "that region has no --config", set->r[r].cfg.name, rc, i);
                continue;
            }
            const PGresult *x = v->reg[d].xfers;
            int j = find_xfer(x, pg_result_i64_or(rc, i, R_ID, 0));
            if (j < 0) {
                late[(*nlate)++] = (late_receipt){(size_t)d, r, i};
            } else if (strcmp(PQgetvalue(x, j, X_STATE), "refused") == 0) {
                note_receipt(v, true, "the donor recorded it as refused", set->r[r].cfg.name, rc,
                             i);
            } else if (!same_transfer(x, j, set->r[r].cfg.name, rc, i)) {
                note_receipt(v, true, "the donor's row has other figures", set->r[r].cfg.name, rc,
                             i);
            } else {
                answered[d][j] = true;
            }
        }
    }
}

/* Donor rows 'sent' or 'received' that no applied receipt answers. */
static void count_in_flight(ctl_region_set *set, ctl_region_view *v, bool **answered)
{
    for (size_t d = 0; d < set->n; d++) {
        const PGresult *x = v->reg[d].xfers;
        int n = PQntuples(x) < CTL_VIEW_ROWS_MAX ? PQntuples(x) : CTL_VIEW_ROWS_MAX;
        for (int j = 0; j < n; j++) {
            const char *state = PQgetvalue(x, j, X_STATE);
            v->reg[d].xfers_sent += strcmp(state, "sent") == 0;
            v->reg[d].xfers_received += strcmp(state, "received") == 0;
            v->reg[d].xfers_refused += strcmp(state, "refused") == 0;
            if (strcmp(state, "refused") == 0 || answered[d][j]) {
                continue;
            }
            long k = find_item(v, PQgetvalue(x, j, X_TENANT), PQgetvalue(x, j, X_ITEM));
            if (ctl_region_set_find(set, PQgetvalue(x, j, X_TO)) < 0) {
                ctl_region_view_note(
                    v, false,
                    "region %s sent transfer %s (%s units of %s/%s) to region %s: no "
                    "--config for it",
                    set->r[d].cfg.name, PQgetvalue(x, j, X_ID), PQgetvalue(x, j, X_QTY),
                    PQgetvalue(x, j, X_TENANT), PQgetvalue(x, j, X_ITEM), PQgetvalue(x, j, X_TO));
                if (k >= 0) {
                    v->items[k].judged = false;
                }
            } else if (k >= 0) {
                v->items[k].in_flight += pg_result_i64_or(x, j, X_QTY, 0);
            }
        }
    }
}

static int match(ctl_region_set *set, ctl_region_view *v)
{
    size_t nreceipts = 0;
    bool **answered = calloc(set->n, sizeof *answered);
    int rc = answered != NULL ? 0 : ESC_ENOMEM;
    for (size_t r = 0; rc == 0 && r < set->n; r++) {
        if (PQntuples(v->reg[r].xfers) > CTL_VIEW_ROWS_MAX ||
            PQntuples(v->reg[r].receipts) > CTL_VIEW_ROWS_MAX) {
            ctl_region_view_note(v, false, "region %s has more than %d quota transfers or receipts",
                                 set->r[r].cfg.name, CTL_VIEW_ROWS_MAX);
        }
        nreceipts += (size_t)PQntuples(v->reg[r].receipts);
        answered[r] = calloc((size_t)PQntuples(v->reg[r].xfers) + 1, sizeof **answered);
        rc = answered[r] != NULL ? 0 : ESC_ENOMEM;
    }
    late_receipt *late = rc == 0 ? calloc(nreceipts + 1, sizeof *late) : NULL;
    rc = rc != 0 || late != NULL ? rc : ESC_ENOMEM;
    size_t nlate = 0;
    if (rc == 0) {
        match_receipts(set, v, answered, late, &nlate);
    }
    for (size_t d = 0; rc == 0 && d < set->n; d++) {
        bool any = false;
        for (size_t i = 0; i < nlate; i++) {
            any = any || late[i].donor == d;
        }
        rc = any ? late_look(set, v, late, nlate, d) : 0;
    }
    if (rc == 0) {
        count_in_flight(set, v, answered);
    }
    for (size_t r = 0; answered != NULL && r < set->n; r++) {
        free(answered[r]);
    }
    free(answered);
    free(late);
    return rc;
}

/* Region names of a global_items row ("eu us"): the listed regions must be
 * the regions that have the row. Returns false if one cannot be read. */
static bool check_listed(ctl_region_set *set, ctl_region_view *v, ctl_region_view_item *it,
                         const char *listed)
{
    char buf[CTL_REGIONS_MAX * (CTL_REGION_LEN_MAX + 1) + 1];
    bool judged = true;
    if (strlen(listed) >= sizeof buf) {
        ctl_region_view_note(v, true, "global item %s/%s lists more than %d regions", it->tenant,
                             it->item, CTL_REGIONS_MAX);
        return true;
    }
    memcpy(buf, listed, strlen(listed) + 1);
    bool seen[CTL_REGIONS_MAX] = {false};
    char *save = NULL;
    for (char *name = strtok_r(buf, " ", &save); name != NULL; name = strtok_r(NULL, " ", &save)) {
        int r = ctl_region_set_find(set, name);
        if (r < 0) {
            ctl_region_view_note(v, false,
                                 "global item %s/%s is split over region %s: no --config for it",
                                 it->tenant, it->item, name);
            judged = false;
        } else if (!it->fig[r].present) {
            ctl_region_view_note(
                v, true, "global item %s/%s is split over region %s, which has no such global item",
                it->tenant, it->item, name);
        } else {
            seen[r] = true;
        }
    }
    for (size_t r = 0; r < set->n; r++) {
        if (it->fig[r].present && !seen[r]) {
            ctl_region_view_note(v, true,
                                 "region %s has global item %s/%s, which is not split over it",
                                 set->r[r].cfg.name, it->tenant, it->item);
        }
    }
    return judged;
}

/* The global total at creation, as region f's row says: its global_total
 * less every change it knows of (migration 0010). */
static int64_t fig_base(const ctl_region_view_fig *f)
{
    return f->global_total - f->known_delta;
}

static void verdict_item(ctl_region_set *set, ctl_region_view *v, ctl_region_view_item *it)
{
    int64_t before = v->violations;
    const ctl_region_view_fig *first = NULL;
    size_t r0 = 0;
    for (size_t r = 0; r < set->n; r++) {
        const ctl_region_view_fig *f = &it->fig[r];
        if (!f->present) {
            continue;
        }
        if (first == NULL) {
            first = f;
            r0 = r;
        } else if (fig_base(f) != fig_base(first) || strcmp(f->regions, first->regions) != 0) {
            ctl_region_view_note(v, true,
                                 "global item %s/%s: region %s says created with %" PRId64
                                 " over '%s', region %s says %" PRId64 " over '%s'",
                                 it->tenant, it->item, set->r[r0].cfg.name, fig_base(first),
                                 first->regions, set->r[r].cfg.name, fig_base(f), f->regions);
        }
    }
    ESC_ASSERT(first != NULL);
    it->global_total = fig_base(first) + it->changes;
    it->judged = check_listed(set, v, it, first->regions) && it->judged;
    int64_t sum = it->quotas - it->pending + it->in_flight - it->counted_twice;
    if (it->judged && sum != it->global_total) {
        ctl_region_view_note(v, true,
                             "global item %s/%s: quotas %" PRId64 " - pending reduces %" PRId64
                             " + in flight %" PRId64 " - counted twice %" PRId64 " = %" PRId64
                             ", but the global total is %" PRId64,
                             it->tenant, it->item, it->quotas, it->pending, it->in_flight,
                             it->counted_twice, sum, it->global_total);
    }
    it->ok = it->judged && v->violations == before;
}

int ctl_region_view_read(ctl_region_set *set, const ctl_args *a, int what, FILE *out,
                         ctl_region_view *v)
{
    memset(v, 0, sizeof *v);
    v->nregions = set->n;
    v->reg = calloc(set->n, sizeof *v->reg);
    v->notes = calloc(CTL_VIEW_NOTES_MAX, sizeof *v->notes);
    int rc = v->reg != NULL && v->notes != NULL ? 0 : ESC_ENOMEM;
    for (size_t r = 0; rc == 0 && r < set->n; r++) {
        rc = read_region(&set->r[r], &v->reg[r], a, what, out);
    }
    rc = rc != 0 ? rc : build_items(set, v);
    if (rc == 0) {
        fill_figs(set, v);
    }
    if (rc == 0 && (what & CTL_VIEW_MATCH) != 0) {
        rc = match(set, v);
        for (size_t i = 0; rc == 0 && i < v->nitems; i++) {
            verdict_item(set, v, &v->items[i]);
        }
    }
    if (rc == ESC_ENOMEM) {
        fprintf(stderr, "escrowctl: out of memory\n");
    }
    if (rc != 0) {
        ctl_region_view_free(v);
    }
    return rc;
}

void ctl_region_view_free(ctl_region_view *v)
{
    for (size_t r = 0; v->reg != NULL && r < v->nregions; r++) {
        PQclear(v->reg[r].items);
        PQclear(v->reg[r].xfers);
        PQclear(v->reg[r].receipts);
    }
    free(v->reg);
    free(v->items);
    free(v->figs);
    free(v->notes);
    memset(v, 0, sizeof *v);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_create.c - see ctl_region_create.h.
 *
 * item create --global writes one region at a time, each in its own
 * transaction (there is no transaction across databases): first every
 * region is read (reachable? region_self? the item already there?) and any
 * conflict stops the command before anything is written; then the regions
 * that lack the item get it. The split is deterministic (ctl_quota_split),
 * so re-running the same command after a failure creates the same quotas in
 * the regions that were missing, and finds the others already done.
 */
#include "ctl_region_create.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_admin.h"
#include "ctl_db.h"
#include "ctl_item.h"
#include "ctl_json.h"
#include "ctl_quota.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-region */ "

static const char sql_claim[] =
    TAG "INSERT INTO region_self (region) VALUES ($1) ON CONFLICT DO NOTHING";
static const char sql_existing[] =
    TAG "SELECT g.tenant_id IS NOT NULL, g.global_total, array_to_string(g.regions, ' '), "
        "g.initial_quota FROM items i LEFT JOIN global_items g USING (tenant_id, item_id) "
        "WHERE i.tenant_id = $1 AND i.item_id = $2";
static const char sql_global[] =
    TAG "INSERT INTO global_items (tenant_id, item_id, global_total, regions, initial_quota) "
        "VALUES ($1, $2, $3, string_to_array($4, ' '), $5)";

typedef struct gcreate {
    int64_t quota[CTL_REGIONS_MAX];
    bool there[CTL_REGIONS_MAX]; /* already created as this global item */
    bool made[CTL_REGIONS_MAX];  /* created now */
    char regions[CTL_REGIONS_MAX * (CTL_REGION_LEN_MAX + 1) + 1]; /* sorted, ' ' separated */
} gcreate;

static int name_cmp(const void *x, const void *y)
{
    return strcmp(*(const char *const *)x, *(const char *const *)y);
}

/* The quotas (--quota or by shares) and the sorted region list. */
static int plan_quotas(const ctl_region_set *set, const ctl_args *a, gcreate *g)
{
    const char *names[CTL_REGIONS_MAX];
    uint32_t shares[CTL_REGIONS_MAX];
    for (size_t i = 0; i < set->n; i++) {
        names[i] = set->r[i].cfg.name;
        shares[i] = set->r[i].cfg.share;
    }
    if (a->nquota > 0) {
        for (size_t q = 0; q < a->nquota; q++) {
            if (ctl_region_set_find(set, a->quota[q].region) < 0) {
                fprintf(stderr,
                        "escrowctl: --quota names region '%s', which no --config "
                        "describes\n",
                        a->quota[q].region);
                return ESC_EINVAL;
            }
        }
        for (size_t i = 0; i < set->n; i++) {
            bool found = false;
            for (size_t q = 0; q < a->nquota; q++) {
                if (strcmp(a->quota[q].region, names[i]) == 0) {
                    g->quota[i] = a->quota[q].units;
                    found = true;
                }
            }
            if (!found) {
                fprintf(stderr, "escrowctl: --quota gives no quota to region '%s'\n", names[i]);
                return ESC_EINVAL;
            }
        }
    } else if (ctl_quota_split(a->spec.total, set->n, names, shares, g->quota) != 0) {
        fprintf(stderr, "escrowctl: cannot split %" PRId64 " over %zu regions\n", a->spec.total,
                set->n);
        return ESC_EINVAL;
    }
    qsort(names, set->n, sizeof names[0], name_cmp);
    size_t off = 0;
    for (size_t i = 0; i < set->n; i++) {
        off += (size_t)snprintf(g->regions + off, sizeof g->regions - off, "%s%s", i > 0 ? " " : "",
                                names[i]);
    }
    return 0;
}

/* Region i: absent (0, nothing to say), already this global item (there),
 * or a conflict (ESC_ECONFLICT after a sentence). */
static int preflight(const ctl_region *r, const ctl_args *a, gcreate *g, size_t i)
{
    const char *p[] = {a->spec.tenant, a->spec.item};
    PGresult *res = NULL;
    int rc = ctl_db_query(r->conn, sql_existing, 2, p, &res);
    if (rc != 0 || PQntuples(res) == 0) {
        PQclear(res);
        return rc;
    }
    int64_t gt = -1, iq = -1;
    bool global = pg_result_true(res, 0, 0);
    if (global) {
        ctl_db_i64(res, 0, 1, &gt);
        ctl_db_i64(res, 0, 3, &iq);
    }
    if (!global) {
        fprintf(stderr, "escrowctl: region %s: item %s/%s exists and is not a global item\n",
                r->cfg.name, a->spec.tenant, a->spec.item);
        rc = ESC_ECONFLICT;
    } else if (gt != a->spec.total || strcmp(pg_result_text_or(res, 0, 2, ""), g->regions) != 0) {
        fprintf(stderr,
                "escrowctl: region %s: global item %s/%s exists with global_total=%" PRId64
                " over '%s' (this command: %" PRId64 " over '%s')\n",
                r->cfg.name, a->spec.tenant, a->spec.item, gt, pg_result_text_or(res, 0, 2, ""),
                a->spec.total, g->regions);
        rc = ESC_ECONFLICT;
    } else if (iq != g->quota[i]) {
        fprintf(stderr,
                "escrowctl: region %s: global item %s/%s was created with quota %" PRId64
                ", this command would give it %" PRId64 " (re-run with the same split)\n",
                r->cfg.name, a->spec.tenant, a->spec.item, iq, g->quota[i]);
        rc = ESC_ECONFLICT;
    } else {
        g->there[i] = true;
    }
    PQclear(res);
    return rc;
}

/* One region's transaction: region_self, the item (ctl_item_insert), the
 * global_items row. */
static int create_in(ctl_region *r, const ctl_args *a, const gcreate *g, size_t i)
{
    ctl_item_spec spec = a->spec;
    spec.total = g->quota[i];
    char gt[24], q[24];
    snprintf(gt, sizeof gt, "%" PRId64, a->spec.total);
    snprintf(q, sizeof q, "%" PRId64, g->quota[i]);
    const char *p_claim[] = {r->cfg.name};
    const char *p_global[] = {spec.tenant, spec.item, gt, g->regions, q};
    char self[CTL_REGION_LEN_MAX + 1] = "";
    PGresult *segs = NULL;
    int rc = ctl_db_begin(r->conn, "ISOLATION LEVEL READ COMMITTED");
    rc = rc != 0 ? rc : ctl_db_exec(r->conn, sql_claim, 1, p_claim);
    rc = rc != 0 ? rc : ctl_region_set_self(r->conn, self, sizeof self);
    if (rc == 0 && strcmp(self, r->cfg.name) != 0) {
        fprintf(stderr, "escrowctl: region %s: its database was just claimed by region '%s'\n",
                r->cfg.name, self);
        rc = ESC_ECONFLICT;
    }
    rc = rc != 0 ? rc : ctl_item_insert(r->conn, &spec, &segs);
    rc = rc != 0 ? rc : ctl_db_exec(r->conn, sql_global, 5, p_global);
    rc = rc != 0 ? rc : ctl_db_commit(r->conn);
    if (rc != 0) {
        ctl_db_rollback(r->conn);
    }
    PQclear(segs);
    return rc;
}

/* After a failure midway: which regions have the item now. */
static void report_partial(const ctl_region_set *set, const ctl_args *a, const gcreate *g,
                           size_t failed)
{
    char have[sizeof g->regions] = "", lack[sizeof g->regions] = "";
    for (size_t i = 0; i < set->n; i++) {
        char *dst = g->there[i] || g->made[i] ? have : lack;
        size_t off = strlen(dst);
        snprintf(dst + off, sizeof have - off, "%s%s", off > 0 ? " " : "", set->r[i].cfg.name);
    }
    fprintf(stderr,
            "escrowctl: region %s failed: global item %s/%s now exists in: %s; not in: %s. "
            "Re-running the same command completes it.\n",
            set->r[failed].cfg.name, a->spec.tenant, a->spec.item, have[0] ? have : "(none)", lack);
}

static void print_gcreate(const ctl_region_set *set, const ctl_args *a, const gcreate *g, FILE *out)
{
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", a->spec.tenant);
        ctl_json_str(&j, "item", a->spec.item);
        ctl_json_i64(&j, "global_total", a->spec.total);
        ctl_json_begin_arr(&j, "regions");
        for (size_t i = 0; i < set->n; i++) {
            ctl_json_begin_obj(&j, NULL);
            ctl_json_str(&j, "region", set->r[i].cfg.name);
            ctl_json_i64(&j, "quota", g->quota[i]);
            ctl_json_bool(&j, "created", g->made[i]);
            ctl_json_end_obj(&j);
        }
        ctl_json_end_arr(&j);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
        return;
    }
    for (size_t i = 0; i < set->n; i++) {
        fprintf(out, "region %-12s %s %s/%s quota=%" PRId64 " segments=%d\n", set->r[i].cfg.name,
                g->made[i] ? "created" : "already has", a->spec.tenant, a->spec.item, g->quota[i],
                a->spec.segments);
    }
    fprintf(out, "global item %s/%s global_total=%" PRId64 " over %zu regions (%s)\n",
            a->spec.tenant, a->spec.item, a->spec.total, set->n, g->regions);
}

/* Best effort, as item create: each region's coordinator re-reads its catalog. */
static void reload_all(const ctl_region_set *set, const ctl_args *a, const gcreate *g)
{
    ctl_args *b = malloc(sizeof *b);
    if (b == NULL) {
        return;
    }
    *b = *a;
    for (size_t i = 0; i < set->n; i++) {
        if (g->made[i]) {
            snprintf(b->coordinator, sizeof b->coordinator, "%s", set->r[i].cfg.coordinator);
            ctl_admin_reload(b);
        }
    }
    free(b);
}

int ctl_region_create(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    gcreate g;
    memset(&g, 0, sizeof g);
    int rc = plan_quotas(set, a, &g);
    rc = rc != 0 ? rc : ctl_region_set_connect(set);
    int conflict = 0;
    for (size_t i = 0; rc == 0 && i < set->n; i++) {
        int c = preflight(&set->r[i], a, &g, i);
        conflict = conflict != 0 ? conflict : c;
    }
    if (rc == 0 && conflict != 0) {
        fprintf(stderr, "escrowctl: nothing was written\n");
        return conflict;
    }
    for (size_t i = 0; rc == 0 && i < set->n; i++) {
        if (g.there[i]) {
            continue;
        }
        rc = create_in(&set->r[i], a, &g, i);
        if (rc != 0) {
            report_partial(set, a, &g, i);
        } else {
            g.made[i] = true;
        }
    }
    if (rc != 0) {
        return rc;
    }
    print_gcreate(set, a, &g, out);
    reload_all(set, a, &g);
    return 0;
}

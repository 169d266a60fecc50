/*
 * ctl_region.c - see ctl_region.h.
 *
 * item create --global writes one region at a time, each in its own
 * transaction (there is no transaction across databases): first every
 * region is read (reachable? region_self? the item already there?) and any
 * conflict stops the command before anything is written; then the regions
 * that lack the item get it. The split is deterministic (ctl_quota_split),
 * so re-running the same command after a failure creates the same quotas in
 * the regions that were missing, and finds the others already done.
 */
#include "ctl_region.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_admin.h"
#include "ctl_db.h"
#include "ctl_item.h"
#include "ctl_json.h"
#include "ctl_num.h"
#include "ctl_region_view.h"
#include "ctl_rpc.h"
#include "ctl_status.h"
#include "escrow_errors.h"
#include "log.h"
#include "wire.h"

#define TAG "/* escrow:ctl-region */ "

static const char sql_has_self[] = TAG "SELECT to_regclass('region_self') IS NOT NULL";
static const char sql_self[] = TAG "SELECT COALESCE((SELECT region FROM region_self), '')";
static const char sql_claim[] =
    TAG "INSERT INTO region_self (region) VALUES ($1) ON CONFLICT DO NOTHING";
static const char sql_existing[] =
    TAG "SELECT g.tenant_id IS NOT NULL, g.global_total, array_to_string(g.regions, ' '), "
        "g.initial_quota FROM items i LEFT JOIN global_items g USING (tenant_id, item_id) "
        "WHERE i.tenant_id = $1 AND i.item_id = $2";
static const char sql_global[] =
    TAG "INSERT INTO global_items (tenant_id, item_id, global_total, regions, initial_quota) "
        "VALUES ($1, $2, $3, string_to_array($4, ' '), $5)";
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

bool ctl_region_cmd(const ctl_args *a)
{
    return a->global || a->cmd == CTL_CMD_QUOTA_SHOW || a->cmd == CTL_CMD_QUOTA_MOVE ||
           a->cmd == CTL_CMD_REGIONS;
}

int ctl_region_find(const ctl_region_set *set, const char *name)
{
    for (size_t i = 0; i < set->n; i++) {
        if (strcmp(set->r[i].cfg.name, name) == 0) {
            return (int)i;
        }
    }
    return -1;
}

int ctl_region_set_load(const ctl_args *a, ctl_region_set *set)
{
    if (a->nconfig < 1) {
        fprintf(stderr, "escrowctl: this command needs --config FILE, one per region\n");
        return ESC_EINVAL;
    }
    ctl_region *r = calloc((size_t)a->nconfig, sizeof *r);
    if (r == NULL) {
        fprintf(stderr, "escrowctl: out of memory\n");
        return ESC_EINVAL;
    }
    for (int i = 0; i < a->nconfig; i++) {
        char err[REGION_ERR_LEN];
        if (region_cfg_load(a->config[i], &r[i].cfg, err, sizeof err) != 0) {
            fprintf(stderr, "escrowctl: %s\n", err);
            free(r);
            return ESC_EINVAL;
        }
        for (int j = 0; j < i; j++) {
            if (strcmp(r[j].cfg.name, r[i].cfg.name) == 0) {
                fprintf(stderr, "escrowctl: %s and %s both describe region '%s'\n", r[j].cfg.path,
                        r[i].cfg.path, r[i].cfg.name);
                free(r);
                return ESC_EINVAL;
            }
        }
    }
    set->n = (size_t)a->nconfig;
    set->r = r;
    return 0;
}

void ctl_region_set_free(ctl_region_set *set)
{
    for (size_t i = 0; set->r != NULL && i < set->n; i++) {
        ctl_db_close(set->r[i].conn);
    }
    free(set->r);
    set->r = NULL;
    set->n = 0;
}

/* Connects to region r and reads region_self. */
static int region_open(ctl_region *r)
{
    PGresult *res = NULL;
    int rc = ctl_db_open(r->cfg.dsn, &r->conn);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: region %s (%s): its database is not reachable\n", r->cfg.name,
                r->cfg.path);
        return rc;
    }
    rc = ctl_db_query(r->conn, sql_has_self, 0, NULL, &res);
    if (rc == 0 && !ctl_db_bool(res, 0, 0)) {
        fprintf(stderr,
                "escrowctl: region %s: its database has no regions schema (run "
                "'escrowctl migrate' on it)\n",
                r->cfg.name);
        rc = ESC_EINVAL;
    }
    PQclear(res);
    res = NULL;
    rc = rc != 0 ? rc : ctl_db_query(r->conn, sql_self, 0, NULL, &res);
    if (rc == 0) {
        snprintf(r->self, sizeof r->self, "%s", ctl_db_str(res, 0, 0));
    }
    PQclear(res);
    return rc;
}

int ctl_region_set_connect(ctl_region_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        ctl_region *r = &set->r[i];
        int rc = region_open(r);
        if (rc != 0) {
            return rc;
        }
        if (r->self[0] != '\0' && strcmp(r->self, r->cfg.name) != 0) {
            fprintf(stderr,
                    "escrowctl: region %s (%s): its database belongs to region '%s' "
                    "(region_self); nothing was done\n",
                    r->cfg.name, r->cfg.path, r->self);
            return ESC_ECONFLICT;
        }
    }
    return 0;
}

/* ---- item create --global ---- */

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
            if (ctl_region_find(set, a->quota[q].region) < 0) {
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
    bool global = ctl_db_bool(res, 0, 0);
    if (global) {
        ctl_db_i64(res, 0, 1, &gt);
        ctl_db_i64(res, 0, 3, &iq);
    }
    if (!global) {
        fprintf(stderr, "escrowctl: region %s: item %s/%s exists and is not a global item\n",
                r->cfg.name, a->spec.tenant, a->spec.item);
        rc = ESC_ECONFLICT;
    } else if (gt != a->spec.total || strcmp(ctl_db_str(res, 0, 2), g->regions) != 0) {
        fprintf(stderr,
                "escrowctl: region %s: global item %s/%s exists with global_total=%" PRId64
                " over '%s' (this command: %" PRId64 " over '%s')\n",
                r->cfg.name, a->spec.tenant, a->spec.item, gt, ctl_db_str(res, 0, 2), a->spec.total,
                g->regions);
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
    PGresult *self = NULL, *segs = NULL;
    int rc = ctl_db_begin(r->conn, "ISOLATION LEVEL READ COMMITTED");
    rc = rc != 0 ? rc : ctl_db_exec(r->conn, sql_claim, 1, p_claim);
    rc = rc != 0 ? rc : ctl_db_query(r->conn, sql_self, 0, NULL, &self);
    if (rc == 0 && strcmp(ctl_db_str(self, 0, 0), r->cfg.name) != 0) {
        fprintf(stderr, "escrowctl: region %s: its database was just claimed by region '%s'\n",
                r->cfg.name, ctl_db_str(self, 0, 0));
        rc = ESC_ECONFLICT;
    }
    rc = rc != 0 ? rc : ctl_item_insert(r->conn, &spec, &segs);
    rc = rc != 0 ? rc : ctl_db_exec(r->conn, sql_global, 5, p_global);
    rc = rc != 0 ? rc : ctl_db_commit(r->conn);
    if (rc != 0) {
        ctl_db_rollback(r->conn);
    }
    PQclear(self);
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

static int create_global(ctl_region_set *set, const ctl_args *a, FILE *out)
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

/* ---- quota show, status --global ---- */

static void json_fig(ctl_json *j, const char *region, const ctl_view_fig *f)
{
    ctl_json_begin_obj(j, NULL);
    ctl_json_str(j, "region", region);
    ctl_json_str(j, "state", f->state);
    ctl_json_i64(j, "quota", f->quota);
    ctl_json_i64(j, "available", f->available);
    ctl_json_i64(j, "held", f->held);
    ctl_json_i64(j, "sold", f->sold);
    ctl_json_i64(j, "unallocated", f->unallocated);
    ctl_json_i64(j, "in_flight_out", f->sent_out);
    ctl_json_i64(j, "floor", f->floor);
    ctl_json_end_obj(j);
}

static void json_item_totals(ctl_json *j, const ctl_view_item *it)
{
    ctl_json_i64(j, "global_total", it->global_total);
    ctl_json_i64(j, "quotas", it->quotas);
    ctl_json_i64(j, "available", it->available);
    ctl_json_i64(j, "held", it->held);
    ctl_json_i64(j, "sold", it->sold);
    ctl_json_i64(j, "in_flight", it->in_flight - it->counted_twice);
}

static void print_show_json(const ctl_region_set *set, const ctl_view *v, FILE *out)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_begin_arr(&j, "items");
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_view_item *it = &v->items[i];
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", it->tenant);
        ctl_json_str(&j, "item", it->item);
        json_item_totals(&j, it);
        ctl_json_begin_arr(&j, "regions");
        for (size_t r = 0; r < set->n; r++) {
            if (it->fig[r].present) {
                json_fig(&j, set->r[r].cfg.name, &it->fig[r]);
            }
        }
        ctl_json_end_arr(&j);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_bool(&j, "more", v->more);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static void print_show(const ctl_region_set *set, const ctl_view *v, FILE *out)
{
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_view_item *it = &v->items[i];
        int64_t sent = 0;
        fprintf(out, "%s/%s global_total=%" PRId64 "\n", it->tenant, it->item, it->global_total);
        fprintf(out, "  %-12s %10s %10s %8s %10s %11s %13s %8s\n", "region", "quota", "available",
                "held", "sold", "unallocated", "in_flight_out", "floor");
        for (size_t r = 0; r < set->n; r++) {
            const ctl_view_fig *f = &it->fig[r];
            if (!f->present) {
                fprintf(out, "  %-12s (no such global item)\n", set->r[r].cfg.name);
                continue;
            }
            sent += f->sent_out;
            fprintf(out,
                    "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %11" PRId64
                    " %13" PRId64 " %8" PRId64 "\n",
                    set->r[r].cfg.name, f->quota, f->available, f->held, f->sold, f->unallocated,
                    f->sent_out, f->floor);
        }
        fprintf(out,
                "  %-12s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %11s %13" PRId64
                " %8s\n",
                "(global)", it->quotas, it->available, it->held, it->sold, "", sent, "");
    }
    if (v->nitems == 0) {
        fprintf(out, "no global items\n");
    }
    if (v->more) {
        fprintf(out, "(only the first %d global items of each region are shown)\n",
                CTL_STATUS_ITEMS_MAX);
    }
}

static int quota_show(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    ctl_view v;
    int rc = ctl_region_set_connect(set);
    rc = rc != 0 ? rc : ctl_view_read(set, a, 0, NULL, &v);
    if (rc != 0) {
        return rc;
    }
    if (a->json) {
        print_show_json(set, &v, out);
    } else {
        print_show(set, &v, out);
    }
    ctl_view_free(&v);
    return 0;
}

static void print_global_table(const ctl_view *v, FILE *out)
{
    fprintf(out, "%-10s %-16s %10s %10s %8s %10s %9s %12s %s\n", "tenant", "item", "quotas", "sold",
            "held", "available", "in_flight", "global_total", "ok");
    for (size_t i = 0; i < v->nitems; i++) {
        const ctl_view_item *it = &v->items[i];
        fprintf(out,
                "%-10s %-16s %10" PRId64 " %10" PRId64 " %8" PRId64 " %10" PRId64 " %9" PRId64
                " %12" PRId64 " %s\n",
                it->tenant, it->item, it->quotas, it->sold, it->held, it->available,
                it->in_flight - it->counted_twice, it->global_total,
                it->ok ? "ok" : (it->judged ? "VIOLATED" : "CANNOT-JUDGE"));
    }
}

/* Each region's status (own snapshot each), then the global table. */
static int status_global(ctl_region_set *set, const ctl_args *a, FILE *out)
{
    int rc = ctl_region_set_connect(set);
    for (size_t r = 0; rc == 0 && !a->json && r < set->n; r++) {
        fprintf(out, "== region %s (%s)\n", set->r[r].cfg.name, set->r[r].cfg.path);
        rc = ctl_status(set->r[r].conn, a, out);
        rc = rc == ESC_EUNKNOWN_ITEM ? 0 : rc;
    }
    ctl_view v;
    rc = rc != 0 ? rc : ctl_view_read(set, a, CTL_VIEW_MATCH, NULL, &v);
    if (rc != 0) {
        return rc;
    }
    if (a->json) {
        print_show_json(set, &v, out);
    } else {
        fprintf(out, "== global items\n");
        print_global_table(&v, out);
    }
    ctl_view_free(&v);
    return 0;
}

/* ---- check --global ---- */

/* region_self must name the file's region once the region holds anything. */
static void check_self(const ctl_region_set *set, ctl_view *v)
{
    for (size_t r = 0; r < set->n; r++) {
        const ctl_region *g = &set->r[r];
        if (strcmp(g->self, g->cfg.name) == 0) {
            continue;
        }
        if (g->self[0] != '\0') {
            ctl_view_note(v, true, "region %s: its database belongs to region '%s' (region_self)",
                          g->cfg.name, g->self);
        }
    }
}

static void print_check_json(const ctl_region_set *set, const ctl_view *v, const char *verdict,
                             FILE *out)
{
    ctl_json j;
    ctl_json_init(&j, out);
    ctl_json_begin_obj(&j, NULL);
    ctl_json_str(&j, "global", verdict);
    ctl_json_begin_arr(&j, "regions");
    for (size_t r = 0; r < set->n; r++) {
        const ctl_view_region *vr = &v->reg[r];
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "region", set->r[r].cfg.name);
        ctl_json_str(&j, "region_self", set->r[r].self);
        ctl_json_str(&j, "conservation",
                     vr->local_items_violated + vr->local_segments_violated == 0 ? "ok"
                                                                                 : "VIOLATED");
        ctl_json_i64(&j, "items_violated", vr->local_items_violated);
        ctl_json_i64(&j, "segments_violated", vr->local_segments_violated);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "items");
    for (size_t i = 0; i < v->nitems; i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", v->items[i].tenant);
        ctl_json_str(&j, "item", v->items[i].item);
        json_item_totals(&j, &v->items[i]);
        ctl_json_bool(&j, "ok", v->items[i].ok);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_begin_arr(&j, "notes");
    for (size_t i = 0; i < v->nnotes; i++) {
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "kind", v->notes[i].violation ? "violation" : "cannot_judge");
        ctl_json_str(&j, "message", v->notes[i].text);
        ctl_json_end_obj(&j);
    }
    ctl_json_end_arr(&j);
    ctl_json_end_obj(&j);
    ctl_json_finish(&j);
}

static void print_check(const ctl_region_set *set, const ctl_view *v, const char *verdict,
                        FILE *out)
{
    int64_t sent = 0, received = 0, refused = 0, applied = 0;
    fprintf(out, "== global\n");
    for (size_t i = 0; i < v->nnotes; i++) {
        fprintf(out, "%s %s\n", v->notes[i].violation ? "VIOLATION" : "CANNOT JUDGE",
                v->notes[i].text);
    }
    if ((size_t)(v->violations + v->cannot_judge) > v->nnotes) {
        fprintf(out, "(only the first %d are shown)\n", CTL_VIEW_NOTES_MAX);
    }
    for (size_t r = 0; r < set->n; r++) {
        sent += v->reg[r].xfers_sent;
        received += v->reg[r].xfers_received;
        refused += v->reg[r].xfers_refused;
        applied += v->reg[r].receipts_applied;
    }
    print_global_table(v, out);
    fprintf(out,
            "checked %zu regions, %zu global items, quota transfers: %" PRId64 " sent, %" PRId64
            " received, %" PRId64 " refused; %" PRId64 " receipts applied\n",
            set->n, v->nitems, sent, received, refused, applied);
    fprintf(out, "global=%s\n", verdict);
}

int ctl_region_check(ctl_region_set *set, const ctl_args *a, FILE *out, bool *violated)
{
    for (size_t r = 0; r < set->n; r++) {
        int rc = region_open(&set->r[r]);
        if (rc != 0) {
            fprintf(stderr, "escrowctl: cannot judge: region %s cannot be read\n",
                    set->r[r].cfg.name);
            return ESC_EUNAVAILABLE;
        }
    }
    ctl_view v;
    int rc = ctl_view_read(set, a, CTL_VIEW_MATCH | CTL_VIEW_CHECK, a->json ? NULL : out, &v);
    if (rc != 0) {
        return rc;
    }
    check_self(set, &v);
    bool local_bad = false;
    for (size_t r = 0; r < set->n; r++) {
        local_bad =
            local_bad || v.reg[r].local_items_violated > 0 || v.reg[r].local_segments_violated > 0;
    }
    const char *verdict = v.violations > 0 || local_bad ? "VIOLATED"
                          : v.cannot_judge > 0          ? "CANNOT-JUDGE"
                                                        : "ok";
    if (a->json) {
        print_check_json(set, &v, verdict, out);
    } else {
        print_check(set, &v, verdict, out);
    }
    *violated = v.violations > 0 || local_bad;
    rc = !*violated && v.cannot_judge > 0 ? ESC_EUNAVAILABLE : 0;
    ctl_view_free(&v);
    return rc;
}

/* ---- quota move, regions ---- */

/* One QuotaReq round trip to url; the reply's first item lands in *item. */
static int quota_call(const char *url, const char *tenant, const wire_quota *q, const char *item_id,
                      int64_t qty, int timeout_ms, wire_reply *rep, wire_quota_item *item,
                      bool *sent)
{
    unsigned char frame[1024];
    size_t len = 0;
    uint64_t corr = ctl_rpc_corr_id();
    int rc = wire_encode_quota(corr, tenant, q, item_id, qty, frame, sizeof frame, &len);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot encode the request: %s\n", esc_strerror(rc));
        return rc;
    }
    memset(rep, 0, sizeof *rep);
    rep->quota = item;
    rep->quota_cap = 1;
    return ctl_rpc_call(url, corr, frame, len, timeout_ms, rep, sent);
}

static void print_move(const ctl_args *a, const char *url, const wire_reply *rep, FILE *out)
{
    const char *msg = ctl_rpc_message(rep);
    const wire_quota_item *q = rep->nquota > 0 ? &rep->quota[0] : NULL;
    if (a->json) {
        ctl_json j;
        ctl_rpc_json_begin(&j, out, rep);
        ctl_json_str(&j, "region", rep->region);
        if (q != NULL) {
            ctl_json_begin_obj(&j, "donor");
            ctl_json_i64(&j, "quota", q->quota);
            ctl_json_i64(&j, "unused", q->unused);
            ctl_json_i64(&j, "in_flight", q->in_flight);
            ctl_json_i64(&j, "floor", q->floor);
            ctl_json_end_obj(&j);
        }
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    }
    if (rep->status != 0) {
        fprintf(stderr, "escrowctl: the coordinator of region %s at %s refused: %s (%s)\n",
                a->from_region, url, msg, esc_err_name(rep->status));
    } else if (!a->json) {
        fprintf(out, "%s\n", msg);
    }
    if (!a->json && q != NULL) {
        fprintf(rep->status != 0 ? stderr : out,
                "region %s now: quota=%" PRId64 " unused=%" PRId64 " in_flight=%" PRId64
                " floor=%" PRId64 "\n",
                a->from_region, q->quota, q->unused, q->in_flight, q->floor);
    }
}

static int quota_move(ctl_region_set *set, const ctl_args *a, FILE *out, bool *refused)
{
    int d = ctl_region_find(set, a->from_region);
    if (d < 0) {
        fprintf(stderr, "escrowctl: --from %s: no --config describes that region\n",
                a->from_region);
        return ESC_EINVAL;
    }
    const region_cfg *c = &set->r[d].cfg;
    if (region_cfg_peer(c, a->to_region) == NULL) {
        fprintf(stderr, "escrowctl: --to %s: region %s has no such peer (%s [peers])\n",
                a->to_region, c->name, c->path);
        return ESC_EINVAL;
    }
    /* --coordinator stands for the region's endpoint when there is one region */
    const char *url = set->n == 1 && a->coordinator_given ? a->coordinator : c->coordinator;
    wire_quota *q = calloc(1, sizeof *q);
    if (q == NULL) {
        return ESC_ENOMEM;
    }
    q->kind = WIRE_QUOTA_MOVE;
    snprintf(q->to_region, sizeof q->to_region, "%s", a->to_region);
    wire_reply rep;
    wire_quota_item item;
    bool sent = false;
    int rc = quota_call(url, a->tenant, q, a->item, a->qty, a->timeout_ms, &rep, &item, &sent);
    free(q);
    if (rc == ESC_ETIMEDOUT) {
        char who[CTL_REGION_LEN_MAX + 32];
        snprintf(who, sizeof who, "the coordinator of region %s", c->name);
        ctl_rpc_no_answer(who, url, a->timeout_ms, sent, true);
        return rc;
    }
    if (rc != 0) {
        fprintf(stderr, "escrowctl: cannot reach the coordinator of region %s at %s: %s\n", c->name,
                url, esc_strerror(rc));
        return rc;
    }
    print_move(a, url, &rep, out);
    if (rep.status != 0) {
        *refused = true;
        return rep.status;
    }
    return 0;
}

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
    wire_reply rep;
    wire_quota_item item;
    bool sent = false;
    int ms = a->timeout_ms < CTL_REGION_PROBE_MS_MAX ? a->timeout_ms : CTL_REGION_PROBE_MS_MAX;
    int rc = quota_call(r->cfg.coordinator, NULL, q, NULL, 0, ms, &rep, &item, &sent);
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
    if (region_open(r) == 0 && ctl_db_query(r->conn, sql_counts, 0, NULL, &res) == 0) {
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
static int regions(ctl_region_set *set, const ctl_args *a, FILE *out)
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

int ctl_region_run(const ctl_args *a, FILE *out, bool *violated, bool *refused)
{
    ctl_region_set set = {0, NULL};
    int rc = ctl_region_set_load(a, &set);
    if (rc != 0) {
        return rc;
    }
    switch (a->cmd) {
    case CTL_CMD_ITEM_CREATE:
        rc = create_global(&set, a, out);
        break;
    case CTL_CMD_QUOTA_SHOW:
        rc = quota_show(&set, a, out);
        break;
    case CTL_CMD_QUOTA_MOVE:
        rc = quota_move(&set, a, out, refused);
        break;
    case CTL_CMD_REGIONS:
        rc = regions(&set, a, out);
        break;
    case CTL_CMD_STATUS:
        rc = status_global(&set, a, out);
        break;
    case CTL_CMD_CHECK:
        rc = ctl_region_check(&set, a, out, violated);
        break;
    default:
        ESC_ASSERT(!"ctl_region_run called for another command");
        rc = ESC_EINTERNAL;
        break;
    }
    ctl_region_set_free(&set);
    return rc;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_region_set.c - see ctl_region_set.h.
 */
#include "ctl_region_set.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "escrow_errors.h"
#include "pg_result.h"

#define TAG "/* escrow:ctl-region */ "

static const char sql_has_self[] = TAG "SELECT to_regclass('region_self') IS NOT NULL";
static const char sql_self[] = TAG "SELECT COALESCE((SELECT region FROM region_self), '')";

int ctl_region_set_find(const ctl_region_set *set, const char *name)
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

int ctl_region_set_self(PGconn *conn, char *self, size_t cap)
{
    PGresult *res = NULL;
    int rc = ctl_db_query(conn, sql_self, 0, NULL, &res);
    if (rc == 0) {
        snprintf(self, cap, "%s", pg_result_text_or(res, 0, 0, ""));
    }
    PQclear(res);
    return rc;
}

int ctl_region_set_open(ctl_region *r)
{
    PGresult *res = NULL;
    int rc = ctl_db_open(r->cfg.dsn, &r->conn);
    if (rc != 0) {
        fprintf(stderr, "escrowctl: region %s (%s): its database is not reachable\n", r->cfg.name,
                r->cfg.path);
        return rc;
    }
    rc = ctl_db_query(r->conn, sql_has_self, 0, NULL, &res);
    if (rc == 0 && !pg_result_true(res, 0, 0)) {
        fprintf(stderr,
                "escrowctl: region %s: its database has no regions schema (run "
                "'escrowctl migrate' on it)\n",
                r->cfg.name);
        rc = ESC_EINVAL;
    }
    PQclear(res);
    return rc != 0 ? rc : ctl_region_set_self(r->conn, r->self, sizeof r->self);
}

int ctl_region_set_connect(ctl_region_set *set)
{
    for (size_t i = 0; i < set->n; i++) {
        ctl_region *r = &set->r[i];
        int rc = ctl_region_set_open(r);
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

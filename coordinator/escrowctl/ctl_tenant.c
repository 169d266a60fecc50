/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_tenant.c - see ctl_tenant.h.
 */
#include "ctl_tenant.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "ctl_db.h"
#include "ctl_exit.h"
#include "ctl_json.h"
#include "esc_limits.h"
#include "pg_result.h"
#include "ratelim.h"
#include "region_cfg.h"
#include "wire.h"

#define TAG "/* escrow:ctl-tenant */ "

typedef struct tenant_args {
    const char *dsn, *config, *tenant;
    const char *rate;       /* NULL = unchanged; "default" = the node's */
    const char *live_holds; /* NULL = unchanged; "default" = the node's */
    bool json;
} tenant_args;

/* The positional words, options and their values skipped. */
static int words(int argc, char **argv, const char *w[3])
{
    int n = 0;
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--", 2) == 0) {
            i += strchr(argv[i], '=') == NULL && strcmp(argv[i], "--json") != 0;
            continue;
        }
        if (n < 3) {
            w[n] = argv[i];
        }
        n++;
    }
    return n;
}

bool ctl_tenant_is_cmd(int argc, char **argv)
{
    const char *w[3] = {NULL, NULL, NULL};
    return words(argc, argv, w) >= 2 && strcmp(w[0], "tenant") == 0 && strcmp(w[1], "limits") == 0;
}

static int parse(int argc, char **argv, tenant_args *a)
{
    memset(a, 0, sizeof *a);
    a->dsn = getenv("ESCROW_DSN");
    const char *w[3] = {NULL, NULL, NULL};
    if (words(argc, argv, w) != 3) {
        fprintf(stderr,
                "escrowctl: usage: escrowctl tenant limits TENANT [--rate N[:BURST]|default] "
                "[--live-holds N|default]\n");
        return -1;
    }
    a->tenant = w[2];
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char **dst = strcmp(o, "--dsn") == 0          ? &a->dsn
                           : strcmp(o, "--config") == 0     ? &a->config
                           : strcmp(o, "--rate") == 0       ? &a->rate
                           : strcmp(o, "--live-holds") == 0 ? &a->live_holds
                                                            : NULL;
        if (dst != NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "escrowctl: %s needs a value\n", o);
                return -1;
            }
            *dst = argv[++i];
        } else if (strcmp(o, "--json") == 0) {
            a->json = true;
        } else if (strncmp(o, "--", 2) == 0) {
            fprintf(stderr, "escrowctl: %s is not an option of tenant limits\n", o);
            return -1;
        }
    }
    return 0;
}

/* "default" -> NULL texts; else the checked numbers as text. */
static int check_values(const tenant_args *a, char rate[16], char burst[16], char holds[16],
                        const char *v[3])
{
    v[0] = v[1] = v[2] = NULL;
    if (a->rate != NULL && strcmp(a->rate, "default") != 0) {
        uint32_t r, b;
        if (ratelim_parse(a->rate, &r, &b) != 0) {
            fprintf(stderr, "escrowctl: --rate takes N or N:BURST (0..1000000; 0 = no limit) "
                            "or default\n");
            return -1;
        }
        snprintf(rate, 16, "%u", r);
        snprintf(burst, 16, "%u", b);
        v[0] = rate;
        v[1] = burst;
    }
    if (a->live_holds != NULL && strcmp(a->live_holds, "default") != 0) {
        char *end;
        errno = 0;
        long h = strtol(a->live_holds, &end, 10);
        if (errno != 0 || end == a->live_holds || *end != '\0' || h < 0 ||
            h > (long)ESC_LIVE_HOLDS_MAX) {
            fprintf(stderr,
                    "escrowctl: --live-holds takes 0..%u (0 = only the node's maximum) "
                    "or default\n",
                    ESC_LIVE_HOLDS_MAX);
            return -1;
        }
        snprintf(holds, 16, "%ld", h);
        v[2] = holds;
    }
    return 0;
}

static void print_limits(const tenant_args *a, const PGresult *r, FILE *out)
{
    const char *rate = PQgetisnull(r, 0, 0) ? NULL : PQgetvalue(r, 0, 0);
    const char *burst = PQgetisnull(r, 0, 1) ? NULL : PQgetvalue(r, 0, 1);
    const char *holds = PQgetisnull(r, 0, 2) ? NULL : PQgetvalue(r, 0, 2);
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_str(&j, "tenant", a->tenant);
        ctl_json_num(&j, "rate_per_s", rate ? rate : "null");
        ctl_json_num(&j, "rate_burst", burst ? burst : "null");
        ctl_json_num(&j, "live_holds_max", holds ? holds : "null");
        ctl_json_finish(&j);
        return;
    }
    fprintf(out, "tenant %s: rate %s%s%s%s, live holds %s (per node)\n", a->tenant,
            rate ? rate : "the node's default", rate ? " requests/s" : "",
            burst && strcmp(burst, "0") != 0 ? " burst " : "",
            burst && strcmp(burst, "0") != 0 ? burst : "", holds ? holds : "the node's default");
}

static int run(PGconn *db, const tenant_args *a, FILE *out)
{
    char rate[16], burst[16], holds[16];
    const char *v[3];
    if (check_values(a, rate, burst, holds, v) != 0) {
        return CTL_EXIT_USAGE;
    }
    const char *p[6] = {a->tenant, a->rate ? "t" : "f",       v[0],
                        v[1],      a->live_holds ? "t" : "f", v[2]};
    PGresult *r = NULL;
    if (ctl_db_query(db,
                     TAG "UPDATE tenants SET "
                         "rate_per_s = CASE WHEN $2::bool THEN $3::int ELSE rate_per_s END, "
                         "rate_burst = CASE WHEN $2::bool THEN $4::int ELSE rate_burst END, "
                         "live_holds_max = CASE WHEN $5::bool THEN $6::int ELSE live_holds_max END "
                         "WHERE tenant_id = $1 RETURNING rate_per_s, rate_burst, live_holds_max",
                     6, p, &r) != 0) {
        return CTL_EXIT_FAIL;
    }
    int rc = CTL_EXIT_OK;
    if (PQntuples(r) != 1) {
        fprintf(stderr, "escrowctl: no tenant %s (escrowctl tenant create %s)\n", a->tenant,
                a->tenant);
        rc = CTL_EXIT_FAIL;
    } else {
        print_limits(a, r, out);
    }
    PQclear(r);
    return rc;
}

int ctl_tenant_run(int argc, char **argv, FILE *out)
{
    tenant_args a;
    if (parse(argc, argv, &a) != 0) {
        return CTL_EXIT_USAGE;
    }
    if (!wire_id_valid(a.tenant, ESC_TENANT_LEN_MAX)) {
        fprintf(stderr, "escrowctl: '%s' is not a tenant id\n", a.tenant);
        return CTL_EXIT_USAGE;
    }
    static region_cfg region; /* large */
    if (a.config != NULL) {
        char err[REGION_ERR_LEN];
        if (region_cfg_load(a.config, &region, err, sizeof err) != 0) {
            fprintf(stderr, "escrowctl: %s\n", err);
            return CTL_EXIT_USAGE;
        }
        a.dsn = region.dsn;
    }
    if (a.dsn == NULL || a.dsn[0] == '\0') {
        fprintf(stderr, "escrowctl: tenant limits needs the database (--dsn or $ESCROW_DSN)\n");
        return CTL_EXIT_USAGE;
    }
    PGconn *db = NULL;
    if (ctl_db_open(a.dsn, &db) != 0) {
        return CTL_EXIT_USAGE;
    }
    int rc = run(db, &a, out);
    ctl_db_close(db);
    return rc;
}

void ctl_tenant_usage(FILE *f)
{
    fputs("tenant limits (--dsn; each segment node re-reads them every second):\n"
          "  tenant limits TENANT         the tenant's request rate and live-hold cap per node\n"
          "    [--rate N[:BURST]|default] requests/s per node (0 = no limit); default: the\n"
          "                               node's --rate-tenant (20000:40000)\n"
          "    [--live-holds N|default]   live holds per node (0 = only the node's maximum);\n"
          "                               default: the node's --live-holds-tenant (1048576)\n"
          "                               over either: BUSY, which clients retry\n",
          f);
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_auth.c - see ctl_auth.h.
 */
#include "ctl_auth.h"

#include <stdlib.h>
#include <string.h>

#include "auth.h"
#include "auth_guard.h"
#include "ctl_db.h"
#include "ctl_exit.h"
#include "ctl_json.h"
#include "ctl_opts.h"
#include "escrow_errors.h"
#include "pg_result.h"
#include "region_cfg.h"
#include "wire.h"

#define TAG "/* escrow:ctl-auth */ "
#define NAME_LEN_MAX 200

/* ---- the admin credential ------------------------------------------------- */

static int set_credential_from(const char *path)
{
    char key[ESC_CREDENTIAL_LEN_MAX + 1];
    char why[CTL_WHY_MAX];
    if (auth_read_key_file(path, key, sizeof key, why, sizeof why) != 0) {
        fprintf(stderr, "escrowctl: --credential: %s\n", why);
        return -1;
    }
    (void)wire_set_credential(key); /* a well-formed key (read above): it signs */
    return 0;
}

int ctl_auth_credential(int *argc, char **argv)
{
    const char *path = NULL;
    int out = 0;
    for (int i = 0; i < *argc; i++) {
        if (strcmp(argv[i], "--credential") == 0) {
            if (i + 1 >= *argc) {
                fprintf(stderr, "escrowctl: --credential needs a FILE\n");
                return -1;
            }
            path = argv[++i];
            continue;
        }
        if (strncmp(argv[i], "--credential=", 13) == 0) {
            path = argv[i] + 13;
            continue;
        }
        argv[out++] = argv[i];
    }
    *argc = out;
    if (path != NULL) {
        return set_credential_from(path);
    }
    const char *env = getenv("ESCROW_ADMIN_KEY");
    if (env != NULL && env[0] != '\0') {
        char id[AUTH_KEY_ID_LEN + 1];
        uint8_t hash[AUTH_HASH_BYTES];
        if (auth_key_parse(env, strlen(env), id, hash) != 0 || wire_set_credential(env) != 0) {
            fprintf(stderr, "escrowctl: $ESCROW_ADMIN_KEY does not hold a key "
                            "(esk_<key id>_<secret>)\n");
            return -1;
        }
    }
    return 0;
}

/* ---- the commands ------------------------------------------------------------ */

typedef struct auth_args {
    const char *dsn;
    const char *name;
    const char *config;
    bool json;
    const char *pos[4];
    int npos;
} auth_args;

static const char *const k_cmds[] = {"tenant", "key", "admin-key", "cluster-key"};

/* The first word that is not an option or an option's value. */
static const char *first_word(int argc, char **argv)
{
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        if (strncmp(a, "--", 2) != 0) {
            return a;
        }
        if (strchr(a, '=') == NULL && strcmp(a, "--json") != 0 && strcmp(a, "--help") != 0) {
            i++; /* --dsn VALUE, --coordinator VALUE, ... */
        }
    }
    return NULL;
}

bool ctl_auth_is_cmd(int argc, char **argv)
{
    const char *w = first_word(argc, argv);
    for (size_t i = 0; w != NULL && i < sizeof k_cmds / sizeof k_cmds[0]; i++) {
        if (strcmp(w, k_cmds[i]) == 0) {
            return true;
        }
    }
    return false;
}

static int parse(int argc, char **argv, auth_args *a)
{
    memset(a, 0, sizeof *a);
    a->dsn = getenv("ESCROW_DSN");
    for (int i = 0; i < argc; i++) {
        const char *o = argv[i];
        const char **dst = strcmp(o, "--dsn") == 0      ? &a->dsn
                           : strcmp(o, "--name") == 0   ? &a->name
                           : strcmp(o, "--config") == 0 ? &a->config
                                                        : NULL;
        if (dst != NULL) {
            if (i + 1 >= argc) {
                fprintf(stderr, "escrowctl: %s needs a value\n", o);
                return -1;
            }
            *dst = argv[++i];
        } else if (strncmp(o, "--dsn=", 6) == 0) {
            a->dsn = o + 6;
        } else if (strncmp(o, "--name=", 7) == 0) {
            a->name = o + 7;
        } else if (strcmp(o, "--json") == 0) {
            a->json = true;
        } else if (strncmp(o, "--", 2) == 0) {
            fprintf(stderr, "escrowctl: %s is not an option of the key commands\n", o);
            return -1;
        } else if (a->npos == 4) {
            fprintf(stderr, "escrowctl: too many arguments\n");
            return -1;
        } else {
            a->pos[a->npos++] = o;
        }
    }
    return 0;
}

static int open_db(auth_args *a, PGconn **conn)
{
    static region_cfg region; /* large */
    if (a->config != NULL) {
        char err[REGION_ERR_LEN];
        if (region_cfg_load(a->config, &region, err, sizeof err) != 0) {
            fprintf(stderr, "escrowctl: %s\n", err);
            return -1;
        }
        a->dsn = region.dsn;
    }
    if (a->dsn == NULL || a->dsn[0] == '\0') {
        fprintf(stderr, "escrowctl: the key commands need the database (--dsn or $ESCROW_DSN)\n");
        return -1;
    }
    return ctl_db_open(a->dsn, conn) == 0 ? 0 : -1;
}

static bool tenant_ok(const char *t)
{
    if (!wire_id_valid(t, ESC_TENANT_LEN_MAX) || strcmp(t, AUTH_TENANT_ADMIN) == 0) {
        fprintf(stderr, "escrowctl: '%s' is not a tenant id (1..%d printable bytes, not '*')\n", t,
                ESC_TENANT_LEN_MAX);
        return false;
    }
    return true;
}

static int tenant_create(PGconn *db, const auth_args *a, FILE *out)
{
    const char *t = a->pos[2];
    const char *name = a->name ? a->name : "";
    if (!tenant_ok(t) || strlen(name) > NAME_LEN_MAX) {
        if (strlen(name) > NAME_LEN_MAX) {
            fprintf(stderr, "escrowctl: --name is at most %d bytes\n", NAME_LEN_MAX);
        }
        return CTL_EXIT_USAGE;
    }
    const char *p[2] = {t, name};
    PGresult *r;
    if (ctl_db_query(db,
                     TAG "INSERT INTO tenants (tenant_id, name) VALUES ($1, $2) "
                         "ON CONFLICT (tenant_id) DO NOTHING RETURNING tenant_id",
                     2, p, &r) != 0) {
        return CTL_EXIT_FAIL;
    }
    bool created = PQntuples(r) == 1;
    PQclear(r);
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "tenant", t);
        ctl_json_bool(&j, "created", created);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    } else {
        fprintf(out, "tenant %s %s\n", t, created ? "created" : "already exists");
    }
    return CTL_EXIT_OK;
}

/* Keys belong to registered tenants: false after "no tenant" on stderr
 * (the same answer as for an unknown item, ctl_db_scope). */
static bool tenant_registered(PGconn *db, const char *tenant)
{
    const char *p[1] = {tenant};
    PGresult *r = NULL;
    if (ctl_db_query(db, TAG "SELECT EXISTS (SELECT 1 FROM tenants WHERE tenant_id = $1)", 1, p,
                     &r) != 0) {
        return false;
    }
    bool known = PQgetvalue(r, 0, 0)[0] == 't';
    PQclear(r);
    if (!known) {
        fprintf(stderr, "escrowctl: no tenant %s (register it: escrowctl tenant create %s)\n",
                tenant, tenant);
    }
    return known;
}

/* Stores a new key for tenant (or "*") and prints it, once. */
static int key_create(PGconn *db, const auth_args *a, const char *tenant, FILE *out)
{
    char text[AUTH_TEXT_LEN + 1], id[AUTH_KEY_ID_LEN + 1], hex[AUTH_HASH_HEX_LEN + 3];
    uint8_t hash[AUTH_HASH_BYTES];
    if (strcmp(tenant, AUTH_TENANT_ADMIN) != 0 && !tenant_registered(db, tenant)) {
        return CTL_EXIT_FAIL;
    }
    auth_key_new(text, id, hash);
    hex[0] = '\\';
    hex[1] = 'x';
    auth_hash_hex(hash, hex + 2);
    const char *p[3] = {id, tenant, hex};
    if (ctl_db_exec(db,
                    TAG "INSERT INTO credentials (key_id, tenant_id, secret_hash) "
                        "VALUES ($1, $2, $3::bytea)",
                    3, p) != 0) {
        return CTL_EXIT_FAIL;
    }
    if (a->json) {
        ctl_json j;
        ctl_json_init(&j, out);
        ctl_json_begin_obj(&j, NULL);
        ctl_json_str(&j, "key_id", id);
        ctl_json_str(&j, "tenant", tenant);
        ctl_json_str(&j, "key", text);
        ctl_json_end_obj(&j);
        ctl_json_finish(&j);
    } else {
        fprintf(out, "%s\n", text);
        fprintf(stderr,
                "escrowctl: %s key %s created for %s; it is shown once and stored only as a "
                "hash: keep it now. Revoke it with: escrowctl key revoke %s\n",
                strcmp(tenant, AUTH_TENANT_ADMIN) == 0 ? "admin" : "tenant", id, tenant, id);
    }
    return CTL_EXIT_OK;
}

static int key_list(PGconn *db, const auth_args *a, FILE *out)
{
    const char *t = a->npos > 2 ? a->pos[2] : NULL;
    const char *p[1] = {t};
    PGresult *r;
    if (t != NULL && ctl_db_scope(db, t, NULL) != 0) {
        return CTL_EXIT_FAIL;
    }
    if (ctl_db_query(db,
                     TAG "SELECT key_id, tenant_id, created_at::text, "
                         "coalesce(revoked_at::text, '') FROM credentials "
                         "WHERE $1::text IS NULL OR tenant_id = $1 ORDER BY tenant_id, created_at",
                     1, p, &r) != 0) {
        return CTL_EXIT_FAIL;
    }
    ctl_json j;
    if (a->json) {
        ctl_json_init(&j, out);
        ctl_json_begin_arr(&j, NULL);
    } else {
        fprintf(out, "%-16s %-20s %-32s %s\n", "key_id", "tenant", "created", "revoked");
    }
    for (int i = 0; i < PQntuples(r); i++) {
        const char *v[4];
        for (int c = 0; c < 4; c++) {
            v[c] = pg_result_text_or(r, i, c, "");
        }
        if (a->json) {
            ctl_json_begin_obj(&j, NULL);
            ctl_json_str(&j, "key_id", v[0]);
            ctl_json_str(&j, "tenant", v[1]);
            ctl_json_str(&j, "created", v[2]);
            ctl_json_str(&j, "revoked", v[3]);
            ctl_json_end_obj(&j);
        } else {
            fprintf(out, "%-16s %-20s %-32s %s\n", v[0], v[1], v[2], v[3][0] ? v[3] : "-");
        }
    }
    if (a->json) {
        ctl_json_end_arr(&j);
        ctl_json_finish(&j);
    }
    PQclear(r);
    return CTL_EXIT_OK;
}

static int key_revoke(PGconn *db, const auth_args *a, FILE *out)
{
    const char *id = a->pos[2];
    if (!auth_key_id_valid(id)) {
        fprintf(stderr, "escrowctl: '%s' is not a key id (%d hex digits)\n", id, AUTH_KEY_ID_LEN);
        return CTL_EXIT_USAGE;
    }
    const char *p[1] = {id};
    PGresult *r;
    if (ctl_db_query(db,
                     TAG "WITH r AS (UPDATE credentials SET revoked_at = now() "
                         "WHERE key_id = $1 AND revoked_at IS NULL RETURNING key_id) "
                         "SELECT (SELECT count(*) FROM r), "
                         "(SELECT count(*) FROM credentials WHERE key_id = $1)",
                     1, p, &r) != 0) {
        return CTL_EXIT_FAIL;
    }
    bool revoked = strcmp(pg_result_text_or(r, 0, 0, ""), "1") == 0;
    bool exists = strcmp(pg_result_text_or(r, 0, 1, ""), "1") == 0;
    PQclear(r);
    if (!exists) {
        fprintf(stderr, "escrowctl: no key %s\n", id);
        return CTL_EXIT_FAIL;
    }
    fprintf(out, "key %s %s\n", id,
            revoked ? "revoked (daemons stop accepting it within a second)" : "already revoked");
    return CTL_EXIT_OK;
}

static int usage_fail(const char *what)
{
    fprintf(stderr, "escrowctl: usage: %s\n", what);
    return CTL_EXIT_USAGE;
}

int ctl_auth_run(int argc, char **argv, FILE *out)
{
    auth_args a;
    if (parse(argc, argv, &a) != 0) {
        return CTL_EXIT_USAGE;
    }
    const char *c0 = a.npos > 0 ? a.pos[0] : "", *c1 = a.npos > 1 ? a.pos[1] : "";
    if (strcmp(c0, "cluster-key") == 0) {
        if (strcmp(c1, "create") != 0 || a.npos != 2) {
            return usage_fail("escrowctl cluster-key create");
        }
        char text[AUTH_TEXT_LEN + 1], id[AUTH_KEY_ID_LEN + 1];
        uint8_t hash[AUTH_HASH_BYTES];
        auth_key_new(text, id, hash); /* not stored: every daemon gets it as a file */
        fprintf(out, "%s\n", text);
        return CTL_EXIT_OK;
    }
    bool ok = (strcmp(c0, "tenant") == 0 && strcmp(c1, "create") == 0 && a.npos == 3) ||
              (strcmp(c0, "key") == 0 && strcmp(c1, "create") == 0 && a.npos == 3) ||
              (strcmp(c0, "key") == 0 && strcmp(c1, "list") == 0 && a.npos <= 3) ||
              (strcmp(c0, "key") == 0 && strcmp(c1, "revoke") == 0 && a.npos == 3) ||
              (strcmp(c0, "admin-key") == 0 && strcmp(c1, "create") == 0 && a.npos == 2);
    if (!ok) {
        return usage_fail("escrowctl tenant create TENANT [--name N] | key create TENANT | "
                          "key list [TENANT] | key revoke KEY_ID | admin-key create | "
                          "cluster-key create");
    }
    if (strcmp(c1, "create") == 0 && strcmp(c0, "key") == 0 && !tenant_ok(a.pos[2])) {
        return CTL_EXIT_USAGE;
    }
    if (auth_init() != 0) {
        fprintf(stderr, "escrowctl: libsodium cannot start\n");
        return CTL_EXIT_FAIL;
    }
    PGconn *db = NULL;
    if (open_db(&a, &db) != 0) {
        return CTL_EXIT_USAGE;
    }
    int rc;
    if (strcmp(c0, "tenant") == 0) {
        rc = tenant_create(db, &a, out);
    } else if (strcmp(c0, "admin-key") == 0) {
        rc = key_create(db, &a, AUTH_TENANT_ADMIN, out);
    } else if (strcmp(c1, "create") == 0) {
        rc = key_create(db, &a, a.pos[2], out);
    } else if (strcmp(c1, "list") == 0) {
        rc = key_list(db, &a, out);
    } else {
        rc = key_revoke(db, &a, out);
    }
    ctl_db_close(db);
    return rc;
}

void ctl_auth_usage(FILE *f)
{
    fputs("credentials (--dsn; keys are shown once, stored only as hashes):\n"
          "  tenant create TENANT [--name N]  register a tenant (idempotent)\n"
          "  key create TENANT            a new key for the tenant's requests\n"
          "  key list [TENANT]            keys: id, tenant ('*' = admin), created, revoked\n"
          "  key revoke KEY_ID            daemons refuse the key within a second\n"
          "  admin-key create             a new admin key (escrowctl's operations)\n"
          "  cluster-key create           print a new cluster key (not stored: give it to\n"
          "                               every node and coordinator as --cluster-key FILE)\n"
          "  --credential FILE            the admin key escrowctl sends to the coordinator and\n"
          "                               nodes (default: $ESCROW_ADMIN_KEY); needed when they\n"
          "                               run with --auth on\n",
          f);
}

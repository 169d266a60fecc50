/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_guard.c - see auth_guard.h.
 */
#include "auth_guard.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "log.h"

#define SQL_KEYS                                                                                   \
    "/* escrow:auth-keys */ SELECT key_id, tenant_id, encode(secret_hash, 'hex') "                 \
    "FROM credentials WHERE revoked_at IS NULL ORDER BY key_id LIMIT 65537"

static void start_load(auth_guard *g);

void auth_guard_init(auth_guard *g)
{
    memset(g, 0, sizeof *g);
    auth_keys_init(&g->keys);
}

/* ---- loading ------------------------------------------------------------ */

static int keys_from_result(PGresult *res, auth_keys *out)
{
    int n = PQntuples(res);
    for (int i = 0; i < n; i++) {
        auth_key k;
        memset(&k, 0, sizeof k);
        snprintf(k.key_id, sizeof k.key_id, "%s", PQgetvalue(res, i, 0));
        snprintf(k.tenant_id, sizeof k.tenant_id, "%s", PQgetvalue(res, i, 1));
        k.kind = strcmp(k.tenant_id, AUTH_TENANT_ADMIN) == 0 ? AUTH_KIND_ADMIN : AUTH_KIND_TENANT;
        int rc = auth_hash_from_hex(PQgetvalue(res, i, 2), k.hash);
        if (rc == 0) {
            rc = auth_keys_add(out, &k);
        }
        if (rc == ESC_ETOOBIG) {
            ESC_LOG(ESC_LOG_WARN, "AUTH-KEYS", "more than %d live keys; the rest are ignored",
                    AUTH_KEYS_MAX);
            break;
        }
        if (rc == ESC_ENOMEM) {
            return rc;
        }
        if (rc != 0) {
            ESC_LOG(ESC_LOG_WARN, "AUTH-KEYS", "key=%.16s skipped: malformed row", k.key_id);
        }
    }
    return 0;
}

static void on_keys(pgx_conn *c, PGresult *res, const pgx_err *err, void *arg)
{
    (void)c;
    auth_guard *g = arg;
    g->loading = false;
    if (err->code != 0) {
        g->reload_failures++;
        ESC_LOG(ESC_LOG_WARN, "AUTH-KEYS", "%s: cannot read credentials (%s); keeping %zu keys",
                g->name, err->message, g->keys.n);
        return;
    }
    auth_keys fresh;
    auth_keys_init(&fresh);
    if (keys_from_result(res, &fresh) != 0 || auth_keys_sort(&fresh) != 0) {
        auth_keys_fini(&fresh);
        g->reload_failures++;
        return;
    }
    if (!g->loaded || fresh.n != g->keys.n) {
        ESC_LOG(ESC_LOG_INFO, "AUTH-KEYS", "%s: %zu live keys", g->name, fresh.n);
    }
    auth_keys_fini(&g->keys);
    g->keys = fresh; /* swapped whole: a check never sees half a table */
    g->loaded = true;
    g->reloads++;
}

static void start_load(auth_guard *g)
{
    if (g->loading || g->closing > 0 || !pgx_ready(&g->conn)) {
        return;
    }
    if (pgx_query(&g->conn, NULL, SQL_KEYS, 0, NULL, on_keys, g) == 0) {
        g->loading = true;
        g->last_load_us = esc_mono_us();
    }
}

static void on_timer(uv_timer_t *t)
{
    auth_guard *g = t->data;
    if (g->conn.state == PGX_DOWN) {
        pgx_reconnect(&g->conn);
        return;
    }
    start_load(g);
}

static void on_state(pgx_conn *c, bool up, void *arg)
{
    (void)c;
    auth_guard *g = arg;
    if (up) {
        start_load(g);
    } else {
        g->loading = false; /* the timer reconnects */
    }
}

int auth_guard_start(auth_guard *g, uv_loop_t *loop, const auth_guard_config *cfg)
{
    auth_guard_init(g);
    g->loop = loop;
    g->name = cfg->name ? cfg->name : "daemon";
    g->reload_ms = cfg->reload_ms ? cfg->reload_ms : AUTH_GUARD_RELOAD_MS_DEFAULT;
    g->window_ms = cfg->window_ms ? cfg->window_ms : AUTH_WINDOW_MS_DEFAULT;
    if (!cfg->on) {
        return 0;
    }
    if (g->window_ms < AUTH_WINDOW_MS_MIN || g->window_ms > AUTH_WINDOW_MS_MAX) {
        ESC_LOG(ESC_LOG_ERROR, "AUTH-START", "the time window must be %u..%u ms",
                AUTH_WINDOW_MS_MIN, AUTH_WINDOW_MS_MAX);
        return ESC_ECONFIG;
    }
    if (auth_init() != 0) {
        return ESC_EINTERNAL;
    }
    int rc = auth_replay_init(&g->replay, AUTH_REPLAY_MAX);
    if (rc != 0) {
        return rc;
    }
    g->on = true;
    if (auth_guard_set_cluster(g, cfg->cluster_key, cfg->cluster_key_prev) != 0) {
        ESC_LOG(ESC_LOG_ERROR, "AUTH-START", "the cluster key is not a well-formed key");
        return ESC_ECONFIG;
    }
    rc = pgx_open(loop, &g->conn, cfg->dsn, "auth", NULL, NULL, 0, on_state, g);
    if (rc != 0) {
        return rc;
    }
    g->conn_open = true;
    if (uv_timer_init(loop, &g->timer) != 0) {
        return ESC_EINTERNAL;
    }
    g->timer_open = true;
    g->timer.data = g;
    if (uv_timer_start(&g->timer, on_timer, g->reload_ms, g->reload_ms) != 0) {
        return ESC_EINTERNAL;
    }
    ESC_LOG(ESC_LOG_INFO, "AUTH-START",
            "%s: auth on, cluster key %s, reload every %u ms, window %u ms", g->name,
            g->has_cluster ? g->cluster.key_id : "none", g->reload_ms, g->window_ms);
    return 0;
}

/* A cluster key's text into k (NULL or "" = none). Returns 0 or ESC_ECONFIG. */
static int parse_cluster(const char *text, auth_key *k, bool *has)
{
    memset(k, 0, sizeof *k);
    *has = false;
    if (text == NULL || text[0] == '\0') {
        return 0;
    }
    if (auth_key_parse(text, strlen(text), k->key_id, k->hash) != 0) {
        return ESC_ECONFIG;
    }
    k->kind = AUTH_KIND_CLUSTER;
    *has = true;
    return 0;
}

int auth_guard_set_cluster(auth_guard *g, const char *key, const char *prev)
{
    auth_key k, p;
    bool has_k, has_p;
    if (parse_cluster(key, &k, &has_k) != 0 || parse_cluster(prev, &p, &has_p) != 0) {
        return ESC_ECONFIG;
    }
    if (!g->on) {
        return 0;
    }
    g->cluster = k;
    g->has_cluster = has_k;
    g->cluster_prev = p;
    g->has_cluster_prev = has_p;
    return 0;
}

void auth_guard_reload_now(auth_guard *g)
{
    if (g->on && g->conn_open && !g->loading) {
        start_load(g);
    }
}

/* ---- checking ----------------------------------------------------------- */

static int refused(auth_guard *g, int rc, int access, const char *tenant_id, const char *why)
{
    g->refused++;
    int64_t now_s = esc_mono_us() / 1000000;
    if (now_s != g->log_second) {
        g->log_second = now_s;
        g->log_count = 0;
    }
    if (g->log_count++ < AUTH_GUARD_LOG_PER_S) {
        ESC_LOG(ESC_LOG_WARN, "AUTH-REFUSED", "%s: access=%d tenant=%s: %s", g->name, access,
                tenant_id[0] ? tenant_id : "-", why);
    }
    return rc;
}

/* An admin or cluster frame that passed: the first copy only. */
static int once(auth_guard *g, const auth_sig *sig, int64_t now_ms, char *why, size_t why_len)
{
    int rc = auth_replay_add(&g->replay, sig->mac, sig->sent_at_ms + g->window_ms + 1, now_ms);
    if (rc == ESC_EAUTH) {
        g->replays_refused++;
        snprintf(why, why_len, "this frame was accepted before: a replay is refused");
    } else if (rc == ESC_EBUSY) {
        snprintf(why, why_len, "too many signed admin or cluster frames in the window; retry");
    }
    return rc;
}

int auth_guard_check(auth_guard *g, int access, const char *tenant_id, const auth_sig *sig,
                     char *why, size_t why_len)
{
    if (!g->on) {
        return 0;
    }
    if (!g->loaded && access != AUTH_ACCESS_INTERNAL) {
        snprintf(why, why_len, "credentials are not loaded yet; retry");
        return refused(g, ESC_EUNAVAILABLE, access, tenant_id, why);
    }
    bool unknown = false;
    int64_t now_ms = esc_wall_ms();
    int rc = auth_verify(&g->keys, g->has_cluster ? &g->cluster : NULL, access, tenant_id, sig,
                         now_ms, g->window_ms, &unknown, why, why_len);
    if (rc != 0 && g->has_cluster_prev && access == AUTH_ACCESS_INTERNAL) {
        /* a rotation is under way: a peer may still sign with the previous key */
        rc = auth_verify(&g->keys, &g->cluster_prev, access, tenant_id, sig, now_ms, g->window_ms,
                         &unknown, why, why_len);
    }
    if (rc == 0 && access != AUTH_ACCESS_TENANT) {
        rc = once(g, sig, now_ms, why, why_len);
    }
    if (rc == 0) {
        g->accepted++;
        return 0;
    }
    if (unknown && esc_mono_us() - g->last_load_us >= AUTH_GUARD_RELOAD_GAP_MS * 1000) {
        start_load(g); /* maybe a key created a moment ago; this request is refused */
    }
    return refused(g, rc, access, tenant_id, why);
}

/* ---- closing ------------------------------------------------------------ */

static void on_closed(uv_handle_t *h)
{
    auth_guard *g = h->data;
    if (--g->closing == 0 && g->close_done != NULL) {
        g->close_done(g->close_arg);
    }
}

static void on_conn_closed(uv_handle_t *h)
{
    pgx_conn *c = h->data;
    auth_guard *g = c->state_arg;
    if (--g->closing == 0 && g->close_done != NULL) {
        g->close_done(g->close_arg);
    }
}

bool auth_guard_close(auth_guard *g, void (*done)(void *arg), void *arg)
{
    if (g->closing > 0 || (!g->timer_open && !g->conn_open)) {
        return false;
    }
    g->close_done = done;
    g->close_arg = arg;
    g->closing = 1; /* held until both closes were started */
    if (g->timer_open) {
        g->timer_open = false;
        g->closing++;
        uv_close((uv_handle_t *)&g->timer, on_closed);
    }
    if (g->conn_open) {
        g->conn_open = false;
        if (pgx_close(&g->conn, on_conn_closed)) {
            g->closing++;
        }
    }
    if (--g->closing == 0) {
        g->closing = 0;
        return false; /* nothing was pending after all */
    }
    return true;
}

void auth_guard_fini(auth_guard *g)
{
    auth_keys_fini(&g->keys);
    auth_replay_fini(&g->replay);
}

/* ---- key files ---------------------------------------------------------- */

int auth_read_key_file(const char *path, char *out, size_t cap, char *why, size_t why_len)
{
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
        return ESC_EIO;
    }
    char line[ESC_CREDENTIAL_LEN_MAX + 8];
    char *got = fgets(line, sizeof line, f);
    fclose(f);
    if (got == NULL) {
        snprintf(why, why_len, "%s is empty", path);
        return ESC_EIO;
    }
    size_t n = strlen(line);
    while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                     line[n - 1] == '\t')) {
        line[--n] = '\0';
    }
    char id[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES];
    if (n + 1 > cap) {
        snprintf(why, why_len, "%s: key too long", path);
        return ESC_ETOOBIG;
    }
    if (auth_key_parse(line, n, id, hash) != 0) {
        snprintf(why, why_len, "%s does not hold a key (esk_<key id>_<secret>)", path);
        return ESC_EAUTH;
    }
    memcpy(out, line, n + 1);
    return 0;
}

int auth_parse_window(const char *s, uint32_t *window_ms)
{
    char *end = NULL;
    errno = 0;
    unsigned long v = strtoul(s, &end, 10);
    if (s[0] < '0' || s[0] > '9' || *end != '\0' || errno != 0 || v < AUTH_WINDOW_MS_MIN ||
        v > AUTH_WINDOW_MS_MAX) {
        return ESC_EINVAL;
    }
    *window_ms = (uint32_t)v;
    return 0;
}

void auth_key_id_text(const char *key, char *out, size_t cap)
{
    snprintf(out, cap, "%.*s", key != NULL && key[0] != '\0' ? 4 + AUTH_KEY_ID_LEN : 0,
             key != NULL ? key : "");
}

int auth_cluster_key_load(const char *path, char out[ESC_CREDENTIAL_LEN_MAX + 1], bool *have,
                          char *why, size_t why_len)
{
    char prev[ESC_CREDENTIAL_LEN_MAX + 1];
    return auth_cluster_keys_load(path, out, prev, have, why, why_len);
}

/* The key on the file's second non-blank line, if any, into prev. */
static int read_prev_key(const char *path, char prev[ESC_CREDENTIAL_LEN_MAX + 1], char *why,
                         size_t why_len)
{
    prev[0] = '\0';
    FILE *f = fopen(path, "r");
    if (f == NULL) {
        snprintf(why, why_len, "cannot read %s: %s", path, strerror(errno));
        return ESC_EIO;
    }
    char line[ESC_CREDENTIAL_LEN_MAX + 8];
    int keys = 0, rc = 0;
    while (rc == 0 && fgets(line, sizeof line, f) != NULL) {
        size_t n = strlen(line);
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r' || line[n - 1] == ' ' ||
                         line[n - 1] == '\t')) {
            line[--n] = '\0';
        }
        if (n == 0 || ++keys == 1) {
            continue; /* blank, or the first key (read by auth_read_key_file) */
        }
        char id[AUTH_KEY_ID_LEN + 1];
        uint8_t hash[AUTH_HASH_BYTES];
        if (keys > 2 || n > ESC_CREDENTIAL_LEN_MAX || auth_key_parse(line, n, id, hash) != 0) {
            snprintf(why, why_len,
                     "%s: line %d: a cluster key file holds the key and at most one previous key "
                     "(esk_<key id>_<secret>), one per line",
                     path, keys);
            rc = ESC_EAUTH;
        } else {
            memcpy(prev, line, n + 1);
        }
    }
    fclose(f);
    return rc;
}

int auth_cluster_keys_load(const char *path, char out[ESC_CREDENTIAL_LEN_MAX + 1],
                           char prev[ESC_CREDENTIAL_LEN_MAX + 1], bool *have, char *why,
                           size_t why_len)
{
    *have = false;
    prev[0] = '\0';
    if (path != NULL) {
        int rc = auth_read_key_file(path, out, ESC_CREDENTIAL_LEN_MAX + 1, why, why_len);
        rc = rc != 0 ? rc : read_prev_key(path, prev, why, why_len);
        *have = rc == 0;
        return rc;
    }
    const char *env = getenv("ESCROW_CLUSTER_KEY");
    if (env == NULL || env[0] == '\0') {
        return 0;
    }
    char id[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES];
    if (auth_key_parse(env, strlen(env), id, hash) != 0 || strlen(env) > ESC_CREDENTIAL_LEN_MAX) {
        snprintf(why, why_len, "$ESCROW_CLUSTER_KEY does not hold a key (esk_<key id>_<secret>)");
        return ESC_EAUTH;
    }
    snprintf(out, ESC_CREDENTIAL_LEN_MAX + 1, "%s", env);
    *have = true;
    return 0;
}

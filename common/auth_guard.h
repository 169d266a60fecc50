/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_guard.h - a daemon's credential check: the key table of auth.h,
 * kept fresh from PostgreSQL on the daemon's loop, and the one function
 * every request goes through before it is decoded (the node and the
 * coordinator call auth_guard_check from their wire_check_fn).
 *
 * Off (the default, `--auth off`): every request passes, nothing is opened.
 * On: a request needs a signature that auth_verify accepts for its access
 * class and tenant, made within window_ms of this daemon's clock; an admin
 * or cluster frame is accepted once (auth_replay.h: a copy replayed inside
 * the window is refused; tenant requests are idempotent, so a copy of one
 * does nothing new and is not remembered). The table (`credentials`, migration 0009: only live,
 * unrevoked keys) is read on its own connection every reload_ms and, at
 * most every AUTH_GUARD_RELOAD_GAP_MS, when a request names a key id the
 * table does not have (a key created a moment ago). So a new key works
 * within about reload_ms, a revoked key stops working within reload_ms
 * (while PostgreSQL is reachable: a daemon that cannot read the table
 * keeps the last one it read and says so in its log). Until the first
 * read completed, tenant and admin requests are answered ESC_EUNAVAILABLE
 * (retry), internal ones are checked against the cluster key as usual.
 */
#ifndef ESC_AUTH_GUARD_H
#define ESC_AUTH_GUARD_H

#include <stdbool.h>
#include <stdint.h>

#include <uv.h>

#include "auth.h"
#include "auth_replay.h"
#include "pgx.h"

#define AUTH_GUARD_RELOAD_MS_DEFAULT 1000u
/* A key id the table does not know re-reads it at most this often. */
#define AUTH_GUARD_RELOAD_GAP_MS 100
/* Failed checks logged per second (the rest are only counted). */
#define AUTH_GUARD_LOG_PER_S 5

typedef struct auth_guard_config {
    bool on;
    const char *dsn;         /* borrowed: where the credentials table is */
    const char *cluster_key; /* borrowed: the cluster key's text; NULL = none */
    /* borrowed: a previous cluster key, still accepted (never used to sign)
     * while a rotation is under way; NULL = none */
    const char *cluster_key_prev;
    uint32_t reload_ms; /* 0 = AUTH_GUARD_RELOAD_MS_DEFAULT */
    uint32_t window_ms; /* 0 = AUTH_WINDOW_MS_DEFAULT; else AUTH_WINDOW_MS_MIN..MAX */
    const char *name;   /* borrowed, for logs: "segment", "coordinator" */
} auth_guard_config;

typedef struct auth_guard {
    bool on;
    uv_loop_t *loop; /* borrowed */
    const char *name;
    uint32_t reload_ms;
    uint32_t window_ms;
    auth_keys keys;     /* owned: the table in use */
    auth_replay replay; /* owned when on: admin and cluster frames seen */
    auth_key cluster;
    bool has_cluster;
    auth_key cluster_prev; /* accepted too, during a rotation */
    bool has_cluster_prev;
    pgx_conn conn;    /* embedded; opened when on */
    uv_timer_t timer; /* embedded: periodic reload */
    bool loaded;      /* the first read completed */
    bool loading;
    bool conn_open, timer_open;
    int64_t last_load_us;
    int closing; /* handles still closing */
    void (*close_done)(void *arg);
    void *close_arg;
    int64_t log_second;
    int log_count;
    uint64_t accepted, refused, reloads, reload_failures, replays_refused;
} auth_guard;

/* Zeroes g (a guard that is off until auth_guard_start turns it on). */
void auth_guard_init(auth_guard *g);

/* Starts g on loop per cfg (borrowed during the call). With cfg->on it
 * parses the cluster key, opens the connection and the reload timer.
 * Returns 0, ESC_ECONFIG (a cluster key that is not a well-formed key, a
 * window out of bounds) or ESC_ENOMEM / ESC_EINTERNAL. */
int auth_guard_start(auth_guard *g, uv_loop_t *loop, const auth_guard_config *cfg);

/* The check (access: AUTH_ACCESS_*, tenant_id "" when none, sig the
 * frame's signature, borrowed). Returns 0, ESC_EAUTH (not valid, or a
 * replayed admin/cluster frame), ESC_EUNAVAILABLE (keys not read yet) or
 * ESC_EBUSY (the replay cache is full: retry), with a sentence in why
 * (why_len bytes). Never allocates. */
int auth_guard_check(auth_guard *g, int access, const char *tenant_id, const auth_sig *sig,
                     char *why, size_t why_len);

/* Replaces the cluster keys of a running guard (SIGHUP: a rotation
 * without a restart): key (NULL = none) and prev (NULL = none), texts
 * borrowed for the call. Returns 0, or ESC_ECONFIG (a key that is not a
 * well-formed key: nothing changed). A guard that is off keeps none. */
int auth_guard_set_cluster(auth_guard *g, const char *key, const char *prev);

/* Re-reads the credentials table now (SIGHUP), unless a read is running
 * or the guard is off. */
void auth_guard_reload_now(auth_guard *g);

/* Parses --auth-window-ms (AUTH_WINDOW_MS_MIN..AUTH_WINDOW_MS_MAX).
 * Returns 0 or ESC_EINVAL. */
int auth_parse_window(const char *s, uint32_t *window_ms);

/* Closes g's handles. Returns true if done(arg) will run once they closed,
 * false if there was nothing to close (done is never called then). */
bool auth_guard_close(auth_guard *g, void (*done)(void *arg), void *arg);

/* Frees the table; after the loop ended. */
void auth_guard_fini(auth_guard *g);

/* Reads a key from a file (first line, surrounding whitespace removed) into
 * out (cap bytes). Returns 0, or ESC_EIO / ESC_ETOOBIG / ESC_EAUTH (not a
 * well-formed key) with a sentence in why. For --credential and
 * --cluster-key options. */
int auth_read_key_file(const char *path, char *out, size_t cap, char *why, size_t why_len);

/* "esk_<id>": a key's id, never its secret ("" when key is NULL or ""),
 * for the daemons' reload messages. */
void auth_key_id_text(const char *key, char *out, size_t cap);

/* The daemons' cluster key: read from path (--cluster-key FILE) when given,
 * else the text of $ESCROW_CLUSTER_KEY, else none (*have = false). Returns
 * 0, or an error with a sentence in why. */
int auth_cluster_key_load(const char *path, char out[ESC_CREDENTIAL_LEN_MAX + 1], bool *have,
                          char *why, size_t why_len);

/* The same, and a second key from the file's second line into prev (""
 * when there is none): the previous cluster key, still accepted while a
 * rotation is under way (docs/credentials.md). Blank lines after the first
 * key are ignored; a third key, or a second line that is not a key, is an
 * error. */
int auth_cluster_keys_load(const char *path, char out[ESC_CREDENTIAL_LEN_MAX + 1],
                           char prev[ESC_CREDENTIAL_LEN_MAX + 1], bool *have, char *why,
                           size_t why_len);

#endif

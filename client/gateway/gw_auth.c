/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_auth.c - see gw_auth.h. The key's own row names its tenant (the
 * request names none); the gateway then signs a proof with the presented
 * key (a MAC over its id, now) and auth_guard_check verifies it against
 * that tenant, as a node verifies a signed frame, so the gateway says
 * exactly what the nodes would.
 */
#include "gw_auth.h"

#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "escrow_errors.h"
#include "gw_answer.h"
#include "gw_bearer.h"

/* Checks key (its id and the hash of its secret, parsed from the token)
 * for tenant_id ("" = any) through the guard: a proof signed with it now. */
static int check_key(auth_guard *g, const char *tenant_id, const char *key_id,
                     const uint8_t hash[AUTH_HASH_BYTES], char *why, size_t why_len)
{
    uint8_t mac[AUTH_MAC_BYTES];
    size_t n = strlen(key_id);
    auth_mac(hash, key_id, n, mac);
    auth_sig sig = {.key_id = key_id,
                    .sent_at_ms = esc_wall_ms(),
                    .mac = mac,
                    .signed_bytes = key_id,
                    .signed_len = n};
    return auth_guard_check(g, AUTH_ACCESS_TENANT, tenant_id, &sig, why, why_len);
}

int gw_auth_check(auth_guard *g, const char *header, gw_principal *out, char *why, size_t why_len)
{
    const char *tok;
    size_t len;
    int rc = gw_bearer_token(header, &tok, &len, why, why_len);
    if (rc != 0) {
        return rc;
    }
    char key_id[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES];
    if (auth_key_parse(tok, len, key_id, hash) != 0) {
        snprintf(why, why_len, "the Bearer token is not an escrow key (esk_<id>_<secret>)");
        return ESC_EAUTH;
    }
    const auth_key *k = g->loaded ? auth_keys_find(&g->keys, key_id) : NULL;
    if (k == NULL) {
        /* unknown (maybe created a moment ago: the guard re-reads), or the
         * table is not loaded yet: its answer is ours */
        rc = check_key(g, "", key_id, hash, why, why_len);
        return rc != 0 ? rc : ESC_EAUTH;
    }
    if (k->kind != AUTH_KIND_TENANT) {
        snprintf(why, why_len, "key %s is not a shop's key: use one made by escrowctl key create",
                 key_id);
        return GW_EFORBIDDEN;
    }
    snprintf(out->tenant_id, sizeof out->tenant_id, "%s", k->tenant_id);
    rc = check_key(g, out->tenant_id, key_id, hash, why, why_len);
    if (rc != 0) {
        return rc;
    }
    memcpy(out->key_id, key_id, sizeof out->key_id);
    memcpy(out->credential, tok, len);
    out->credential[len] = '\0';
    return 0;
}

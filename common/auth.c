/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.c - see auth.h. Every cryptographic step is libsodium's.
 */
#include "auth.h"

#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <sodium.h>

#include "escrow_errors.h"

#define B64_VARIANT sodium_base64_VARIANT_URLSAFE_NO_PADDING
#define SECRET_B64_LEN 43

int auth_init(void)
{
    return sodium_init() < 0 ? ESC_EINTERNAL : 0;
}

uint64_t auth_random_u64(void)
{
    uint64_t v;
    if (sodium_init() < 0) { /* idempotent; randombytes needs it first */
        abort();             /* no entropy source: nothing is safe to run */
    }
    randombytes_buf(&v, sizeof v);
    return v;
}

/* BLAKE2b-256(secret || key_id): the stored form of a key. */
static void secret_hash(const uint8_t secret[AUTH_SECRET_BYTES], const char *key_id,
                        uint8_t hash[AUTH_HASH_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, NULL, 0, AUTH_HASH_BYTES);
    crypto_generichash_update(&st, secret, AUTH_SECRET_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)key_id, AUTH_KEY_ID_LEN);
    crypto_generichash_final(&st, hash, AUTH_HASH_BYTES);
}

int auth_key_new(char text[AUTH_TEXT_LEN + 1], char key_id[AUTH_KEY_ID_LEN + 1],
                 uint8_t hash[AUTH_HASH_BYTES])
{
    uint8_t id[AUTH_KEY_ID_BYTES], secret[AUTH_SECRET_BYTES];
    char b64[sodium_base64_ENCODED_LEN(AUTH_SECRET_BYTES, B64_VARIANT)];
    randombytes_buf(id, sizeof id);
    randombytes_buf(secret, sizeof secret);
    sodium_bin2hex(key_id, AUTH_KEY_ID_LEN + 1, id, sizeof id);
    sodium_bin2base64(b64, sizeof b64, secret, sizeof secret, B64_VARIANT);
    snprintf(text, AUTH_TEXT_LEN + 1, AUTH_PREFIX "%s_%s", key_id, b64);
    secret_hash(secret, key_id, hash);
    sodium_memzero(secret, sizeof secret);
    sodium_memzero(b64, sizeof b64);
    return 0;
}

bool auth_key_id_valid(const char *s)
{
    size_t i = 0;
    for (; s[i] != '\0'; i++) {
        if (i >= AUTH_KEY_ID_LEN ||
            !((s[i] >= '0' && s[i] <= '9') || (s[i] >= 'a' && s[i] <= 'f'))) {
            return false;
        }
    }
    return i == AUTH_KEY_ID_LEN;
}

int auth_key_parse(const void *cred, size_t len, char key_id[AUTH_KEY_ID_LEN + 1],
                   uint8_t hash[AUTH_HASH_BYTES])
{
    const char *p = cred;
    while (len > 0 &&
           (p[len - 1] == '\n' || p[len - 1] == '\r' || p[len - 1] == ' ' || p[len - 1] == '\t')) {
        len--;
    }
    const size_t prefix = sizeof AUTH_PREFIX - 1;
    if (len != AUTH_TEXT_LEN || memcmp(p, AUTH_PREFIX, prefix) != 0 ||
        p[prefix + AUTH_KEY_ID_LEN] != '_') {
        return ESC_EAUTH;
    }
    char id[AUTH_KEY_ID_LEN + 1];
    memcpy(id, p + prefix, AUTH_KEY_ID_LEN);
    id[AUTH_KEY_ID_LEN] = '\0';
    if (!auth_key_id_valid(id)) {
        return ESC_EAUTH;
    }
    uint8_t secret[AUTH_SECRET_BYTES];
    size_t n = 0;
    const char *end = NULL;
    const char *b64 = p + prefix + AUTH_KEY_ID_LEN + 1;
    if (sodium_base642bin(secret, sizeof secret, b64, SECRET_B64_LEN, NULL, &n, &end,
                          B64_VARIANT) != 0 ||
        n != sizeof secret || end != b64 + SECRET_B64_LEN) {
        return ESC_EAUTH;
    }
    secret_hash(secret, id, hash);
    sodium_memzero(secret, sizeof secret);
    memcpy(key_id, id, sizeof id);
    return 0;
}

void auth_hash_hex(const uint8_t hash[AUTH_HASH_BYTES], char hex[AUTH_HASH_HEX_LEN + 1])
{
    sodium_bin2hex(hex, AUTH_HASH_HEX_LEN + 1, hash, AUTH_HASH_BYTES);
}

int auth_hash_from_hex(const char *hex, uint8_t hash[AUTH_HASH_BYTES])
{
    size_t n = 0;
    const char *end = NULL;
    size_t len = strlen(hex);
    if (len != AUTH_HASH_HEX_LEN ||
        sodium_hex2bin(hash, AUTH_HASH_BYTES, hex, len, NULL, &n, &end) != 0 ||
        n != AUTH_HASH_BYTES || end != hex + len) {
        return ESC_EINVAL;
    }
    return 0;
}

/* ---- the table ---------------------------------------------------------- */

void auth_keys_init(auth_keys *k)
{
    memset(k, 0, sizeof *k);
}

void auth_keys_fini(auth_keys *k)
{
    if (k->v != NULL) {
        sodium_memzero(k->v, k->cap * sizeof *k->v); /* signing keys */
    }
    free(k->v);
    free(k->by_tenant);
    memset(k, 0, sizeof *k);
}

static bool tenant_valid(const char *s)
{
    size_t n = strnlen(s, ESC_TENANT_LEN_MAX + 1);
    if (n == 0 || n > ESC_TENANT_LEN_MAX) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (s[i] < 0x21 || s[i] > 0x7e) {
            return false;
        }
    }
    return true;
}

int auth_keys_add(auth_keys *k, const auth_key *key)
{
    if (!auth_key_id_valid(key->key_id) || !tenant_valid(key->tenant_id) ||
        (key->kind != AUTH_KIND_TENANT && key->kind != AUTH_KIND_ADMIN) ||
        ((key->kind == AUTH_KIND_ADMIN) != (strcmp(key->tenant_id, AUTH_TENANT_ADMIN) == 0))) {
        return ESC_EINVAL;
    }
    if (k->n >= AUTH_KEYS_MAX) {
        return ESC_ETOOBIG;
    }
    if (k->n == k->cap) {
        size_t cap = k->cap ? 2 * k->cap : 64;
        auth_key *v = realloc(k->v, cap * sizeof *v);
        if (v == NULL) {
            return ESC_ENOMEM;
        }
        k->v = v;
        k->cap = cap;
    }
    k->v[k->n++] = *key;
    free(k->by_tenant); /* stale until the next auth_keys_sort */
    k->by_tenant = NULL;
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const auth_key *)a)->key_id, ((const auth_key *)b)->key_id);
}

/* qsort has no context argument: the table being indexed, one sort at a
 * time per thread. */
static _Thread_local const auth_keys *g_sorting;

static int tenant_cmp(const void *a, const void *b)
{
    const auth_key *x = &g_sorting->v[*(const uint32_t *)a];
    const auth_key *y = &g_sorting->v[*(const uint32_t *)b];
    int c = strcmp(x->tenant_id, y->tenant_id);
    return c != 0 ? c : strcmp(x->key_id, y->key_id);
}

int auth_keys_sort(auth_keys *k)
{
    if (k->n > 1) {
        qsort(k->v, k->n, sizeof *k->v, key_cmp);
    }
    free(k->by_tenant);
    k->by_tenant = malloc((k->n > 0 ? k->n : 1) * sizeof *k->by_tenant);
    if (k->by_tenant == NULL) {
        return ESC_ENOMEM;
    }
    for (size_t i = 0; i < k->n; i++) {
        k->by_tenant[i] = (uint32_t)i;
    }
    g_sorting = k;
    if (k->n > 1) {
        qsort(k->by_tenant, k->n, sizeof *k->by_tenant, tenant_cmp);
    }
    g_sorting = NULL;
    return 0;
}

size_t auth_keys_tenant(const auth_keys *k, const char *tenant_id, size_t *first)
{
    *first = 0;
    if (k->by_tenant == NULL) {
        return 0;
    }
    size_t lo = 0, hi = k->n;
    while (lo < hi) { /* the first index whose tenant is >= tenant_id */
        size_t mid = lo + (hi - lo) / 2;
        if (strcmp(k->v[k->by_tenant[mid]].tenant_id, tenant_id) < 0) {
            lo = mid + 1;
        } else {
            hi = mid;
        }
    }
    size_t end = lo;
    while (end < k->n && strcmp(k->v[k->by_tenant[end]].tenant_id, tenant_id) == 0) {
        end++;
    }
    *first = lo;
    return end - lo;
}

const auth_key *auth_keys_tenant_at(const auth_keys *k, size_t i)
{
    return &k->v[k->by_tenant[i]];
}

const auth_key *auth_keys_find(const auth_keys *k, const char *key_id)
{
    size_t lo = 0, hi = k->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        int c = strcmp(key_id, k->v[mid].key_id);
        if (c == 0) {
            return &k->v[mid];
        }
        if (c < 0) {
            hi = mid;
        } else {
            lo = mid + 1;
        }
    }
    return NULL;
}

/* ---- signing ------------------------------------------------------------ */

/* Domain separation: a frame's MAC is never a MAC of anything else made
 * with the same key (route sealing derives its own keys, auth_route.c). */
static const char mac_context[] = "escrow-frame-v1";

void auth_mac(const uint8_t key[AUTH_HASH_BYTES], const void *bytes, size_t len,
              uint8_t mac[AUTH_MAC_BYTES])
{
    crypto_generichash_state st;
    crypto_generichash_init(&st, key, AUTH_HASH_BYTES, AUTH_MAC_BYTES);
    crypto_generichash_update(&st, (const unsigned char *)mac_context, sizeof mac_context - 1);
    crypto_generichash_update(&st, bytes, len);
    crypto_generichash_final(&st, mac, AUTH_MAC_BYTES);
}

static _Atomic uint64_t g_nonce;

uint64_t auth_nonce(void)
{
    uint64_t n = atomic_load_explicit(&g_nonce, memory_order_relaxed);
    if (n == 0) {
        uint64_t start = auth_random_u64() | 1; /* never 0 again */
        uint64_t zero = 0;
        (void)atomic_compare_exchange_strong(&g_nonce, &zero, start);
    }
    return atomic_fetch_add_explicit(&g_nonce, 1, memory_order_relaxed);
}

/* ---- verification ------------------------------------------------------- */

static int refuse(char *why, size_t why_len, const char *sentence)
{
    if (why != NULL && why_len > 0) {
        snprintf(why, why_len, "%s", sentence);
    }
    return ESC_EAUTH;
}

/* May a key of this kind and tenant send this request? */
static bool key_fits(const auth_key *key, int access, const char *tenant_id)
{
    switch (access) {
    case AUTH_ACCESS_TENANT:
        return key->kind == AUTH_KIND_ADMIN ||
               (key->kind == AUTH_KIND_TENANT && tenant_id[0] != '\0' &&
                strcmp(key->tenant_id, tenant_id) == 0);
    case AUTH_ACCESS_ADMIN:
        return key->kind == AUTH_KIND_ADMIN;
    case AUTH_ACCESS_INTERNAL:
        return key->kind == AUTH_KIND_CLUSTER;
    default:
        return false;
    }
}

/* Who signed: the key named by sig's key id, or NULL (unknown). */
static const auth_key *signer_of(const auth_keys *keys, const auth_key *cluster,
                                 const auth_sig *sig)
{
    if (cluster != NULL && strcmp(cluster->key_id, sig->key_id) == 0) {
        return cluster;
    }
    return auth_keys_find(keys, sig->key_id);
}

int auth_verify(const auth_keys *keys, const auth_key *cluster, int access, const char *tenant_id,
                const auth_sig *sig, int64_t now_ms, uint32_t window_ms, bool *unknown_id,
                char *why, size_t why_len)
{
    *unknown_id = false;
    if (sig->cleartext_len > 0) {
        return refuse(why, why_len,
                      "a cleartext credential is refused: keys are never sent, frames are signed "
                      "(upgrade the client)");
    }
    if (sig->key_id[0] == '\0' || sig->mac == NULL) {
        return refuse(why, why_len, "credentials missing (the frame is not signed)");
    }
    const auth_key *key = signer_of(keys, cluster, sig);
    if (key == NULL) {
        *unknown_id = true;
        return refuse(why, why_len, "credentials not valid (unknown or revoked key)");
    }
    uint8_t mac[AUTH_MAC_BYTES];
    auth_mac(key->hash, sig->signed_bytes, sig->signed_len, mac);
    /* the MAC first, so a wrong secret and a wrong tenant answer alike */
    if (sodium_memcmp(mac, sig->mac, AUTH_MAC_BYTES) != 0) {
        return refuse(why, why_len, "credentials not valid (unknown or revoked key)");
    }
    int64_t skew = sig->sent_at_ms - now_ms;
    if (skew > (int64_t)window_ms || skew < -(int64_t)window_ms) {
        return refuse(why, why_len,
                      "frame signed outside the time window (a replay, or clocks apart)");
    }
    if (!key_fits(key, access, tenant_id)) {
        return refuse(why, why_len,
                      access == AUTH_ACCESS_ADMIN      ? "this operation needs an admin key"
                      : access == AUTH_ACCESS_INTERNAL ? "this operation needs the cluster key"
                                                       : "this key is not valid for this tenant");
    }
    return 0;
}

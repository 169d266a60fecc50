/*
 * auth.c - see auth.h. Every cryptographic step is libsodium's.
 */
#include "auth.h"

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
    free(k->v);
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
    return 0;
}

static int key_cmp(const void *a, const void *b)
{
    return strcmp(((const auth_key *)a)->key_id, ((const auth_key *)b)->key_id);
}

void auth_keys_sort(auth_keys *k)
{
    if (k->n > 1) {
        qsort(k->v, k->n, sizeof *k->v, key_cmp);
    }
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

int auth_verify(const auth_keys *keys, const auth_key *cluster, int access, const char *tenant_id,
                const void *cred, size_t len, bool *unknown_id, char *why, size_t why_len)
{
    *unknown_id = false;
    if (len == 0) {
        return refuse(why, why_len, "credentials missing");
    }
    char id[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES];
    if (auth_key_parse(cred, len, id, hash) != 0) {
        return refuse(why, why_len, "credentials malformed (expected esk_<key id>_<secret>)");
    }
    const auth_key *key = NULL;
    if (cluster != NULL && strcmp(cluster->key_id, id) == 0) {
        key = cluster;
    } else {
        key = auth_keys_find(keys, id);
    }
    if (key == NULL) {
        *unknown_id = true;
        return refuse(why, why_len, "credentials not valid (unknown or revoked key)");
    }
    /* the secret first, so a wrong secret and a wrong tenant answer alike */
    if (sodium_memcmp(hash, key->hash, AUTH_HASH_BYTES) != 0) {
        return refuse(why, why_len, "credentials not valid (unknown or revoked key)");
    }
    if (!key_fits(key, access, tenant_id)) {
        return refuse(why, why_len,
                      access == AUTH_ACCESS_ADMIN      ? "this operation needs an admin key"
                      : access == AUTH_ACCESS_INTERNAL ? "this operation needs the cluster key"
                                                       : "this key is not valid for this tenant");
    }
    return 0;
}

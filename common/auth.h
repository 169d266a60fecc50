/*
 * auth.h - escrow credentials: the key format, key generation, and the
 * verification of one request's credential against a table of key hashes.
 *
 * Pure: libsodium for randomness, hashing and constant-time comparison
 * (no hand-written crypto), no I/O. The daemons load the table from
 * PostgreSQL (auth_guard.h); escrowctl generates keys with auth_key_new.
 *
 * A key is shown once, as text:  esk_<key_id>_<secret>
 *   key_id  AUTH_KEY_ID_LEN lowercase hex characters (8 random bytes): names
 *           the key in the table, in logs and in `escrowctl key revoke`;
 *   secret  32 random bytes (randombytes_buf), base64url without padding.
 * The database stores only hash = BLAKE2b-256(secret || key_id)
 * (crypto_generichash), per key: a stolen table does not let anyone
 * authenticate, and a hash copied to another key id does not verify.
 * Because the secret is 256 random bits, a fast hash is enough (no password
 * hashing); verifying costs one BLAKE2b of 48 bytes and one sodium_memcmp.
 *
 * Kinds. A tenant key (tenant_id = the shop) may send that tenant's
 * requests only. An admin key (tenant_id "*") may send the operator's
 * requests (AdminReq, quota moves, operator release) and any tenant's
 * requests. The cluster key (one per deployment, from a file, never in the
 * table) may send the daemons' internal requests only: heartbeats and quota
 * status/offers between coordinators.
 *
 * Invariants: a request is accepted only when its key id is in the table
 * (or is the cluster key's), the hash of its secret equals the stored one,
 * and the key's kind and tenant fit the request's access class and tenant.
 * Everything else is ESC_EAUTH, with one sentence that does not say which
 * condition failed beyond what the sender already knows.
 */
#ifndef ESC_AUTH_H
#define ESC_AUTH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "esc_limits.h"

#define AUTH_KEY_ID_BYTES 8
#define AUTH_KEY_ID_LEN (2 * AUTH_KEY_ID_BYTES) /* hex */
#define AUTH_SECRET_BYTES 32
#define AUTH_HASH_BYTES 32
#define AUTH_HASH_HEX_LEN (2 * AUTH_HASH_BYTES)
/* "esk_" + key id + "_" + 43 characters of base64url: 64 bytes. */
#define AUTH_PREFIX "esk_"
#define AUTH_TEXT_LEN (4 + AUTH_KEY_ID_LEN + 1 + 43)
/* The tenant of admin keys (not a valid shop: tenants_id_format allows it,
 * so `escrowctl tenant create` refuses it). */
#define AUTH_TENANT_ADMIN "*"
/* Keys one daemon keeps in memory (~120 bytes each); more rows are ignored
 * with a warning. */
#define AUTH_KEYS_MAX 65536

/* Who may send an operation (wire.h's WIRE_ACCESS_* use these values). */
enum { AUTH_ACCESS_TENANT = 1, AUTH_ACCESS_ADMIN = 2, AUTH_ACCESS_INTERNAL = 3 };
/* Kinds of keys. */
enum { AUTH_KIND_TENANT = 1, AUTH_KIND_ADMIN = 2, AUTH_KIND_CLUSTER = 3 };

typedef struct auth_key {
    char key_id[AUTH_KEY_ID_LEN + 1];
    char tenant_id[ESC_TENANT_LEN_MAX + 1]; /* "*" for admin keys, "" for the cluster key */
    uint8_t hash[AUTH_HASH_BYTES];
    int kind; /* AUTH_KIND_* */
} auth_key;

/* The live keys, sorted by key_id (auth_keys_sort), looked up by binary
 * search. Built whole by a reload and then swapped in: never changed while
 * requests are checked against it. */
typedef struct auth_keys {
    auth_key *v; /* owned */
    size_t n, cap;
} auth_keys;

/* sodium_init(); call once before anything else here. Returns 0 or ESC_EINTERNAL. */
int auth_init(void);

/* 64 random bits (randombytes_buf), e.g. a per-process hash seed. */
uint64_t auth_random_u64(void);

/* A new key: text (shown once, NUL-terminated), its id and its hash.
 * Returns 0 (libsodium's generator does not fail once initialised). */
int auth_key_new(char text[AUTH_TEXT_LEN + 1], char key_id[AUTH_KEY_ID_LEN + 1],
                 uint8_t hash[AUTH_HASH_BYTES]);

/* Parses cred (len bytes, not NUL-terminated; trailing whitespace such as a
 * file's newline is ignored). Returns 0 with key_id and the hash of its
 * secret, or ESC_EAUTH if it is not a well-formed key. */
int auth_key_parse(const void *cred, size_t len, char key_id[AUTH_KEY_ID_LEN + 1],
                   uint8_t hash[AUTH_HASH_BYTES]);

/* Hex of a hash (lowercase, NUL-terminated) and back (0 or ESC_EINVAL). */
void auth_hash_hex(const uint8_t hash[AUTH_HASH_BYTES], char hex[AUTH_HASH_HEX_LEN + 1]);
int auth_hash_from_hex(const char *hex, uint8_t hash[AUTH_HASH_BYTES]);

/* True if s is a well-formed key id. */
bool auth_key_id_valid(const char *s);

void auth_keys_init(auth_keys *k);
void auth_keys_fini(auth_keys *k);
/* Appends a key (unsorted until auth_keys_sort). Returns 0, ESC_EINVAL (bad
 * id, tenant or kind), ESC_ETOOBIG over AUTH_KEYS_MAX, or ESC_ENOMEM. */
int auth_keys_add(auth_keys *k, const auth_key *key);
void auth_keys_sort(auth_keys *k);
const auth_key *auth_keys_find(const auth_keys *k, const char *key_id);

/* Checks a credential for a request of access class `access` (AUTH_ACCESS_*)
 * about tenant_id ("" when the request names none). cluster: the cluster
 * key, or NULL when none is configured. Returns 0 or ESC_EAUTH with a
 * sentence in why (why_len bytes); *unknown_id is set when the credential
 * was well formed but its key id is in neither table (the caller may
 * re-read its keys: the key may be new). */
int auth_verify(const auth_keys *keys, const auth_key *cluster, int access, const char *tenant_id,
                const void *cred, size_t len, bool *unknown_id, char *why, size_t why_len);

#endif

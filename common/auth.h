/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth.h - escrow credentials: the key format, key generation, the
 * signature of a request frame, and the verification of one signed frame
 * against a table of keys.
 *
 * Pure: libsodium for randomness, hashing, MACs and constant-time
 * comparison (no hand-written crypto), no I/O; time is a parameter. The
 * daemons load the table from PostgreSQL (auth_guard.h); escrowctl
 * generates keys with auth_key_new; proto/ signs every frame it encodes.
 *
 * A key is shown once, as text:  esk_<key_id>_<secret>
 *   key_id  AUTH_KEY_ID_LEN lowercase hex characters (8 random bytes): names
 *           the key in the table, in logs and in `escrowctl key revoke`;
 *   secret  32 random bytes (randombytes_buf), base64url without padding.
 * The database stores only hash = BLAKE2b-256(secret || key_id)
 * (crypto_generichash), per key, never the text: a hash copied to another
 * key id does not verify. Because the secret is 256 random bits, a fast
 * hash is enough (no password hashing).
 *
 * Signing. The key's text never travels. The hash above is also the key's
 * signing key: a client derives it from the text (auth_key_parse), a daemon
 * reads it from the table. A frame carries the key id, the signer's wall
 * clock (sent_at_ms), a nonce and MAC = BLAKE2b-256 keyed with the signing
 * key over "escrow-frame-v1" and the frame's bytes up to the MAC
 * (auth_mac). A verifier accepts a frame whose MAC is right and whose
 * sent_at_ms is within window_ms of its own clock, either way. So the table
 * now holds what signs frames: whoever reads it can sign as any of its keys
 * (the same is true of every shared-key MAC); it stays useless for the key's
 * text, which the database never had. Verifying costs one keyed BLAKE2b of
 * the frame (a few hundred bytes) and one sodium_memcmp.
 *
 * Kinds. A tenant key (tenant_id = the shop) may send that tenant's
 * requests only. An admin key (tenant_id "*") may send the operator's
 * requests (AdminReq, quota moves, operator release) and any tenant's
 * requests. The cluster key (one per deployment, from a file, never in the
 * table) may send the daemons' internal requests only: heartbeats and quota
 * status/offers between coordinators.
 *
 * Invariants: a request is accepted only when its key id is in the table
 * (or is the cluster key's), its MAC is the one that key makes over its
 * bytes, its sent_at_ms is inside the window, and the key's kind and
 * tenant fit the request's access class and tenant.
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
#define AUTH_MAC_BYTES 32
/* How far a frame's sent_at_ms may be from the verifier's clock, either
 * way: the default and the bounds of the daemons' --auth-window-ms. It
 * must cover clock skew between machines plus the time a frame waits in
 * queues; a frame replayed later than this is refused. */
#define AUTH_WINDOW_MS_DEFAULT 30000u
#define AUTH_WINDOW_MS_MIN 1000u
#define AUTH_WINDOW_MS_MAX 600000u

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
    uint32_t *by_tenant; /* owned: indexes into v by (tenant_id, key_id), from auth_keys_sort */
} auth_keys;

/* A frame's signature as the decoder found it (wire.h's wire_head): every
 * pointer is borrowed from the frame, valid during the check only. */
typedef struct auth_sig {
    const char *key_id;       /* "" when the frame is not signed */
    int64_t sent_at_ms;       /* the signer's wall clock, unix ms */
    const uint8_t *mac;       /* AUTH_MAC_BYTES, NULL when not signed */
    const void *signed_bytes; /* the frame up to its MAC field */
    size_t signed_len;
    size_t cleartext_len; /* bytes in the retired cleartext credential field */
} auth_sig;

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
/* Sorts by key id and builds the tenant index. Returns 0 or ESC_ENOMEM
 * (the table then has no tenant index: auth_keys_tenant finds nothing). */
int auth_keys_sort(auth_keys *k);
const auth_key *auth_keys_find(const auth_keys *k, const char *key_id);
/* The keys of one tenant: returns how many, and *first such that
 * auth_keys_tenant_at(k, *first + i) for i < that count are they. */
size_t auth_keys_tenant(const auth_keys *k, const char *tenant_id, size_t *first);
const auth_key *auth_keys_tenant_at(const auth_keys *k, size_t i);

/* The MAC of a frame's signed bytes with a key's signing key (its hash). */
void auth_mac(const uint8_t key[AUTH_HASH_BYTES], const void *bytes, size_t len,
              uint8_t mac[AUTH_MAC_BYTES]);

/* A nonce for the next signed frame: unique within this process (a random
 * start, then a counter; thread-safe), so that two equal requests signed
 * in the same millisecond still differ. */
uint64_t auth_nonce(void);

/* Checks a frame's signature for a request of access class `access`
 * (AUTH_ACCESS_*) about tenant_id ("" when the request names none), at the
 * verifier's wall clock now_ms with a window of window_ms. cluster: the
 * cluster key, or NULL when none is configured. Refused: no signature, a
 * cleartext credential (the retired field: the key crossed the network),
 * an unknown key id, a wrong MAC, a sent_at_ms outside the window, a key
 * whose kind or tenant does not fit. Returns 0 or ESC_EAUTH with a sentence
 * in why (why_len bytes); *unknown_id is set when the key id is in neither
 * table (the caller may re-read its keys: the key may be new). */
int auth_verify(const auth_keys *keys, const auth_key *cluster, int access, const char *tenant_id,
                const auth_sig *sig, int64_t now_ms, uint32_t window_ms, bool *unknown_id,
                char *why, size_t why_len);

#endif

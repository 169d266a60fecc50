/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_route.h - routing updates sealed per key: what a coordinator with
 * --auth on publishes on its PUB socket instead of readable routes, so that
 * a subscriber without the tenant's key learns nothing from the stream but
 * the size and rate of messages meant for others.
 *
 * Pure: libsodium only, no I/O. Each key (auth.h: its signing key, the
 * hash the table stores and the client derives from the key's text) yields
 * two subkeys by crypto_kdf: a box key and a topic tag. A sealed update is
 *     0x01 | tag (8 bytes) | nonce (24 random bytes) | secretbox(plain)
 * where plain is the clear update of wire.h (tenant_id, NUL, Route) and
 * secretbox is XSalsa20-Poly1305, which also authenticates it. The first
 * byte can never start a clear update (tenant ids are printable ASCII), the
 * tag is the subscriber's topic prefix: it names the key without naming the
 * tenant or the key id, so the stream cannot be linked to a key id seen in
 * request frames. The coordinator seals each update once per live key of
 * its tenant.
 */
#ifndef ESC_AUTH_ROUTE_H
#define ESC_AUTH_ROUTE_H

#include <stddef.h>
#include <stdint.h>

#include "auth.h"

#define AUTH_ROUTE_MARK 0x01
#define AUTH_ROUTE_TAG_BYTES 8
#define AUTH_ROUTE_TOPIC_BYTES (1 + AUTH_ROUTE_TAG_BYTES)
/* topic + nonce (24) + Poly1305 tag (16) */
#define AUTH_ROUTE_OVERHEAD (AUTH_ROUTE_TOPIC_BYTES + 24 + 16)

/* What one key seals and opens with; derived once, wiped by the owner. */
typedef struct auth_route_key {
    uint8_t box[32];
    uint8_t topic[AUTH_ROUTE_TOPIC_BYTES]; /* the SUB prefix: mark + tag */
} auth_route_key;

/* Derives rk from a key's signing key (auth_key.hash). */
void auth_route_key_derive(const uint8_t signing_key[AUTH_HASH_BYTES], auth_route_key *rk);

/* Seals plain (len bytes) into out (cap bytes). Returns 0 and *out_len, or
 * ESC_ETOOBIG when cap < len + AUTH_ROUTE_OVERHEAD. */
int auth_route_seal(const auth_route_key *rk, const void *plain, size_t len, void *out, size_t cap,
                    size_t *out_len);

/* Opens a sealed update in (len bytes) into out (cap bytes). Returns 0 and
 * *out_len; ESC_EPROTO when it is not a sealed update for rk (another
 * topic, too short) or fails authentication (tampered, another key);
 * ESC_ETOOBIG when cap is too small. */
int auth_route_open(const auth_route_key *rk, const void *in, size_t len, void *out, size_t cap,
                    size_t *out_len);

#endif

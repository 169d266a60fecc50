/* SPDX-License-Identifier: Apache-2.0 */
/*
 * auth_route.c - see auth_route.h. Every cryptographic step is libsodium's.
 */
#include "auth_route.h"

#include <string.h>

#include <sodium.h>

#include "escrow_errors.h"

/* crypto_kdf's context: exactly 8 characters. */
static const char kdf_context[crypto_kdf_CONTEXTBYTES + 1] = "escroute";
enum { SUBKEY_BOX = 1, SUBKEY_TAG = 2 };

_Static_assert(AUTH_ROUTE_OVERHEAD ==
                   AUTH_ROUTE_TOPIC_BYTES + crypto_secretbox_NONCEBYTES + crypto_secretbox_MACBYTES,
               "AUTH_ROUTE_OVERHEAD");
_Static_assert(crypto_kdf_KEYBYTES == AUTH_HASH_BYTES, "a signing key is a kdf key");
_Static_assert(crypto_secretbox_KEYBYTES == 32, "auth_route_key.box");
_Static_assert(crypto_kdf_BYTES_MIN >= AUTH_ROUTE_TAG_BYTES, "the tag fits a subkey");

void auth_route_key_derive(const uint8_t signing_key[AUTH_HASH_BYTES], auth_route_key *rk)
{
    uint8_t tag[crypto_kdf_BYTES_MIN];
    crypto_kdf_derive_from_key(rk->box, sizeof rk->box, SUBKEY_BOX, kdf_context, signing_key);
    crypto_kdf_derive_from_key(tag, sizeof tag, SUBKEY_TAG, kdf_context, signing_key);
    rk->topic[0] = AUTH_ROUTE_MARK;
    memcpy(rk->topic + 1, tag, AUTH_ROUTE_TAG_BYTES);
    sodium_memzero(tag, sizeof tag);
}

int auth_route_seal(const auth_route_key *rk, const void *plain, size_t len, void *out, size_t cap,
                    size_t *out_len)
{
    if (cap < AUTH_ROUTE_OVERHEAD || len > cap - AUTH_ROUTE_OVERHEAD) {
        return ESC_ETOOBIG;
    }
    uint8_t *p = out;
    memcpy(p, rk->topic, AUTH_ROUTE_TOPIC_BYTES);
    uint8_t *nonce = p + AUTH_ROUTE_TOPIC_BYTES;
    randombytes_buf(nonce, crypto_secretbox_NONCEBYTES);
    crypto_secretbox_easy(nonce + crypto_secretbox_NONCEBYTES, plain, len, nonce, rk->box);
    *out_len = len + AUTH_ROUTE_OVERHEAD;
    return 0;
}

int auth_route_open(const auth_route_key *rk, const void *in, size_t len, void *out, size_t cap,
                    size_t *out_len)
{
    const uint8_t *p = in;
    if (len < AUTH_ROUTE_OVERHEAD || memcmp(p, rk->topic, AUTH_ROUTE_TOPIC_BYTES) != 0) {
        return ESC_EPROTO;
    }
    size_t n = len - AUTH_ROUTE_OVERHEAD;
    if (n > cap) {
        return ESC_ETOOBIG;
    }
    const uint8_t *nonce = p + AUTH_ROUTE_TOPIC_BYTES;
    if (crypto_secretbox_open_easy(out, nonce + crypto_secretbox_NONCEBYTES,
                                   len - AUTH_ROUTE_TOPIC_BYTES - crypto_secretbox_NONCEBYTES,
                                   nonce, rk->box) != 0) {
        return ESC_EPROTO;
    }
    *out_len = n;
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_auth.c - unit tests for auth.h (key format, generation, the key
 * table and its tenant index, verification of a signed frame by access
 * class, tenant, MAC and time window), auth_replay.h (once per frame),
 * auth_route.h (sealed routes open with their key only), ratelim.h (token
 * buckets: burst, refill, many keys in a small table) and the signing and
 * check hook of wire.h (frames signed by the encoders, the hook runs before
 * the operation is decoded and its refusal is the decode's answer).
 */
#define _GNU_SOURCE /* memmem */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"
#include "auth_replay.h"
#include "auth_route.h"
#include "escrow_errors.h"
#include "ratelim.h"
#include "wire.h"

static int setup(void **state)
{
    (void)state;
    return auth_init();
}

static void test_key_roundtrip(void **state)
{
    (void)state;
    char text[AUTH_TEXT_LEN + 1], id[AUTH_KEY_ID_LEN + 1], id2[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES], hash2[AUTH_HASH_BYTES];
    assert_int_equal(auth_key_new(text, id, hash), 0);
    assert_int_equal(strlen(text), AUTH_TEXT_LEN);
    assert_memory_equal(text, "esk_", 4);
    assert_true(auth_key_id_valid(id));
    assert_int_equal(auth_key_parse(text, strlen(text), id2, hash2), 0);
    assert_string_equal(id, id2);
    assert_memory_equal(hash, hash2, AUTH_HASH_BYTES);
    /* a file's newline is tolerated */
    char line[AUTH_TEXT_LEN + 3];
    snprintf(line, sizeof line, "%s\r\n", text);
    assert_int_equal(auth_key_parse(line, strlen(line), id2, hash2), 0);
    /* hex round trip */
    char hex[AUTH_HASH_HEX_LEN + 1];
    auth_hash_hex(hash, hex);
    assert_int_equal(auth_hash_from_hex(hex, hash2), 0);
    assert_memory_equal(hash, hash2, AUTH_HASH_BYTES);
    assert_int_equal(auth_hash_from_hex("abc", hash2), ESC_EINVAL);
    hex[3] = 'x';
    assert_int_equal(auth_hash_from_hex(hex, hash2), ESC_EINVAL);
    /* two keys differ */
    char text2[AUTH_TEXT_LEN + 1];
    assert_int_equal(auth_key_new(text2, id2, hash2), 0);
    assert_string_not_equal(text, text2);
}

static void test_key_malformed(void **state)
{
    (void)state;
    char text[AUTH_TEXT_LEN + 1], id[AUTH_KEY_ID_LEN + 1];
    uint8_t hash[AUTH_HASH_BYTES];
    assert_int_equal(auth_key_new(text, id, hash), 0);
    char bad[128];
    const size_t n = strlen(text);
    assert_int_equal(auth_key_parse("", 0, id, hash), ESC_EAUTH);
    assert_int_equal(auth_key_parse(text, n - 1, id, hash), ESC_EAUTH); /* short */
    snprintf(bad, sizeof bad, "%sA", text);
    assert_int_equal(auth_key_parse(bad, strlen(bad), id, hash), ESC_EAUTH); /* long */
    memcpy(bad, text, n + 1);
    bad[0] = 'x';
    assert_int_equal(auth_key_parse(bad, n, id, hash), ESC_EAUTH); /* prefix */
    memcpy(bad, text, n + 1);
    bad[5] = 'G';
    assert_int_equal(auth_key_parse(bad, n, id, hash), ESC_EAUTH); /* key id not hex */
    memcpy(bad, text, n + 1);
    bad[4 + AUTH_KEY_ID_LEN] = '-';
    assert_int_equal(auth_key_parse(bad, n, id, hash), ESC_EAUTH); /* separator */
    memcpy(bad, text, n + 1);
    bad[n - 3] = '+';
    assert_int_equal(auth_key_parse(bad, n, id, hash), ESC_EAUTH); /* not base64url */
    memcpy(bad, text, n + 1);
    bad[n - 3] = '\0';
    assert_int_equal(auth_key_parse(bad, n, id, hash), ESC_EAUTH); /* NUL inside */
    assert_false(auth_key_id_valid("0123456789abcdeF"));
    assert_false(auth_key_id_valid("0123456789abcde"));
    assert_true(auth_key_id_valid("0123456789abcdef"));
}

/* A tenant key for t1, an admin key, a cluster key, in a table. */
typedef struct fixture {
    auth_keys keys;
    auth_key cluster;
    char t1[AUTH_TEXT_LEN + 1], admin[AUTH_TEXT_LEN + 1], clus[AUTH_TEXT_LEN + 1];
    char t1_id[AUTH_KEY_ID_LEN + 1];
} fixture;

static void fixture_init(fixture *f)
{
    memset(f, 0, sizeof *f);
    auth_keys_init(&f->keys);
    auth_key k;
    memset(&k, 0, sizeof k);
    assert_int_equal(auth_key_new(f->t1, k.key_id, k.hash), 0);
    snprintf(f->t1_id, sizeof f->t1_id, "%s", k.key_id);
    snprintf(k.tenant_id, sizeof k.tenant_id, "t1");
    k.kind = AUTH_KIND_TENANT;
    assert_int_equal(auth_keys_add(&f->keys, &k), 0);
    for (int i = 0; i < 100; i++) { /* others, so the search has work */
        char text[AUTH_TEXT_LEN + 1];
        auth_key o = k;
        assert_int_equal(auth_key_new(text, o.key_id, o.hash), 0);
        snprintf(o.tenant_id, sizeof o.tenant_id, "other-%d", i);
        assert_int_equal(auth_keys_add(&f->keys, &o), 0);
    }
    assert_int_equal(auth_key_new(f->admin, k.key_id, k.hash), 0);
    snprintf(k.tenant_id, sizeof k.tenant_id, "%s", AUTH_TENANT_ADMIN);
    k.kind = AUTH_KIND_ADMIN;
    assert_int_equal(auth_keys_add(&f->keys, &k), 0);
    auth_keys_sort(&f->keys);
    assert_int_equal(auth_key_new(f->clus, f->cluster.key_id, f->cluster.hash), 0);
    f->cluster.kind = AUTH_KIND_CLUSTER;
}

#define NOW_MS 1700000000000LL
#define WINDOW_MS 30000u
static const char payload[] = "the frame's bytes up to its mac";

/* A signature over payload by the key whose text is cred, made at sent_at:
 * "" = an unsigned frame, a text that is not a key = a cleartext one. */
static void sign_with(const char *cred, int64_t sent_at, auth_key *key, uint8_t mac[AUTH_MAC_BYTES],
                      auth_sig *sig)
{
    memset(sig, 0, sizeof *sig);
    sig->key_id = "";
    if (cred[0] == '\0') {
        return;
    }
    if (auth_key_parse(cred, strlen(cred), key->key_id, key->hash) != 0) {
        sig->cleartext_len = strlen(cred);
        return;
    }
    auth_mac(key->hash, payload, sizeof payload, mac);
    sig->key_id = key->key_id;
    sig->sent_at_ms = sent_at;
    sig->mac = mac;
    sig->signed_bytes = payload;
    sig->signed_len = sizeof payload;
}

static int verify_at(fixture *f, int access, const char *tenant, const char *cred, int64_t sent_at,
                     bool *unknown)
{
    char why[128] = "";
    bool u = false;
    auth_key key;
    uint8_t mac[AUTH_MAC_BYTES];
    auth_sig sig;
    sign_with(cred, sent_at, &key, mac, &sig);
    int rc = auth_verify(&f->keys, &f->cluster, access, tenant, &sig, NOW_MS, WINDOW_MS, &u, why,
                         sizeof why);
    if (unknown != NULL) {
        *unknown = u;
    }
    if (rc != 0) {
        assert_true(why[0] != '\0');
    }
    return rc;
}

static int verify(fixture *f, int access, const char *tenant, const char *cred, bool *unknown)
{
    return verify_at(f, access, tenant, cred, NOW_MS, unknown);
}

static void test_verify_matrix(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    /* tenant key: its own tenant's requests only */
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", f.t1, NULL), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t2", f.t1, NULL), ESC_EAUTH); /* forged */
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "", f.t1, NULL), ESC_EAUTH);
    assert_int_equal(verify(&f, AUTH_ACCESS_ADMIN, "t1", f.t1, NULL), ESC_EAUTH);
    assert_int_equal(verify(&f, AUTH_ACCESS_INTERNAL, "", f.t1, NULL), ESC_EAUTH);
    /* admin key: admin and every tenant, not internal */
    assert_int_equal(verify(&f, AUTH_ACCESS_ADMIN, "t1", f.admin, NULL), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_ADMIN, "", f.admin, NULL), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t2", f.admin, NULL), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_INTERNAL, "", f.admin, NULL), ESC_EAUTH);
    /* cluster key: internal only */
    assert_int_equal(verify(&f, AUTH_ACCESS_INTERNAL, "", f.clus, NULL), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_ADMIN, "", f.clus, NULL), ESC_EAUTH);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", f.clus, NULL), ESC_EAUTH);
    /* unsigned, cleartext (even a valid key's text), unknown id, wrong secret */
    bool unknown = true;
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", "", &unknown), ESC_EAUTH);
    assert_false(unknown);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", "hunter2", &unknown), ESC_EAUTH);
    assert_false(unknown);
    char fresh[AUTH_TEXT_LEN + 1], id[AUTH_KEY_ID_LEN + 1];
    uint8_t h[AUTH_HASH_BYTES];
    assert_int_equal(auth_key_new(fresh, id, h), 0);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", fresh, &unknown), ESC_EAUTH);
    assert_true(unknown);
    /* t1's key id with another secret: the MAC is not t1's */
    memcpy(fresh + 4, f.t1_id, AUTH_KEY_ID_LEN);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", fresh, &unknown), ESC_EAUTH);
    assert_false(unknown);
    /* no cluster key configured: internal refused */
    auth_key key;
    uint8_t mac[AUTH_MAC_BYTES];
    auth_sig sig;
    bool u;
    char why[128];
    sign_with(f.clus, NOW_MS, &key, mac, &sig);
    assert_int_equal(auth_verify(&f.keys, NULL, AUTH_ACCESS_INTERNAL, "", &sig, NOW_MS, WINDOW_MS,
                                 &u, why, sizeof why),
                     ESC_EAUTH);
    auth_keys_fini(&f.keys);
}

/* The MAC covers every byte; the clock must be inside the window. */
static void test_verify_signature(void **state)
{
    (void)state;
    fixture f;
    fixture_init(&f);
    /* the window: inclusive at both ends, refused one millisecond beyond */
    assert_int_equal(verify_at(&f, AUTH_ACCESS_TENANT, "t1", f.t1, NOW_MS - WINDOW_MS, NULL), 0);
    assert_int_equal(verify_at(&f, AUTH_ACCESS_TENANT, "t1", f.t1, NOW_MS + WINDOW_MS, NULL), 0);
    assert_int_equal(verify_at(&f, AUTH_ACCESS_TENANT, "t1", f.t1, NOW_MS - WINDOW_MS - 1, NULL),
                     ESC_EAUTH);
    assert_int_equal(verify_at(&f, AUTH_ACCESS_TENANT, "t1", f.t1, NOW_MS + WINDOW_MS + 1, NULL),
                     ESC_EAUTH);
    assert_int_equal(verify_at(&f, AUTH_ACCESS_TENANT, "t1", f.t1, 0, NULL), ESC_EAUTH);
    /* one bit anywhere in the signed bytes, or in the MAC, is refused */
    auth_key key;
    uint8_t mac[AUTH_MAC_BYTES];
    auth_sig sig;
    bool u;
    char why[128];
    sign_with(f.t1, NOW_MS, &key, mac, &sig);
    char copy[sizeof payload];
    for (size_t i = 0; i < sizeof payload; i++) {
        memcpy(copy, payload, sizeof copy);
        copy[i] ^= 0x10;
        sig.signed_bytes = copy;
        assert_int_equal(auth_verify(&f.keys, &f.cluster, AUTH_ACCESS_TENANT, "t1", &sig, NOW_MS,
                                     WINDOW_MS, &u, why, sizeof why),
                         ESC_EAUTH);
    }
    sig.signed_bytes = payload;
    sig.signed_len = sizeof payload - 1; /* a frame cut short */
    assert_int_equal(auth_verify(&f.keys, &f.cluster, AUTH_ACCESS_TENANT, "t1", &sig, NOW_MS,
                                 WINDOW_MS, &u, why, sizeof why),
                     ESC_EAUTH);
    sig.signed_len = sizeof payload;
    mac[AUTH_MAC_BYTES - 1] ^= 1;
    assert_int_equal(auth_verify(&f.keys, &f.cluster, AUTH_ACCESS_TENANT, "t1", &sig, NOW_MS,
                                 WINDOW_MS, &u, why, sizeof why),
                     ESC_EAUTH);
    mac[AUTH_MAC_BYTES - 1] ^= 1;
    assert_int_equal(auth_verify(&f.keys, &f.cluster, AUTH_ACCESS_TENANT, "t1", &sig, NOW_MS,
                                 WINDOW_MS, &u, why, sizeof why),
                     0);
    /* a valid signature with the key's text also in the cleartext field */
    sig.cleartext_len = AUTH_TEXT_LEN;
    assert_int_equal(auth_verify(&f.keys, &f.cluster, AUTH_ACCESS_TENANT, "t1", &sig, NOW_MS,
                                 WINDOW_MS, &u, why, sizeof why),
                     ESC_EAUTH);
    assert_non_null(strstr(why, "cleartext"));
    auth_keys_fini(&f.keys);
}

static void test_keys_table(void **state)
{
    (void)state;
    auth_keys k;
    auth_keys_init(&k);
    auth_key key;
    memset(&key, 0, sizeof key);
    snprintf(key.key_id, sizeof key.key_id, "0123456789abcdef");
    snprintf(key.tenant_id, sizeof key.tenant_id, "t1");
    key.kind = AUTH_KIND_ADMIN; /* admin kind needs tenant "*" */
    assert_int_equal(auth_keys_add(&k, &key), ESC_EINVAL);
    key.kind = AUTH_KIND_CLUSTER; /* never in the table */
    assert_int_equal(auth_keys_add(&k, &key), ESC_EINVAL);
    key.kind = AUTH_KIND_TENANT;
    snprintf(key.tenant_id, sizeof key.tenant_id, "*");
    assert_int_equal(auth_keys_add(&k, &key), ESC_EINVAL);
    snprintf(key.tenant_id, sizeof key.tenant_id, "t1");
    snprintf(key.key_id, sizeof key.key_id, "XYZ");
    assert_int_equal(auth_keys_add(&k, &key), ESC_EINVAL);
    assert_null(auth_keys_find(&k, "0123456789abcdef"));
    /* the tenant index: each tenant's keys, whatever the order of the rows */
    const char *tenants[] = {"t2", "t1", "t3", "t1", "t2", "t1"};
    for (int i = 0; i < 6; i++) {
        snprintf(key.key_id, sizeof key.key_id, "%016x", 0xf0 - i);
        snprintf(key.tenant_id, sizeof key.tenant_id, "%s", tenants[i]);
        assert_int_equal(auth_keys_add(&k, &key), 0);
    }
    size_t first = 99;
    assert_int_equal(auth_keys_tenant(&k, "t1", &first), 0); /* not sorted yet: no index */
    assert_int_equal(auth_keys_sort(&k), 0);
    assert_int_equal(auth_keys_tenant(&k, "t1", &first), 3);
    for (size_t i = 0; i < 3; i++) {
        assert_string_equal(auth_keys_tenant_at(&k, first + i)->tenant_id, "t1");
    }
    assert_int_equal(auth_keys_tenant(&k, "t2", &first), 2);
    assert_int_equal(auth_keys_tenant(&k, "t3", &first), 1);
    assert_string_equal(auth_keys_tenant_at(&k, first)->key_id, "00000000000000ee");
    assert_int_equal(auth_keys_tenant(&k, "t0", &first), 0);
    assert_int_equal(auth_keys_tenant(&k, "t4", &first), 0);
    auth_keys_fini(&k);
}

static void test_ratelim(void **state)
{
    (void)state;
    ratelim r;
    assert_int_equal(ratelim_init(&r, 16, 0, 0), 0); /* off */
    for (int i = 0; i < 1000; i++) {
        assert_true(ratelim_take(&r, 42, 0));
    }
    ratelim_fini(&r);
    assert_int_equal(ratelim_init(&r, 0, 10, 0), ESC_EINVAL);
    ratelim_fini(&r);
    assert_int_equal(ratelim_init(&r, 64, 10, 5), 0); /* 10/s, burst 5 */
    int64_t t = 1000000;
    for (int i = 0; i < 5; i++) {
        assert_true(ratelim_take(&r, 7, t));
    }
    assert_false(ratelim_take(&r, 7, t));
    assert_true(ratelim_take(&r, 8, t)); /* another key has its own bucket */
    t += 100000;                         /* 100 ms: one token */
    assert_true(ratelim_take(&r, 7, t));
    assert_false(ratelim_take(&r, 7, t));
    t += 3600LL * 1000000; /* an hour idle: full, not overflowed */
    for (int i = 0; i < 5; i++) {
        assert_true(ratelim_take(&r, 7, t));
    }
    assert_false(ratelim_take(&r, 7, t));
    assert_int_equal(r.refused, 3);
    /* a flood of keys in a small table never allocates and bounds a busy key */
    int allowed = 0;
    for (uint64_t k = 100; k < 100000; k++) {
        (void)ratelim_take(&r, k * 0x9e3779b97f4a7c15ULL, t);
        allowed += ratelim_take(&r, 7, t);
    }
    assert_int_equal(allowed, 0); /* the busy key is evicted last: it stays limited */
    ratelim_fini(&r);
}

/* The check hook: called with the outer frame, its refusal is the answer. */
static int seen_access;
static auth_sig seen_sig;
static char seen_key_id[AUTH_KEY_ID_LEN + 1];
static uint8_t seen_mac[AUTH_MAC_BYTES];
static int hook(const wire_head *h, char why[WIRE_WHY_MAX], void *arg)
{
    seen_access = (int)h->access;
    seen_sig = h->sig;
    snprintf(seen_key_id, sizeof seen_key_id, "%s", h->sig.key_id);
    if (h->sig.mac != NULL) {
        memcpy(seen_mac, h->sig.mac, AUTH_MAC_BYTES);
    }
    if (arg != NULL) {
        snprintf(why, WIRE_WHY_MAX, "no");
        return ESC_EAUTH;
    }
    return 0;
}

/* The hook's view of a frame verifies with key (the pointers into the
 * frame are valid while buf is). */
static bool hook_verifies(const auth_key *key)
{
    uint8_t mac[AUTH_MAC_BYTES];
    auth_mac(key->hash, seen_sig.signed_bytes, seen_sig.signed_len, mac);
    return strcmp(seen_key_id, key->key_id) == 0 && memcmp(mac, seen_mac, AUTH_MAC_BYTES) == 0;
}

static void test_wire_hook(void **state)
{
    (void)state;
    char text[AUTH_TEXT_LEN + 1];
    auth_key key;
    memset(&key, 0, sizeof key);
    assert_int_equal(auth_key_new(text, key.key_id, key.hash), 0);
    wire_request q, out;
    memset(&q, 0, sizeof q);
    q.op = WIRE_OP_RELEASE;
    q.corr_id = 5;
    snprintf(q.tenant_id, sizeof q.tenant_id, "t1");
    q.hold_id = (1ULL << 40) | 1;
    q.signer = &key;
    unsigned char buf[512];
    size_t n;
    char why[WIRE_WHY_MAX] = "";
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    /* the key's text is nowhere in the frame; its id is */
    assert_null(memmem(buf, n, text + 4 + AUTH_KEY_ID_LEN + 1, 43));
    assert_non_null(memmem(buf, n, key.key_id, AUTH_KEY_ID_LEN));
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_int_equal(seen_access, WIRE_ACCESS_TENANT);
    assert_true(hook_verifies(&key));
    assert_int_equal(seen_sig.signed_len, n - WIRE_MAC_TRAILER_BYTES);
    assert_int_equal(seen_sig.cleartext_len, 0);
    assert_true(seen_sig.sent_at_ms > 1600000000000LL);
    assert_int_equal(out.hold_id, q.hold_id);
    assert_null(out.signer);
    q.by_operator = true;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, (void *)1), ESC_EAUTH);
    assert_int_equal(seen_access, WIRE_ACCESS_ADMIN);
    assert_string_equal(why, "no");
    assert_int_equal(out.corr_id, 5);
    assert_int_equal(out.hold_id, 0); /* the operation was never decoded */
    /* the process's key signs frames that name none */
    char ptext[AUTH_TEXT_LEN + 1];
    auth_key pkey;
    memset(&pkey, 0, sizeof pkey);
    assert_int_equal(auth_key_new(ptext, pkey.key_id, pkey.hash), 0);
    assert_int_equal(wire_set_credential(ptext), 0);
    assert_int_equal(
        wire_encode_admin(1, "t1", WIRE_ADMIN_PAUSE, "tee", NULL, 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_int_equal(seen_access, WIRE_ACCESS_ADMIN);
    assert_true(hook_verifies(&pkey));
    q.signer = NULL;
    q.by_operator = false;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_true(hook_verifies(&pkey));
    /* ... unless the request asks for none (libescrow without a key) */
    q.unsigned_frame = true;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_string_equal(seen_key_id, "");
    assert_null(seen_sig.mac);
    /* two frames of the same request differ (nonce), both verify */
    unsigned char buf2[512];
    size_t n2;
    q.unsigned_frame = false;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_encode_request(&q, buf2, sizeof buf2, &n2), 0);
    assert_int_equal(n, n2);
    assert_memory_not_equal(buf, buf2, n);
    /* not a key: refused, and the process then signs nothing */
    assert_int_equal(wire_set_credential("hunter2"), ESC_EAUTH);
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_string_equal(seen_key_id, "");
    assert_int_equal(wire_set_credential(NULL), 0);
}

/* wire_sign_frame: another time, another key, or none. */
static void test_wire_resign(void **state)
{
    (void)state;
    auth_key a, b;
    char text[AUTH_TEXT_LEN + 1];
    assert_int_equal(auth_key_new(text, a.key_id, a.hash), 0);
    assert_int_equal(auth_key_new(text, b.key_id, b.hash), 0);
    wire_request q, out;
    memset(&q, 0, sizeof q);
    q.op = WIRE_OP_GET;
    snprintf(q.tenant_id, sizeof q.tenant_id, "t1");
    q.hold_id = (1ULL << 40) | 1;
    q.signer = &a;
    unsigned char buf[512], again[512];
    size_t n, m;
    char why[WIRE_WHY_MAX];
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_sign_frame(buf, n, &b, 1234, again, sizeof again, &m), 0);
    assert_int_equal(wire_decode_request_checked(again, m, &out, why, hook, NULL), 0);
    assert_true(hook_verifies(&b));
    assert_int_equal(seen_sig.sent_at_ms, 1234);
    assert_int_equal(out.hold_id, q.hold_id);
    assert_int_equal(wire_sign_frame(buf, n, NULL, 0, again, sizeof again, &m), 0);
    assert_int_equal(wire_decode_request_checked(again, m, &out, why, hook, NULL), 0);
    assert_string_equal(seen_key_id, "");
    assert_int_equal(wire_sign_frame(buf, n, &b, 0, again, 10, &m), ESC_ETOOBIG);
    assert_int_equal(wire_sign_frame("\xff\xff", 2, &b, 0, again, sizeof again, &m), ESC_EPROTO);
}

/* The replay cache: once per frame, until it expires; full = busy. */
static void test_replay(void **state)
{
    (void)state;
    auth_replay r;
    assert_int_equal(auth_replay_init(&r, 0), ESC_EINVAL);
    assert_int_equal(auth_replay_init(&r, AUTH_REPLAY_MAX + 1), ESC_EINVAL);
    assert_int_equal(auth_replay_init(&r, 4), 0);
    uint8_t mac[AUTH_MAC_BYTES];
    memset(mac, 0, sizeof mac);
    for (uint8_t i = 1; i <= 4; i++) {
        mac[0] = i;
        assert_int_equal(auth_replay_add(&r, mac, 1000 + i, 0), 0);
    }
    mac[0] = 2;
    assert_int_equal(auth_replay_add(&r, mac, 5000, 500), ESC_EAUTH); /* a replay */
    mac[0] = 5;
    assert_int_equal(auth_replay_add(&r, mac, 5000, 500), ESC_EBUSY); /* full of live frames */
    assert_int_equal(r.replays, 1);
    assert_int_equal(r.full, 1);
    /* at 1002 the first one has expired (its window alone refuses it now) */
    assert_int_equal(auth_replay_add(&r, mac, 5000, 1002), 0);
    mac[0] = 1;
    assert_int_equal(auth_replay_add(&r, mac, 5000, 1002), ESC_EBUSY);
    /* the same first 16 bytes are the same frame; byte 16 on is not looked at */
    mac[0] = 3;
    mac[20] = 9;
    assert_int_equal(auth_replay_add(&r, mac, 9000, 1002), ESC_EAUTH);
    /* everything expired: room again, nothing remembered */
    mac[0] = 2;
    assert_int_equal(auth_replay_add(&r, mac, 9000, 6000), 0);
    assert_int_equal(r.n, 1);
    auth_replay_fini(&r);
}

/* Sealed routes: only the key they were sealed for opens them. */
static void test_route_seal(void **state)
{
    (void)state;
    char text[AUTH_TEXT_LEN + 1];
    auth_key a, b;
    assert_int_equal(auth_key_new(text, a.key_id, a.hash), 0);
    assert_int_equal(auth_key_new(text, b.key_id, b.hash), 0);
    auth_route_key ra, ra2, rb;
    auth_route_key_derive(a.hash, &ra);
    auth_route_key_derive(a.hash, &ra2);
    auth_route_key_derive(b.hash, &rb);
    assert_memory_equal(&ra, &ra2, sizeof ra); /* a client derives what the coordinator does */
    assert_int_equal(ra.topic[0], AUTH_ROUTE_MARK);
    assert_memory_not_equal(ra.topic, rb.topic, AUTH_ROUTE_TOPIC_BYTES);
    const char plain[] = "shop-a\0secret launch route";
    uint8_t sealed[128], opened[128], sealed2[128];
    size_t n = 0, m = 0, n2 = 0;
    assert_int_equal(auth_route_seal(&ra, plain, sizeof plain, sealed, sizeof sealed, &n), 0);
    assert_int_equal(n, sizeof plain + AUTH_ROUTE_OVERHEAD);
    assert_memory_equal(sealed, ra.topic, AUTH_ROUTE_TOPIC_BYTES);
    assert_null(memmem(sealed, n, "secret", 6));
    assert_null(memmem(sealed, n, "shop-a", 6));
    assert_int_equal(auth_route_open(&ra, sealed, n, opened, sizeof opened, &m), 0);
    assert_int_equal(m, sizeof plain);
    assert_memory_equal(opened, plain, sizeof plain);
    /* another key: another topic, and its box does not open it either */
    assert_int_equal(auth_route_open(&rb, sealed, n, opened, sizeof opened, &m), ESC_EPROTO);
    memcpy(rb.topic, ra.topic, sizeof rb.topic);
    assert_int_equal(auth_route_open(&rb, sealed, n, opened, sizeof opened, &m), ESC_EPROTO);
    /* tampered, cut short, too small a buffer */
    sealed[n - 1] ^= 1;
    assert_int_equal(auth_route_open(&ra, sealed, n, opened, sizeof opened, &m), ESC_EPROTO);
    sealed[n - 1] ^= 1;
    assert_int_equal(
        auth_route_open(&ra, sealed, AUTH_ROUTE_OVERHEAD - 1, opened, sizeof opened, &m),
        ESC_EPROTO);
    assert_int_equal(auth_route_open(&ra, sealed, n, opened, 4, &m), ESC_ETOOBIG);
    assert_int_equal(auth_route_seal(&ra, plain, sizeof plain, sealed, 40, &n), ESC_ETOOBIG);
    /* a fresh nonce each time: the same update never looks the same twice */
    assert_int_equal(auth_route_seal(&ra, plain, sizeof plain, sealed, sizeof sealed, &n), 0);
    assert_int_equal(auth_route_seal(&ra, plain, sizeof plain, sealed2, sizeof sealed2, &n2), 0);
    assert_memory_not_equal(sealed + AUTH_ROUTE_TOPIC_BYTES, sealed2 + AUTH_ROUTE_TOPIC_BYTES,
                            n - AUTH_ROUTE_TOPIC_BYTES);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_roundtrip),    cmocka_unit_test(test_key_malformed),
        cmocka_unit_test(test_verify_matrix),    cmocka_unit_test(test_keys_table),
        cmocka_unit_test(test_ratelim),          cmocka_unit_test(test_wire_hook),
        cmocka_unit_test(test_verify_signature), cmocka_unit_test(test_wire_resign),
        cmocka_unit_test(test_replay),           cmocka_unit_test(test_route_seal),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

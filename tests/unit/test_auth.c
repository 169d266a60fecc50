/*
 * test_auth.c - unit tests for auth.h (key format, generation, the key
 * table, verification by access class and tenant), ratelim.h (token
 * buckets: burst, refill, many keys in a small table) and the check hook of
 * wire_decode_request_checked (it runs before the operation is decoded and
 * its refusal is the decode's answer).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "auth.h"
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

static int verify(fixture *f, int access, const char *tenant, const char *cred, bool *unknown)
{
    char why[128];
    bool u = false;
    int rc =
        auth_verify(&f->keys, &f->cluster, access, tenant, cred, strlen(cred), &u, why, sizeof why);
    if (unknown != NULL) {
        *unknown = u;
    }
    if (rc != 0) {
        assert_true(why[0] != '\0');
    }
    return rc;
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
    /* missing, malformed, unknown id, wrong secret for a known id */
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
    /* t1's key id with another secret */
    memcpy(fresh + 4, f.t1_id, AUTH_KEY_ID_LEN);
    assert_int_equal(verify(&f, AUTH_ACCESS_TENANT, "t1", fresh, &unknown), ESC_EAUTH);
    assert_false(unknown);
    /* no cluster key configured: internal refused */
    bool u;
    char why[64];
    assert_int_equal(auth_verify(&f.keys, NULL, AUTH_ACCESS_INTERNAL, "", f.clus, strlen(f.clus),
                                 &u, why, sizeof why),
                     ESC_EAUTH);
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
static char seen_cred[64];
static int hook(const wire_head *h, char why[WIRE_WHY_MAX], void *arg)
{
    seen_access = (int)h->access;
    snprintf(seen_cred, sizeof seen_cred, "%.*s", (int)h->credential_len,
             (const char *)h->credential);
    if (arg != NULL) {
        snprintf(why, WIRE_WHY_MAX, "no");
        return ESC_EAUTH;
    }
    return 0;
}

static void test_wire_hook(void **state)
{
    (void)state;
    wire_request q, out;
    memset(&q, 0, sizeof q);
    q.op = WIRE_OP_RELEASE;
    q.corr_id = 5;
    snprintf(q.tenant_id, sizeof q.tenant_id, "t1");
    q.hold_id = (1ULL << 40) | 1;
    q.credential = "cred-1";
    unsigned char buf[512];
    size_t n;
    char why[WIRE_WHY_MAX] = "";
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_int_equal(seen_access, WIRE_ACCESS_TENANT);
    assert_string_equal(seen_cred, "cred-1");
    assert_int_equal(out.hold_id, q.hold_id);
    assert_null(out.credential);
    q.by_operator = true;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, (void *)1), ESC_EAUTH);
    assert_int_equal(seen_access, WIRE_ACCESS_ADMIN);
    assert_string_equal(why, "no");
    assert_int_equal(out.corr_id, 5);
    assert_int_equal(out.hold_id, 0); /* the operation was never decoded */
    /* the process credential goes with frames that name none */
    assert_int_equal(wire_set_credential("proc-cred"), 0);
    assert_int_equal(
        wire_encode_admin(1, "t1", WIRE_ADMIN_PAUSE, "tee", NULL, 0, 0, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_int_equal(seen_access, WIRE_ACCESS_ADMIN);
    assert_string_equal(seen_cred, "proc-cred");
    q.credential = NULL;
    q.by_operator = false;
    assert_int_equal(wire_encode_request(&q, buf, sizeof buf, &n), 0);
    assert_int_equal(wire_decode_request_checked(buf, n, &out, why, hook, NULL), 0);
    assert_string_equal(seen_cred, "proc-cred");
    char big[ESC_CREDENTIAL_LEN_MAX + 2];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    assert_int_equal(wire_set_credential(big), ESC_ETOOBIG);
    assert_int_equal(wire_set_credential(NULL), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_key_roundtrip), cmocka_unit_test(test_key_malformed),
        cmocka_unit_test(test_verify_matrix), cmocka_unit_test(test_keys_table),
        cmocka_unit_test(test_ratelim),       cmocka_unit_test(test_wire_hook),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}

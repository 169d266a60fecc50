/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_gw_idem.c - escrow-gateway's idempotency rules: 201 for a hold this
 * request made, 200 + replay for the one the key already had, a "no" with
 * the hold showing the goal reached becomes a 200 replay only when the
 * request carried a key (confirm of the same qty, release of a cancelled
 * hold, extend of an extended one), and never otherwise; carts replay
 * only when every line did; the key's bounds.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "escrow_errors.h"
#include "gw_idem.h"

static esc_hold hold_in(esc_hold_state st, int64_t qty, int64_t sold, bool extended, bool replayed)
{
    esc_hold h;
    memset(&h, 0, sizeof h);
    h.hold_id = 1ULL << 40 | 1;
    h.state = st;
    h.qty = qty;
    h.qty_sold = sold;
    h.extended = extended;
    h.replayed = replayed;
    return h;
}

static void test_reserve(void **state)
{
    (void)state;
    esc_hold fresh = hold_in(ESC_HOLD_HELD, 1, 0, false, false);
    esc_hold again = hold_in(ESC_HOLD_HELD, 1, 0, false, true);
    gw_outcome o = gw_idem_hold(GW_OP_RESERVE, 0, &fresh, true, 0);
    assert_int_equal(o.err, 0);
    assert_int_equal(o.http, 201);
    assert_false(o.replay);
    o = gw_idem_hold(GW_OP_RESERVE, 0, &again, true, 0);
    assert_int_equal(o.http, 200);
    assert_true(o.replay);
    o = gw_idem_hold(GW_OP_RESERVE, ESC_EIDEMPOTENCY_MISMATCH, NULL, true, 0);
    assert_int_equal(o.err, ESC_EIDEMPOTENCY_MISMATCH);
    o = gw_idem_hold(GW_OP_RESERVE, 0, NULL, true, 0); /* a yes without a hold */
    assert_int_equal(o.err, ESC_EPROTO);
    /* replayed means nothing on the other calls */
    o = gw_idem_hold(GW_OP_GET, 0, &again, false, 0);
    assert_int_equal(o.http, 200);
    assert_false(o.replay);
}

static void test_transitions(void **state)
{
    (void)state;
    esc_hold sold = hold_in(ESC_HOLD_CONVERTED, 3, 2, false, false);
    esc_hold cancelled = hold_in(ESC_HOLD_CANCELLED, 1, 0, false, false);
    esc_hold expired = hold_in(ESC_HOLD_EXPIRED, 1, 0, false, false);
    esc_hold extended = hold_in(ESC_HOLD_HELD, 1, 0, true, false);
    const struct {
        gw_op op;
        int status;
        const esc_hold *h;
        bool keyed;
        int64_t qty;
        int err;
        bool replay;
    } cases[] = {
        {GW_OP_CONFIRM, ESC_ENOT_HELD, &sold, true, 2, 0, true},
        {GW_OP_CONFIRM, ESC_ENOT_HELD, &sold, true, 0, 0, true},
        {GW_OP_CONFIRM, ESC_ENOT_HELD, &sold, true, 3, ESC_ENOT_HELD, false},  /* other qty */
        {GW_OP_CONFIRM, ESC_ENOT_HELD, &sold, false, 2, ESC_ENOT_HELD, false}, /* no key */
        {GW_OP_CONFIRM, ESC_ENOT_HELD, &cancelled, true, 0, ESC_ENOT_HELD, false},
        {GW_OP_CONFIRM, ESC_EEXPIRED, &expired, true, 0, ESC_EEXPIRED, false},
        {GW_OP_RELEASE, ESC_ENOT_HELD, &cancelled, true, 0, 0, true},
        {GW_OP_RELEASE, ESC_ENOT_HELD, &sold, true, 0, ESC_ENOT_HELD, false},
        {GW_OP_RELEASE, ESC_ENOT_HELD, &cancelled, false, 0, ESC_ENOT_HELD, false},
        {GW_OP_EXTEND, ESC_EALREADY_EXTENDED, &extended, true, 0, 0, true},
        {GW_OP_EXTEND, ESC_EALREADY_EXTENDED, &extended, false, 0, ESC_EALREADY_EXTENDED, false},
        {GW_OP_EXTEND, ESC_EEXPIRED, &expired, true, 0, ESC_EEXPIRED, false},
        {GW_OP_CONFIRM, ESC_ETIMEDOUT, NULL, true, 0, ESC_ETIMEDOUT, false},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        gw_outcome o =
            gw_idem_hold(cases[i].op, cases[i].status, cases[i].h, cases[i].keyed, cases[i].qty);
        if (o.err != cases[i].err || o.replay != cases[i].replay) {
            fail_msg("case %zu: err %d replay %d, want %d %d", i, o.err, o.replay, cases[i].err,
                     cases[i].replay);
        }
        if (o.err == 0) {
            assert_int_equal(o.http, 200);
        }
    }
    gw_outcome o = gw_idem_hold(GW_OP_CONFIRM, 0, &sold, false, 0);
    assert_int_equal(o.http, 200);
}

static void test_cart(void **state)
{
    (void)state;
    esc_hold h[2] = {hold_in(ESC_HOLD_HELD, 1, 0, false, true),
                     hold_in(ESC_HOLD_HELD, 1, 0, false, false)};
    gw_outcome o = gw_idem_cart(0, h, 2);
    assert_int_equal(o.http, 201);
    assert_false(o.replay);
    h[1].replayed = true;
    o = gw_idem_cart(0, h, 2);
    assert_int_equal(o.http, 200);
    assert_true(o.replay);
    o = gw_idem_cart(ESC_ESOLD_OUT, NULL, 0);
    assert_int_equal(o.err, ESC_ESOLD_OUT);
}

static void test_keys(void **state)
{
    (void)state;
    char key[140];
    memset(key, 'k', 128);
    key[128] = '\0';
    assert_true(gw_idem_key_valid(key));
    assert_false(gw_idem_cart_key_fits(key, 1));
    key[126] = '\0';
    assert_true(gw_idem_cart_key_fits(key, 1));
    assert_false(gw_idem_cart_key_fits(key, 2));
    key[128] = 'k';
    key[129] = '\0';
    memset(key, 'k', 129);
    assert_false(gw_idem_key_valid(key));
    assert_false(gw_idem_key_valid(""));
    assert_false(gw_idem_key_valid("a key"));
    assert_false(gw_idem_key_valid(NULL));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_reserve),
        cmocka_unit_test(test_transitions),
        cmocka_unit_test(test_cart),
        cmocka_unit_test(test_keys),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

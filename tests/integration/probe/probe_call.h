/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_call.h - esc_probe's `call` and `acall`: one libescrow call through
 * the blocking API (call) or the asynchronous one (acall), printing the
 * answer and whether the call wrote its hold(s). The Answers table test
 * (tests/integration/answers.sh) drives every (call, answer) pair with them.
 *
 * --op reserve|confirm|release|extend|get|cart, with the options those take
 * (cart: --item "ITEM:QTY,..." and --key CART_KEY); "+close" after the op
 * (acall only) closes the client right after the call is accepted.
 * Prints one line:
 *   "<STATUS> out=hold|none state=<state> hold=<id> qty=<n> sold=<n>"
 *   (cart: "<STATUS> out=holds|none holds=<n> failed_line=<i>", then one
 *   "HOLD item=.. qty=.. hold=.." line per hold).
 * out= says whether the call wrote its output: for call, the esc_hold (or
 * the cart's holds) the caller passed is compared with what it held
 * before; for acall, whether the callback got a hold.
 */
#ifndef ESC_PROBE_CALL_H
#define ESC_PROBE_CALL_H

#include "probe_args.h"

int probe_call(const probe_args *args);
int probe_acall(const probe_args *args);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * esc_assert.h - ESC_ASSERT, the one assertion of every escrow product: the
 * daemons, escrowctl, libescrow and the tools (log.h includes it).
 *
 * On in every build, release included: a broken invariant is a bug, and
 * going on would answer wrongly (sell a unit twice, lose a hold), so the
 * failing file:line and expression are written to stderr as a log line
 * (message id ASSERT) and the process aborts. Only programmer errors are
 * asserted: anything from the network, PostgreSQL, a config file, argv or a
 * library caller is validated and answered with an error, so libescrow never
 * aborts its host on bad input.
 */
#ifndef ESC_ASSERT_H
#define ESC_ASSERT_H

#define ESC_ASSERT(expr) ((expr) ? (void)0 : esc_assert_fail(__FILE__, __LINE__, #expr))

/* Writes "file:line: expr" (log id ASSERT) to stderr and aborts. */
_Noreturn void esc_assert_fail(const char *file, int line, const char *expr);

#endif

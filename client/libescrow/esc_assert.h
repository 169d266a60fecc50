/*
 * esc_assert.h - libescrow's ESC_ASSERT (STYLE.md rule 15), private to the
 * library until one common/esc_assert.h serves every product.
 *
 * On in every build: a broken invariant is a bug in libescrow, and going on
 * would answer a checkout wrongly, so the line is written to stderr and the
 * process aborts. Only programmer errors are asserted; nothing a caller, the
 * network or a node sends can reach an ESC_ASSERT (those are answered with an
 * error: the library never aborts its host on bad input).
 */
#ifndef ESC_CLIENT_ASSERT_H
#define ESC_CLIENT_ASSERT_H

#include <stdio.h>
#include <stdlib.h>

#ifndef ESC_ASSERT
#define ESC_ASSERT(expr) ((expr) ? (void)0 : esc_assert_fail(__FILE__, __LINE__, #expr))

static inline _Noreturn void esc_assert_fail(const char *file, int line, const char *expr)
{
    fprintf(stderr, "%s:%d: ESC_ASSERT(%s) failed\n", file, line, expr);
    abort();
}
#endif

#endif

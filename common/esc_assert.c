/* SPDX-License-Identifier: Apache-2.0 */
/*
 * esc_assert.c - see esc_assert.h.
 */
#include "esc_assert.h"

#include <stdlib.h>

#include "log.h"

_Noreturn void esc_assert_fail(const char *file, int line, const char *expr)
{
    esc_log_write(ESC_LOG_ERROR, "ASSERT", "%s:%d: %s", file, line, expr);
    abort();
}

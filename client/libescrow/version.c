/* SPDX-License-Identifier: Apache-2.0 */
/*
 * version.c - esc_version(): the version this library was built as, from
 * the project's one version (CMake's project(), through escrow_version.h).
 */
#include "escrow.h"

const char *esc_version(void)
{
    return ESC_VERSION_STRING;
}

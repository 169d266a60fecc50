/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build_info.c - see build_info.h. The two strings come from the build
 * tree (build_info_gen.h, written by build_info.cmake at build time).
 */
#include "build_info.h"

#include "build_info_gen.h"

const char *build_info_version(void)
{
    return ESC_BUILD_VERSION;
}

const char *build_info_commit(void)
{
    return ESC_BUILD_COMMIT;
}

void build_info_print(FILE *f, const char *prog)
{
    fprintf(f, "%s %s (commit %s)\n", prog, ESC_BUILD_VERSION, ESC_BUILD_COMMIT);
}

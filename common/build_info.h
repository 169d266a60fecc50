/* SPDX-License-Identifier: Apache-2.0 */
/*
 * build_info.h - what a binary says it is: the project's version (CMake's
 * project(VERSION), common to every binary of one build) and the git
 * commit the build was made from.
 *
 * The commit is computed when the binaries are built (build_info.cmake
 * writes it into a file in the build tree; generated files are never
 * committed): `git rev-parse` of the source tree, "-dirty" appended when
 * tracked files differ from that commit. A tree without git (a release
 * tarball) says "unknown", unless the packager gives -DESC_GIT_COMMIT=...
 *
 * `--version` of every binary prints build_info_print's line; the daemons
 * export the same two values as the escrow_build_info metric.
 */
#ifndef ESC_BUILD_INFO_H
#define ESC_BUILD_INFO_H

#include <stdio.h>

/* "0.1.0": static. */
const char *build_info_version(void);
/* "1f92e4d0a1b2", "1f92e4d0a1b2-dirty" or "unknown": static. */
const char *build_info_commit(void);
/* Writes "PROG VERSION (commit COMMIT)\n" to f (the first line is what
 * help2man reads). */
void build_info_print(FILE *f, const char *prog);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe.h - what esc_probe's sub-commands share: how they fail, how they
 * print a hold, how they open libescrow.
 *
 * Conventions: every sub-command prints machine-readable lines on stdout
 * ("KEY value" or "STATUS field=value ..."), diagnostics on stderr. Exit 0
 * when the sub-command's own checks hold, 1 (PROBE_EXIT_FAIL) with
 * "esc_probe: FAIL: ..." on stderr when a guarantee broke, 2
 * (PROBE_EXIT_USAGE) on a usage error.
 */
#ifndef ESC_PROBE_H
#define ESC_PROBE_H

#include <stdint.h>
#include <stdio.h>

#include "escrow.h"
#include "probe_args.h"

#define PROBE_EXIT_FAIL 1
#define PROBE_EXIT_USAGE 2
#define PROBE_LINE_MAX 512

/* "esc_probe: FAIL: <message>" on stderr, exit PROBE_EXIT_FAIL. */
void probe_die(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* calloc that dies instead of returning NULL; the caller frees. */
void *probe_xcalloc(size_t n, size_t size);

/* The hold's state name, "none" for NULL. */
const char *probe_state_name(const esc_hold *h);
/* "<prefix>-<i>" into dst. */
void probe_format_key(char *dst, size_t cap, const char *prefix, uint64_t i);
/* "<STATUS> hold=.. seg=.. state=.. qty=.. sold=.. extended=.. expires_at_ms=..
 * buyer=.. item=.." (or "<STATUS> hold=0 state=none" for NULL) on f. */
void probe_print_outcome(FILE *f, int status, const esc_hold *h);
/* --out opened for writing (owned: fclose), NULL without --out; dies if
 * it cannot be opened. */
FILE *probe_open_out(const probe_args *args);
/* A cart's --item "ITEM:QTY[,ITEM:QTY...]" into lines (at most
 * ESC_CART_LINES_MAX; item ids point into spec, which is cut up); returns
 * how many; dies if malformed. */
size_t probe_cart_lines(char *spec, esc_cart_line *lines);

/* libescrow's options for args (strings borrowed from args): endpoint or
 * coordinator, routes, tenant, deadline, credential, and a log callback
 * that writes warnings and errors to stderr with the time. */
esc_options probe_options(const probe_args *args);

#endif

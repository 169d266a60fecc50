/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_io.h - what coord_probe's sub-commands share: their conventions
 * (positional arguments, k=v options, exit 2 on bad usage) and one raw REQ
 * connection to the coordinator (probe_req.h) with a 5 s answer deadline.
 */
#ifndef ESC_COORD_IO_H
#define ESC_COORD_IO_H

#include <stdbool.h>
#include <stddef.h>

#include "probe_req.h"
#include "wire.h"

/* "coord_probe: <msg>" on stderr, exit 2. */
void coord_fail(const char *msg) __attribute__((noreturn));
/* The value of the first "key=value" in argv[from..argc), or NULL. */
const char *coord_kv(int argc, char **argv, int from, const char *key);
/* Connects c to url and waits 200 ms (a raw socket drops what is sent
 * before it connected, and requests that are not idempotent are sent
 * once); coord_fail on error. */
void coord_open(probe_req *c, const char *url);
/* Sends buf (once, or every 500 ms with resend: for idempotent requests)
 * and decodes the reply into rep (its storage pointers lent by the
 * caller). 1 = answered, 0 = no decodable answer within 5 s. */
int coord_call(probe_req *c, const void *buf, size_t len, bool resend, wire_reply *rep);

#endif

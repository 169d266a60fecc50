/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_raw.h - esc_probe raw: frames no libescrow would send, straight at
 * one node, each case with the answer it must get.
 *
 *   raw --endpoint tcp://HOST:PORT --item I --hold ID --segment ID --key K --qty Q
 *       (an existing hold of qty Q, its segment and its key)
 *
 * Cases: bytes that are not protobuf, protobuf that is not an escrow
 * request, every field out of bounds, hold ids malformed, foreign or
 * absent, frames near and over the size limit; then plain TCP at the
 * node's port (HTTP, the wrong SP protocol, a 140 TB frame length, half a
 * frame, noise, idle connections). The node must answer each frame case
 * as expected, close each bad TCP connection, and still answer at the end.
 * Prints "CASE <name> ... -> <answer>" lines and "RAW cases=N failures=F".
 */
#ifndef ESC_PROBE_RAW_H
#define ESC_PROBE_RAW_H

#include "probe_args.h"

int probe_raw(const probe_args *args);

#endif

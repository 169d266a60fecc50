/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_record.h - esc_probe's recordings: a sale whose acknowledged
 * outcomes are written down, and the checks against them afterwards.
 *
 *   record --item I --prefix P --n N --concurrency C --out FILE [--seconds S]
 *       a flash sale, every acknowledged outcome a line:
 *       "R key hold state qty", "C|X key hold state qty_sold"
 *   verify --item I --in FILE [--every K]
 *       re-reserves recorded keys: each must get its recorded hold, in the
 *       state acknowledged for it
 *   fence-load --item I --prefix P --concurrency C --out FILE
 *              (--stop-file F | --seconds S)
 *       keeps a node busy and writes every OK with its wall time:
 *       "OK <ms> reserve|confirm <hold> <key> <state>"
 */
#ifndef ESC_PROBE_RECORD_H
#define ESC_PROBE_RECORD_H

#include "probe_args.h"

int probe_record(const probe_args *args);
int probe_verify(const probe_args *args);
int probe_fence_load(const probe_args *args);

#endif

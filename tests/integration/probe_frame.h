/*
 * probe_frame.h - esc_probe frame (probe_frame.c): one request of any kind
 * (tenant operations, operator release, admin, quota, heartbeat) with the
 * process's credential. Returns esc_probe's exit code.
 */
#ifndef ESC_PROBE_FRAME_H
#define ESC_PROBE_FRAME_H

#include <stdint.h>

typedef struct probe_frame_args {
    const char *endpoint; /* a node's or the coordinator's request endpoint */
    const char *op;       /* reserve, confirm, release, extend, get, stats, route, op-release,
                             admin-restock ... admin-reload, quota-move, quota-status, heartbeat */
    const char *tenant;
    const char *item, *key, *node; /* node: drain/undrain's node, quota's region */
    uint64_t hold_id;
    uint64_t segment_id; /* route by segment, reserve's hint */
    int64_t qty;
    uint32_t deadline_ms;
    uint32_t n; /* > 1: send n copies, one after the other, print COUNTS */
} probe_frame_args;

int probe_frame(const probe_frame_args *a);

#endif

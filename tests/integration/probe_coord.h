/*
 * probe_coord.h - esc_probe's managed-mode helpers (probe_coord.c): a fake
 * coordinator that answers heartbeats from a spec file, a reserve with a
 * segment hint, and an operator release. Each returns esc_probe's exit code.
 */
#ifndef ESC_PROBE_COORD_H
#define ESC_PROBE_COORD_H

#include <stdbool.h>
#include <stdint.h>

int probe_fake_coord(const char *endpoint, const char *spec, const char *log_path,
                     const char *stop_file, uint32_t seconds);
/* A reserve frame with a segment hint (0 = any), the client's attempt
 * number (0 = none) and, with resolve, a resolve instead (seg_void.h).
 * buyer NULL = the key. */
int probe_hint_reserve(const char *endpoint, const char *tenant, const char *item,
                       const char *buyer, const char *key, int64_t qty, uint64_t segment_id,
                       uint64_t attempt, bool resolve, uint32_t deadline_ms);
int probe_op_release(const char *endpoint, const char *tenant, uint64_t hold_id,
                     uint32_t deadline_ms);

#endif

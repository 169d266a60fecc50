/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_arena.h - proto/'s decoding memory (not for use outside proto/): a
 * bump allocator for protobuf-c's unpack and the per-thread storage that
 * decoded requests point into.
 *
 * Decoding a request allocates nothing on the heap after a thread's first
 * call: protobuf-c unpacks into the thread's arena, which the next decode
 * on the same thread reuses (decoding does not nest), and a heartbeat or a
 * quota request is copied into the thread's wire_heartbeat / wire_quota,
 * which wire_request.hb / .quota point at until that next decode.
 */
#ifndef ESC_WIRE_ARENA_H
#define ESC_WIRE_ARENA_H

#include <stddef.h>

#include <protobuf-c/protobuf-c.h>

#include "wire.h"

/* Large enough for any frame under the limit (a full heartbeat unpacks to
 * about twice its size), so that an over-long field is refused by its own
 * bound, not by the arena running out. */
enum { WIRE_ARENA_BYTES = 4 * ESC_FRAME_BYTES_MAX };

typedef struct wire_decode_mem {
    _Alignas(16) unsigned char arena[WIRE_ARENA_BYTES];
    wire_heartbeat hb;
    wire_quota quota;
} wire_decode_mem;

/* The calling thread's decoding memory, allocated on first use and freed
 * when the thread exits; NULL when out of memory. Borrowed: valid until the
 * thread ends. */
wire_decode_mem *wire_decode_mem_get(void);

/* A bump allocator over borrowed memory; free is a no-op, the whole arena
 * is dropped at once by the next wire_arena_init. */
typedef struct wire_arena {
    unsigned char *base; /* borrowed */
    size_t cap;
    size_t used;
    ProtobufCAllocator alloc; /* pass &alloc to protobuf-c's unpack */
} wire_arena;

/* Empties a over mem's arena. a must stay where it is while alloc is used. */
void wire_arena_init(wire_arena *a, wire_decode_mem *mem);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * wire_arena.c - proto/'s decoding memory (see wire_arena.h): a bump
 * allocator protobuf-c unpacks into, and one block of decoding memory per
 * thread, found through a _Thread_local pointer and freed by a pthread key
 * destructor when the thread exits.
 */
#include "wire_arena.h"

#include <pthread.h>
#include <stdlib.h>

static void *arena_alloc(void *data, size_t size)
{
    wire_arena *a = data;
    size_t off = (a->used + 15u) & ~(size_t)15u;
    if (off > a->cap || size > a->cap - off) {
        return NULL;
    }
    a->used = off + size;
    return a->base + off;
}

static void arena_free(void *data, void *ptr)
{
    (void)data;
    (void)ptr;
}

void wire_arena_init(wire_arena *a, wire_decode_mem *mem)
{
    a->base = mem->arena;
    a->cap = WIRE_ARENA_BYTES;
    a->used = 0;
    a->alloc = (ProtobufCAllocator){arena_alloc, arena_free, a};
}

static pthread_key_t mem_key;
static pthread_once_t mem_once = PTHREAD_ONCE_INIT;
static int mem_key_rc = -1;
static _Thread_local wire_decode_mem *tl_mem;

static void mem_key_init(void)
{
    mem_key_rc = pthread_key_create(&mem_key, free);
}

wire_decode_mem *wire_decode_mem_get(void)
{
    if (tl_mem != NULL) {
        return tl_mem;
    }
    if (pthread_once(&mem_once, mem_key_init) != 0 || mem_key_rc != 0) {
        return NULL;
    }
    wire_decode_mem *m = malloc(sizeof *m);
    if (m == NULL) {
        return NULL;
    }
    if (pthread_setspecific(mem_key, m) != 0) {
        free(m);
        return NULL;
    }
    tl_mem = m;
    return m;
}

/*
 * sbuf.c - see sbuf.h.
 */
#include "sbuf.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

void sbuf_init(sbuf *b)
{
    b->cap = 256;
    b->p = esc_xmalloc(b->cap);
    b->p[0] = '\0';
    b->len = 0;
    b->n = 0;
}

void sbuf_fini(sbuf *b)
{
    free(b->p);
    b->p = NULL;
}

void sbuf_reset(sbuf *b)
{
    b->len = 0;
    b->p[0] = '\0';
    b->n = 0;
}

static void reserve(sbuf *b, size_t more)
{
    if (b->len + more + 1 > b->cap) {
        while (b->len + more + 1 > b->cap) {
            b->cap *= 2;
        }
        b->p = esc_xrealloc(b->p, b->cap);
    }
}

static void put(sbuf *b, const char *s, size_t n)
{
    reserve(b, n);
    memcpy(b->p + b->len, s, n);
    b->len += n;
    b->p[b->len] = '\0';
}

void sbuf_open(sbuf *b)
{
    sbuf_reset(b);
    put(b, "{", 1);
}

void sbuf_close(sbuf *b)
{
    put(b, "}", 1);
}

static void sep(sbuf *b)
{
    if (b->n++ > 0) {
        put(b, ",", 1);
    }
}

void sbuf_i64(sbuf *b, int64_t v)
{
    char tmp[24];
    int n = snprintf(tmp, sizeof tmp, "%" PRId64, v);
    sep(b);
    put(b, tmp, (size_t)n);
}

void sbuf_str(sbuf *b, const char *s)
{
    sep(b);
    put(b, "\"", 1);
    for (; *s; s++) {
        if (*s == '"' || *s == '\\') {
            put(b, "\\", 1);
        }
        put(b, s, 1);
    }
    put(b, "\"", 1);
}

const char *sbuf_cstr(const sbuf *b)
{
    return b->p;
}

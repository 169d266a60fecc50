/*
 * sbuf.h - a growable string for building PostgreSQL array literals
 * ("{1,2,3}", "{\"a\",\"b\"}") as text parameters of one commit call.
 */
#ifndef ESC_SBUF_H
#define ESC_SBUF_H

#include <stddef.h>
#include <stdint.h>

typedef struct sbuf {
    char *p; /* owned */
    size_t len, cap;
    int n; /* elements in the current array */
} sbuf;

void sbuf_init(sbuf *b);
void sbuf_fini(sbuf *b);
void sbuf_reset(sbuf *b);
/* Array building; the daemon aborts on out-of-memory (esc_x*). */
void sbuf_open(sbuf *b);
void sbuf_close(sbuf *b);
void sbuf_i64(sbuf *b, int64_t v);
void sbuf_str(sbuf *b, const char *s); /* quoted and escaped */
const char *sbuf_cstr(const sbuf *b);

#endif

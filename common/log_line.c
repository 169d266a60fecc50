/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log_line.c - see log_line.h.
 *
 * Lines are built in the caller's buffer through a small writer that keeps
 * room for the closing "}\n" and the NUL: a JSON key and its value are
 * appended whole or not at all, so a cut line is still one valid object.
 */
#include "log_line.h"

#include <stdbool.h>
#include <stdio.h>
#include <string.h>

/* ,"suppressed":N (at most 35 bytes), "}\n" and the NUL. */
#define TAIL_RESERVE 40
#define WORDS_MAX 256

typedef struct wbuf {
    char *p;
    size_t len, cap;
    bool full;
} wbuf;

static void put(wbuf *b, const char *s, size_t n)
{
    if (b->full || b->len + n + TAIL_RESERVE > b->cap) {
        b->full = true;
        return;
    }
    memcpy(b->p + b->len, s, n);
    b->len += n;
}

static void puts_(wbuf *b, const char *s)
{
    put(b, s, strlen(s));
}

/* Length of the valid UTF-8 sequence at s (n bytes left), 0 if invalid. */
static size_t utf8_len(const unsigned char *s, size_t n)
{
    size_t len = s[0] < 0x80             ? 1
                 : (s[0] & 0xe0) == 0xc0 ? 2
                 : (s[0] & 0xf0) == 0xe0 ? 3
                 : (s[0] & 0xf8) == 0xf0 ? 4
                                         : 0;
    if (len == 0 || len > n || (len == 2 && s[0] < 0xc2) || (len == 4 && s[0] > 0xf4)) {
        return 0;
    }
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80) {
            return 0;
        }
    }
    if ((len == 3 && s[0] == 0xe0 && s[1] < 0xa0) || (len == 3 && s[0] == 0xed && s[1] >= 0xa0) ||
        (len == 4 && s[0] == 0xf0 && s[1] < 0x90) || (len == 4 && s[0] == 0xf4 && s[1] >= 0x90)) {
        return 0; /* overlong, surrogate, above U+10FFFF */
    }
    return len;
}

/* s (n bytes) as a JSON string, quotes included. */
static void put_json_str(wbuf *b, const char *s, size_t n)
{
    put(b, "\"", 1);
    const unsigned char *u = (const unsigned char *)s;
    for (size_t i = 0; i < n && !b->full;) {
        char esc[8];
        if (u[i] == '"' || u[i] == '\\') {
            esc[0] = '\\';
            esc[1] = (char)u[i];
            put(b, esc, 2);
            i++;
        } else if (u[i] < 0x20 || u[i] == 0x7f) {
            snprintf(esc, sizeof esc, "\\u%04x", u[i]);
            put(b, esc, 6);
            i++;
        } else {
            size_t len = utf8_len(u + i, n - i);
            if (len == 0) {
                put(b, "\xef\xbf\xbd", 3); /* U+FFFD */
                i++;
            } else {
                put(b, s + i, len);
                i += len;
            }
        }
    }
    put(b, "\"", 1);
}

/* ,"key":"value" whole, or nothing (the line is then full). */
static void put_pair(wbuf *b, const char *key, size_t klen, const char *val, size_t vlen)
{
    size_t mark = b->len;
    put(b, ",", 1);
    put_json_str(b, key, klen);
    put(b, ":", 1);
    put_json_str(b, val, vlen);
    if (b->full) {
        b->len = mark;
    }
}

/* One word of the message. */
typedef struct word {
    const char *s;
    size_t len;
    size_t klen; /* > 0: a context word, key = s[0..klen), value after the '=' */
} word;

static bool reserved(const char *k, size_t n)
{
    static const char *const own[] = {"ts", "level", "id", "msg", "suppressed"};
    for (size_t i = 0; i < sizeof own / sizeof own[0]; i++) {
        if (strlen(own[i]) == n && memcmp(own[i], k, n) == 0) {
            return true;
        }
    }
    return false;
}

/* The length of KEY in a KEY=VALUE word, 0 if it is not one. */
static size_t key_len(const char *s, size_t len)
{
    if (s[0] < 'a' || s[0] > 'z') {
        return 0;
    }
    size_t k = 1;
    while (k < len &&
           ((s[k] >= 'a' && s[k] <= 'z') || (s[k] >= '0' && s[k] <= '9') || s[k] == '_')) {
        k++;
    }
    if (k > LOG_LINE_KEY_LEN_MAX || k + 1 >= len || s[k] != '=' || reserved(s, k)) {
        return 0;
    }
    size_t vlen = len - k - 1;
    char last = s[len - 1];
    if (vlen == 1 && (last == ':' || last == ',' || last == ';')) {
        return 0; /* "key=:" has no value */
    }
    return k;
}

static bool key_taken(const word *w, size_t n, const char *k, size_t klen)
{
    for (size_t i = 0; i < n; i++) {
        if (w[i].klen == klen && memcmp(w[i].s, k, klen) == 0) {
            return true;
        }
    }
    return false;
}

/* Splits msg into words; marks the context words. Returns how many (the
 * words past WORDS_MAX are left out of the split: they stay free text in
 * the last word). */
static size_t split(const char *msg, word *w)
{
    size_t n = 0;
    const char *p = msg;
    while (*p != '\0') {
        while (*p == ' ' || *p == '\t') {
            p++;
        }
        if (*p == '\0') {
            break;
        }
        const char *start = p;
        if (n == WORDS_MAX - 1) {
            p += strlen(p); /* the rest is one word of text */
        } else {
            while (*p != '\0' && *p != ' ' && *p != '\t') {
                p++;
            }
        }
        w[n].s = start;
        w[n].len = (size_t)(p - start);
        size_t k = n < WORDS_MAX - 1 ? key_len(start, w[n].len) : 0;
        w[n].klen = k > 0 && !key_taken(w, n, start, k) ? k : 0;
        n++;
    }
    return n;
}

size_t log_line_json(const log_event *e, char *out, size_t cap)
{
    wbuf b = {out, 0, cap, false};
    word w[WORDS_MAX];
    size_t n = split(e->msg, w);
    char text[LOG_LINE_LEN_MAX];
    size_t tlen = 0;
    for (size_t i = 0; i < n; i++) {
        if (w[i].klen == 0 && tlen + w[i].len + 1 < sizeof text) {
            if (tlen > 0) {
                text[tlen++] = ' ';
            }
            memcpy(text + tlen, w[i].s, w[i].len);
            tlen += w[i].len;
        }
    }
    puts_(&b, "{\"ts\":");
    put_json_str(&b, e->ts, strlen(e->ts));
    put_pair(&b, "level", 5, e->level, strlen(e->level));
    put_pair(&b, "id", 2, e->id, strlen(e->id));
    put_pair(&b, "msg", 3, text, tlen);
    if (b.full) { /* the text does not fit: the keys still do */
        b.full = false;
        put_pair(&b, "msg", 3, "", 0);
    }
    for (size_t i = 0; i < n && !b.full; i++) {
        if (w[i].klen > 0) {
            const char *v = w[i].s + w[i].klen + 1;
            size_t vlen = w[i].len - w[i].klen - 1;
            char last = v[vlen - 1];
            if (last == ':' || last == ',' || last == ';') {
                vlen--;
            }
            put_pair(&b, w[i].s, w[i].klen, v, vlen);
        }
    }
    if (e->suppressed > 0) {
        char num[32];
        int len =
            snprintf(num, sizeof num, ",\"suppressed\":%llu", (unsigned long long)e->suppressed);
        memcpy(out + b.len, num, (size_t)len); /* in the reserve: never cut */
        b.len += (size_t)len;
    }
    memcpy(out + b.len, "}\n", 3);
    return b.len + 2;
}

size_t log_line_text(const log_event *e, char *out, size_t cap)
{
    char num[40] = "";
    if (e->suppressed > 0) {
        snprintf(num, sizeof num, " suppressed=%llu", (unsigned long long)e->suppressed);
    }
    int len = snprintf(out, cap, "%s %s %s %s%s\n", e->ts, e->level, e->id, e->msg, num);
    if (len < 0) {
        out[0] = '\0';
        return 0;
    }
    if ((size_t)len >= cap) {
        out[cap - 2] = '\n';
        out[cap - 1] = '\0';
        return cap - 1;
    }
    return (size_t)len;
}

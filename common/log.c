/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log.c - see log.h. The repeat table: ESC_LOG_REPEAT_SLOTS slots, each
 * one distinct line (its hash, its text, when it was last written, how
 * many identical lines were left out since). A line is looked up by its
 * hash (FNV-1a of level, id and text) and its text; a new line takes the
 * slot written longest ago, whose count is written out first.
 */
#include "log.h"

#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "log_line.h"

#define MSG_LEN_MAX 1024

int esc_log_level_current = ESC_LOG_INFO;

static const char *const level_upper[] = {"ERROR", "WARN", "INFO", "DEBUG"};
static const char *const level_lower[] = {"error", "warn", "info", "debug"};
static const char *const format_names[] = {"text", "json"};

typedef struct repeat_slot {
    uint64_t hash; /* 0 = free */
    int level;
    char id[40];
    char msg[MSG_LEN_MAX];
    int64_t last_ms; /* when it was last written */
    uint64_t suppressed;
} repeat_slot;

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static int format_current = ESC_LOG_TEXT;
static FILE *sink;                /* NULL: stderr */
static int64_t (*clock_ms)(void); /* NULL: monotonic */
static repeat_slot slots[ESC_LOG_REPEAT_SLOTS];

void esc_log_set_level(int level)
{
    esc_log_level_current = level;
}

int esc_log_level_parse(const char *name)
{
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, level_lower[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *esc_log_level_name(int level)
{
    return level >= 0 && level <= ESC_LOG_DEBUG ? level_lower[level] : "?";
}

void esc_log_set_format(int format)
{
    pthread_mutex_lock(&mu);
    format_current = format == ESC_LOG_JSON ? ESC_LOG_JSON : ESC_LOG_TEXT;
    pthread_mutex_unlock(&mu);
}

int esc_log_format_current(void)
{
    pthread_mutex_lock(&mu);
    int f = format_current;
    pthread_mutex_unlock(&mu);
    return f;
}

int esc_log_format_parse(const char *name)
{
    for (int i = 0; i < 2; i++) {
        if (strcmp(name, format_names[i]) == 0) {
            return i;
        }
    }
    return -1;
}

const char *esc_log_format_name(int format)
{
    return format == ESC_LOG_JSON ? "json" : "text";
}

static int64_t now_ms(void)
{
    if (clock_ms != NULL) {
        return clock_ms();
    }
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Writes one line now (under mu). */
static void emit(int level, const char *id, const char *msg, uint64_t suppressed)
{
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[40], stamp[64];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    snprintf(stamp, sizeof stamp, "%s.%03ldZ", when, ts.tv_nsec / 1000000L);
    if (level < 0 || level > ESC_LOG_DEBUG) {
        level = ESC_LOG_ERROR;
    }
    bool json = format_current == ESC_LOG_JSON;
    log_event e = {stamp, json ? level_lower[level] : level_upper[level], id, msg, suppressed};
    static char line[LOG_LINE_LEN_MAX]; /* under mu */
    size_t len = json ? log_line_json(&e, line, sizeof line) : log_line_text(&e, line, sizeof line);
    FILE *f = sink != NULL ? sink : stderr;
    fwrite(line, 1, len, f);
    fflush(f);
}

static uint64_t line_hash(int level, const char *id, const char *msg)
{
    uint64_t h = 1469598103934665603ull ^ (uint64_t)(level + 1);
    for (const char *p = id; *p != '\0'; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    h = (h ^ 0xff) * 1099511628211ull;
    for (const char *p = msg; *p != '\0'; p++) {
        h = (h ^ (unsigned char)*p) * 1099511628211ull;
    }
    return h != 0 ? h : 1;
}

/* The line's slot, or NULL with *victim the slot to take for it. */
static repeat_slot *find(uint64_t h, int level, const char *id, const char *msg,
                         repeat_slot **victim)
{
    *victim = &slots[0];
    for (size_t i = 0; i < ESC_LOG_REPEAT_SLOTS; i++) {
        repeat_slot *s = &slots[i];
        if (s->hash == h && s->level == level && strcmp(s->id, id) == 0 &&
            strcmp(s->msg, msg) == 0) {
            return s;
        }
        if (s->hash == 0) {
            if ((*victim)->hash != 0) {
                *victim = s;
            }
        } else if ((*victim)->hash != 0 && s->last_ms < (*victim)->last_ms) {
            *victim = s;
        }
    }
    return NULL;
}

/* Under mu: write msg unless it repeats within the window. */
static void write_or_count(int level, const char *id, const char *msg)
{
    int64_t now = now_ms();
    uint64_t h = line_hash(level, id, msg);
    repeat_slot *victim;
    repeat_slot *s = find(h, level, id, msg, &victim);
    if (s != NULL) {
        if (now - s->last_ms < ESC_LOG_REPEAT_MS) {
            s->suppressed++;
            return;
        }
        emit(level, id, msg, s->suppressed);
        s->last_ms = now;
        s->suppressed = 0;
        return;
    }
    if (victim->hash != 0 && victim->suppressed > 0) {
        emit(victim->level, victim->id, victim->msg, victim->suppressed);
    }
    victim->hash = h;
    victim->level = level;
    snprintf(victim->id, sizeof victim->id, "%s", id);
    snprintf(victim->msg, sizeof victim->msg, "%s", msg);
    victim->last_ms = now;
    victim->suppressed = 0;
    emit(level, id, msg, 0);
}

void esc_log_write(int level, const char *id, const char *fmt, ...)
{
    char msg[MSG_LEN_MAX];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    pthread_mutex_lock(&mu);
    write_or_count(level, id, msg);
    pthread_mutex_unlock(&mu);
}

void esc_log_flush_repeats(void)
{
    pthread_mutex_lock(&mu);
    int64_t now = now_ms();
    for (size_t i = 0; i < ESC_LOG_REPEAT_SLOTS; i++) {
        repeat_slot *s = &slots[i];
        if (s->hash != 0 && s->suppressed > 0 && now - s->last_ms >= ESC_LOG_REPEAT_MS) {
            emit(s->level, s->id, s->msg, s->suppressed);
            s->last_ms = now;
            s->suppressed = 0;
        }
    }
    pthread_mutex_unlock(&mu);
}

void esc_log_set_sink(FILE *f)
{
    pthread_mutex_lock(&mu);
    sink = f;
    memset(slots, 0, sizeof slots);
    pthread_mutex_unlock(&mu);
}

void esc_log_set_clock(int64_t (*fn)(void))
{
    pthread_mutex_lock(&mu);
    clock_ms = fn;
    memset(slots, 0, sizeof slots);
    pthread_mutex_unlock(&mu);
}

static void *oom(size_t n)
{
    esc_log_write(ESC_LOG_ERROR, "OOM", "out of memory allocating %zu bytes", n);
    abort();
}

void *esc_xmalloc(size_t n)
{
    void *p = malloc(n ? n : 1);
    return p ? p : oom(n);
}

void *esc_xcalloc(size_t n, size_t size)
{
    void *p = calloc(n ? n : 1, size ? size : 1);
    return p ? p : oom(n * size);
}

void *esc_xrealloc(void *p, size_t n)
{
    void *q = realloc(p, n ? n : 1);
    return q ? q : oom(n);
}

char *esc_xstrdup(const char *s)
{
    size_t n = strlen(s) + 1;
    char *p = esc_xmalloc(n);
    memcpy(p, s, n);
    return p;
}

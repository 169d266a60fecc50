/*
 * log.c - see log.h.
 */
#include "log.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

int esc_log_level_current = ESC_LOG_INFO;

static const char *const level_names[] = {"ERROR", "WARN", "INFO", "DEBUG"};

void esc_log_set_level(int level)
{
    esc_log_level_current = level;
}

int esc_log_level_parse(const char *name)
{
    static const char *const lower[] = {"error", "warn", "info", "debug"};
    for (int i = 0; i < 4; i++) {
        if (strcmp(name, lower[i]) == 0) {
            return i;
        }
    }
    return -1;
}

void esc_log_write(int level, const char *id, const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);

    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    struct tm tm;
    gmtime_r(&ts.tv_sec, &tm);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &tm);
    if (level < 0 || level > ESC_LOG_DEBUG) {
        level = ESC_LOG_ERROR;
    }
    fprintf(stderr, "%s.%03ldZ %s %s %s\n", when, ts.tv_nsec / 1000000L, level_names[level], id,
            msg);
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

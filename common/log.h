/*
 * log.h - leveled logging for the daemons and tools (not for libescrow,
 * which logs only through its host's callback).
 *
 * ESC_LOG checks the level before it formats. Lines are
 *   2026-12-01T02:19:10.123Z WARN SEG-COMMIT item=... seg=... message
 * with a stable message id so operators can grep and alert on it.
 */
#ifndef ESC_LOG_H
#define ESC_LOG_H

#include <stdlib.h>

enum esc_log_level { ESC_LOG_ERROR = 0, ESC_LOG_WARN, ESC_LOG_INFO, ESC_LOG_DEBUG };

extern int esc_log_level_current;

void esc_log_set_level(int level);
/* "error", "warn", "info", "debug" -> level; -1 if unknown. */
int esc_log_level_parse(const char *name);
void esc_log_write(int level, const char *id, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#define ESC_LOG(level, id, ...)                                                                    \
    do {                                                                                           \
        if ((level) <= esc_log_level_current) {                                                    \
            esc_log_write((level), (id), __VA_ARGS__);                                             \
        }                                                                                          \
    } while (0)

/* Programmer errors only; stays on in release builds. */
#define ESC_ASSERT(expr)                                                                           \
    do {                                                                                           \
        if (!(expr)) {                                                                             \
            esc_log_write(ESC_LOG_ERROR, "ASSERT", "%s:%d: %s", __FILE__, __LINE__, #expr);        \
            abort();                                                                               \
        }                                                                                          \
    } while (0)

/* Daemons abort with a log line on out-of-memory (STYLE.md rule 14). */
void *esc_xmalloc(size_t n);
void *esc_xcalloc(size_t n, size_t size);
void *esc_xrealloc(void *p, size_t n);
char *esc_xstrdup(const char *s);

#endif

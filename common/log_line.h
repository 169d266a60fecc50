/* SPDX-License-Identifier: Apache-2.0 */
/*
 * log_line.h - one log event rendered as one line, in text or JSON (log.h
 * says when each is used). Pure: no I/O, no clock, no allocation.
 *
 * The message of an ESC_LOG call is key=value context and free text in one
 * string ("seg=4 item=t1/tee epoch=7: a newer owner exists"). The JSON form
 * makes the context keys of their own and leaves only the free text in
 * "msg":
 *   - a word (a run of non-blank characters) of the form KEY=VALUE, KEY
 *     [a-z][a-z0-9_]* of at most LOG_LINE_KEY_LEN_MAX bytes and VALUE not
 *     empty, is context; one ':', ',' or ';' ending VALUE is punctuation of
 *     the sentence and dropped;
 *   - the first word of a key wins; a later word with the same key, and a
 *     word whose key is one of the line's own (ts, level, id, msg,
 *     suppressed), stay in the text;
 *   - every other word is free text: "msg" is those words joined by one
 *     space, in order.
 * Every value is a JSON string (a node id "7" and "n7" have one type),
 * except suppressed, a number. The keys ts, level, id and msg are always
 * there; suppressed only when lines were left out. Bytes that are not
 * UTF-8 become U+FFFD, control characters \u escapes: every line parses.
 *
 * The text form is the message as written, prefixed by time, level and id,
 * with " suppressed=N" appended when lines were left out.
 */
#ifndef ESC_LOG_LINE_H
#define ESC_LOG_LINE_H

#include <stddef.h>
#include <stdint.h>

#define LOG_LINE_KEY_LEN_MAX 32
/* Room for any rendered line: a 1 KiB message escaped, and the rest. */
#define LOG_LINE_LEN_MAX 8192

typedef struct log_event {
    const char *ts;    /* "2026-12-01T02:19:10.123Z" */
    const char *level; /* "WARN" for text, "warn" for JSON: the caller's choice */
    const char *id;    /* "SEG-FENCED" */
    const char *msg;   /* the formatted message */
    uint64_t suppressed;
} log_event;

/* Render e into out (cap bytes, at least 64), ending in '\n' and a NUL.
 * A line that does not fit is cut at a character boundary (JSON: the
 * object is still closed). Return the length without the NUL. */
size_t log_line_text(const log_event *e, char *out, size_t cap);
size_t log_line_json(const log_event *e, char *out, size_t cap);

#endif

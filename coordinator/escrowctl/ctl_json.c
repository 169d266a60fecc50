/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_json.c - see ctl_json.h.
 */
#include "ctl_json.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "log.h"

void ctl_json_init(ctl_json *j, FILE *f)
{
    memset(j, 0, sizeof *j);
    j->f = f;
}

static void write_escaped(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p != '\0'; p++) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p, f);
        } else if (*p == '\n') {
            fputs("\\n", f);
        } else if (*p == '\t') {
            fputs("\\t", f);
        } else if (*p < 0x20 || *p == 0x7f) {
            fprintf(f, "\\u%04x", (unsigned)*p);
        } else {
            fputc(*p, f);
        }
    }
    fputc('"', f);
}

/* The comma and key before a value at the current level. */
static void value_prefix(ctl_json *j, const char *key)
{
    if (j->need_comma[j->depth]) {
        fputc(',', j->f);
    }
    j->need_comma[j->depth] = true;
    if (key != NULL) {
        write_escaped(j->f, key);
        fputc(':', j->f);
    }
}

static void open_level(ctl_json *j, const char *key, char c)
{
    ESC_ASSERT(j->depth < CTL_JSON_DEPTH_MAX);
    value_prefix(j, key);
    fputc(c, j->f);
    j->depth++;
    j->need_comma[j->depth] = false;
}

static void close_level(ctl_json *j, char c)
{
    ESC_ASSERT(j->depth > 0);
    j->depth--;
    fputc(c, j->f);
}

void ctl_json_begin_obj(ctl_json *j, const char *key)
{
    open_level(j, key, '{');
}

void ctl_json_end_obj(ctl_json *j)
{
    close_level(j, '}');
}

void ctl_json_begin_arr(ctl_json *j, const char *key)
{
    open_level(j, key, '[');
}

void ctl_json_end_arr(ctl_json *j)
{
    close_level(j, ']');
}

void ctl_json_str(ctl_json *j, const char *key, const char *val)
{
    value_prefix(j, key);
    if (val == NULL) {
        fputs("null", j->f);
    } else {
        write_escaped(j->f, val);
    }
}

static bool is_integer_text(const char *s)
{
    size_t i = s[0] == '-' ? 1 : 0;
    if (s[i] == '\0' || (s[i] == '0' && s[i + 1] != '\0')) {
        return false;
    }
    for (; s[i] != '\0'; i++) {
        if (s[i] < '0' || s[i] > '9') {
            return false;
        }
    }
    return true;
}

void ctl_json_num(ctl_json *j, const char *key, const char *text)
{
    if (text != NULL && !is_integer_text(text)) {
        ctl_json_str(j, key, text);
        return;
    }
    value_prefix(j, key);
    fputs(text != NULL ? text : "null", j->f);
}

void ctl_json_i64(ctl_json *j, const char *key, int64_t v)
{
    value_prefix(j, key);
    fprintf(j->f, "%" PRId64, v);
}

void ctl_json_f64(ctl_json *j, const char *key, double v, int decimals)
{
    value_prefix(j, key);
    if (isfinite(v)) {
        fprintf(j->f, "%.*f", decimals, v);
    } else {
        fputs("null", j->f);
    }
}

void ctl_json_bool(ctl_json *j, const char *key, bool v)
{
    value_prefix(j, key);
    fputs(v ? "true" : "false", j->f);
}

void ctl_json_finish(ctl_json *j)
{
    ESC_ASSERT(j->depth == 0);
    fputc('\n', j->f);
}

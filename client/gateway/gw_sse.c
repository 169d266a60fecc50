/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_sse.c - see gw_sse.h.
 */
#include "gw_sse.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "gw_json.h"

size_t gw_sse_frame(const feed_event *e, char *buf, size_t cap)
{
    char *json = gw_json_event(e);
    if (json == NULL) {
        return 0;
    }
    /* compact JSON escapes every newline: data stays one line */
    int n =
        snprintf(buf, cap, "id: %" PRId64 "\nevent: %s\ndata: %s\n\n", e->event_id, e->kind, json);
    free(json);
    return n > 0 && (size_t)n < cap ? (size_t)n : 0;
}

int gw_sse_last_event_id(const char *s, int64_t *out)
{
    while (*s == ' ' || *s == '\t') {
        s++;
    }
    size_t n = strlen(s);
    while (n > 0 && (s[n - 1] == ' ' || s[n - 1] == '\t')) {
        n--;
    }
    if (n == 0 || n > 19 || s[0] == '0') {
        return ESC_EINVAL;
    }
    int64_t v = 0;
    for (size_t i = 0; i < n; i++) {
        if (s[i] < '0' || s[i] > '9' || v > (INT64_MAX - (s[i] - '0')) / 10) {
            return ESC_EINVAL;
        }
        v = v * 10 + (s[i] - '0');
    }
    *out = v;
    return 0;
}

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * ctl_top_filter.c - see ctl_top_filter.h.
 */
#include "ctl_top_filter.h"

#include <stdio.h>
#include <string.h>

static const char *const state_names[] = {[CTL_TOP_STATE_ANY] = "",
                                          [CTL_TOP_STATE_ACTIVE] = "active",
                                          [CTL_TOP_STATE_PAUSED] = "paused",
                                          [CTL_TOP_STATE_RETIRED] = "retired"};

/* Nothing available or held in any segment, nothing in flight, nothing
 * unallocated. */
static const char sold_out_sql[] =
    " AND i.unallocated = 0"
    " AND NOT EXISTS (SELECT 1 FROM segments s WHERE s.tenant_id = i.tenant_id"
    " AND s.item_id = i.item_id AND (s.available > 0 OR s.held > 0))"
    " AND NOT EXISTS (SELECT 1 FROM transfers t WHERE t.state = 'sent'"
    " AND t.tenant_id = i.tenant_id AND t.item_id = i.item_id)";

/* Appends a condition; with a value, as the next parameter $n. */
static void add(ctl_top_where *w, const char *fmt, const char *value)
{
    size_t n = strlen(w->sql);
    if (value != NULL) {
        w->params[w->nparams++] = value;
        snprintf(w->sql + n, sizeof w->sql - n, fmt, w->nparams);
    } else {
        snprintf(w->sql + n, sizeof w->sql - n, "%s", fmt);
    }
}

void ctl_top_filter_where(const ctl_top_filter *f, ctl_top_where *w)
{
    memset(w, 0, sizeof *w);
    snprintf(w->sql, sizeof w->sql, "TRUE");
    if (f->tenant[0] != '\0') {
        add(w, " AND i.tenant_id = $%d", f->tenant);
    }
    if (f->prefix[0] != '\0') {
        ctl_top_filter_like(f->prefix, w->like);
        add(w, " AND i.item_id LIKE $%d ESCAPE '\\'", w->like);
    }
    if (f->state != CTL_TOP_STATE_ANY) {
        add(w, " AND i.state = $%d", state_names[f->state]);
    }
    if (f->collapsed) {
        add(w, " AND i.tail_segment IS NOT NULL", NULL);
    }
    if (f->sold_out) {
        add(w, sold_out_sql, NULL);
    }
}

/* Appends " text" (or "text" at the start) to buf[cap], truncating. */
static void append(char *buf, size_t cap, const char *fmt, const char *v)
{
    size_t n = strlen(buf);
    if (n + 1 < cap) {
        snprintf(buf + n, cap - n, fmt, n > 0 ? " " : "", v);
    }
}

void ctl_top_filter_describe(const ctl_top_filter *f, char *buf, size_t cap)
{
    if (cap == 0) {
        return;
    }
    buf[0] = '\0';
    if (f->tenant[0] != '\0') {
        append(buf, cap, "%stenant=%s", f->tenant);
    }
    if (f->prefix[0] != '\0') {
        append(buf, cap, "%sprefix=%s", f->prefix);
    }
    if (f->state != CTL_TOP_STATE_ANY) {
        append(buf, cap, "%sstate=%s", state_names[f->state]);
    }
    if (f->sold_out) {
        append(buf, cap, "%s%s", "sold-out");
    }
    if (f->collapsed) {
        append(buf, cap, "%s%s", "collapsed");
    }
    if (buf[0] == '\0') {
        snprintf(buf, cap, "all items");
    }
}

void ctl_top_filter_like(const char *prefix, char out[CTL_TOP_LIKE_MAX])
{
    size_t n = 0;
    for (const char *p = prefix; *p != '\0' && n + 3 < CTL_TOP_LIKE_MAX; p++) {
        if (*p == '%' || *p == '_' || *p == '\\') {
            out[n++] = '\\';
        }
        out[n++] = *p;
    }
    out[n++] = '%';
    out[n] = '\0';
}

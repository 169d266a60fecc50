/* SPDX-License-Identifier: Apache-2.0 */
/*
 * failpoint.c - see failpoint.h. One table, filled lazily, one entry per
 * failpoint: its variable, whether it was read, and its parsed value.
 */
#include "failpoint.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"

typedef struct failpoint {
    const char *name;
    bool loaded;
    int rc;        /* of the load */
    int64_t value; /* on (1), a count or a percentage; 0 = off */
    int where;     /* FAILPOINT_NODE_EXIT only */
} failpoint;

static failpoint table[FAILPOINT_COUNT] = {
    [FAILPOINT_COMMIT_LOST_PCT] = {.name = "ESC_FAILPOINT_COMMIT_LOST_PCT"},
    [FAILPOINT_NODE_EXIT] = {.name = "ESC_FAILPOINT_NODE_EXIT"},
    [FAILPOINT_COORD_EXIT_AFTER_SENT] = {.name = "ESC_FAILPOINT_COORD_EXIT_AFTER_SENT"},
    [FAILPOINT_QUOTA_EXIT_AFTER_SENT] = {.name = "ESC_FAILPOINT_QUOTA_EXIT_AFTER_SENT"},
    [FAILPOINT_QUOTA_EXIT_AFTER_APPLY] = {.name = "ESC_FAILPOINT_QUOTA_EXIT_AFTER_APPLY"},
    [FAILPOINT_FOLLOW_CRASH_BATCH] = {.name = "ESC_FAILPOINT_FOLLOW_CRASH_BATCH"},
    [FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT] = {.name = "ESC_FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT"},
    [FAILPOINT_COORD_IGNORE_LEASE] = {.name = "ESC_FAILPOINT_COORD_IGNORE_LEASE"},
};

static const char *const where_names[] = {"", "before-commit", "after-commit", "after-give"};

const char *failpoint_where_name(failpoint_where where)
{
    return (unsigned)where < sizeof where_names / sizeof where_names[0] ? where_names[where] : "";
}

/* WHERE[:PCT]; PCT is clamped to 100 and defaults to it. */
static int parse_where(const char *v, failpoint *f)
{
    const char *colon = strchr(v, ':');
    size_t len = colon != NULL ? (size_t)(colon - v) : strlen(v);
    for (int w = FAILPOINT_BEFORE_COMMIT; w <= FAILPOINT_AFTER_GIVE; w++) {
        if (strlen(where_names[w]) == len && strncmp(v, where_names[w], len) == 0) {
            f->where = w;
            f->value = colon != NULL ? (int64_t)strtoul(colon + 1, NULL, 10) : 100;
            f->value = f->value > 100 ? 100 : f->value;
            return 0;
        }
    }
    return ESC_EINVAL;
}

/* A decimal count in 0..INT64_MAX, nothing else. */
static int parse_count(const char *v, int64_t *out)
{
    if (v[0] < '0' || v[0] > '9') {
        return ESC_EINVAL;
    }
    errno = 0;
    char *end = NULL;
    long long x = strtoll(v, &end, 10);
    if (errno != 0 || *end != '\0' || x < 0) {
        return ESC_EINVAL;
    }
    *out = (int64_t)x;
    return 0;
}

static int parse(failpoint_id id, const char *v, failpoint *f)
{
    switch (id) {
    case FAILPOINT_COMMIT_LOST_PCT:
        f->value = (int64_t)(strtoul(v, NULL, 10) % 101); /* lenient, as it always was */
        return 0;
    case FAILPOINT_NODE_EXIT:
        return v[0] == '\0' ? 0 : parse_where(v, f);
    case FAILPOINT_FOLLOW_CRASH_BATCH:
        return parse_count(v, &f->value);
    default:
        f->value = strcmp(v, "1") == 0;
        return 0;
    }
}

static const char *expected(failpoint_id id)
{
    return id == FAILPOINT_NODE_EXIT ? "expected before-commit, after-commit or after-give, "
                                       "optionally :PCT"
                                     : "expected a count";
}

int failpoint_load(failpoint_id id, char *why, size_t why_len)
{
    failpoint *f = &table[id];
    if (!f->loaded) {
        f->loaded = true;
        const char *v = getenv(f->name);
        f->rc = v != NULL ? parse(id, v, f) : 0;
        if (f->rc != 0) {
            f->value = 0;
            f->where = FAILPOINT_NOWHERE;
        }
    }
    if (f->rc != 0 && why != NULL && why_len > 0) {
        const char *v = getenv(f->name);
        snprintf(why, why_len, "%s=%s: %s", f->name, v != NULL ? v : "", expected(id));
    }
    return f->rc;
}

static const failpoint *get(failpoint_id id)
{
    (void)failpoint_load(id, NULL, 0);
    return &table[id];
}

/* True in pct % of the calls; draws only when pct > 0. */
static bool roll(int64_t pct)
{
    return pct > 0 && rand() % 100 < pct;
}

bool failpoint_commit_lost(void)
{
    return roll(get(FAILPOINT_COMMIT_LOST_PCT)->value);
}

bool failpoint_node_exit(failpoint_where where)
{
    const failpoint *f = get(FAILPOINT_NODE_EXIT);
    return f->where != FAILPOINT_NOWHERE && f->where == (int)where && roll(f->value);
}

bool failpoint_coord_exit_after_sent(void)
{
    return get(FAILPOINT_COORD_EXIT_AFTER_SENT)->value != 0;
}

bool failpoint_coord_ignore_lease(void)
{
    return get(FAILPOINT_COORD_IGNORE_LEASE)->value != 0;
}

bool failpoint_quota_exit_after_sent(void)
{
    return get(FAILPOINT_QUOTA_EXIT_AFTER_SENT)->value != 0;
}

bool failpoint_quota_exit_after_apply(void)
{
    return get(FAILPOINT_QUOTA_EXIT_AFTER_APPLY)->value != 0;
}

bool failpoint_global_exit_after_commit(void)
{
    return get(FAILPOINT_GLOBAL_EXIT_AFTER_COMMIT)->value != 0;
}

int64_t failpoint_follow_crash_batch(void)
{
    return get(FAILPOINT_FOLLOW_CRASH_BATCH)->value;
}

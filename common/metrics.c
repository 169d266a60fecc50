/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.c - see metrics.h. Values are C11 atomics, the structure is under
 * one mutex; rendering appends to a growing buffer.
 */
#include "metrics.h"

#include <math.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "escrow_errors.h"
#include "log.h"

struct metrics_series {
    char *values[METRICS_LABELS_MAX]; /* owned */
    /* counter: count; gauge: double bits; histogram: unused */
    atomic_uint_least64_t v;
    atomic_uint_least64_t sum_bits; /* histogram: double bits */
    atomic_uint_least64_t
        buckets[METRICS_BUCKETS_MAX + 1]; /* histogram: per bucket, not cumulative */
    const metrics_family *fam;            /* borrowed */
};

struct metrics_family {
    metrics_registry *reg; /* borrowed */
    metrics_type type;
    char *name;                       /* owned */
    char *help;                       /* owned */
    char *labels[METRICS_LABELS_MAX]; /* owned */
    size_t nlabels;
    double bounds[METRICS_BUCKETS_MAX];
    size_t nbounds;
    metrics_series *series[METRICS_SERIES_MAX]; /* owned */
    size_t nseries;
};

struct metrics_registry {
    pthread_mutex_t mu;
    void (*collect)(void *arg); /* run before each render; NULL = none */
    void *collect_arg;
    metrics_family *fams[METRICS_FAMILIES_MAX]; /* owned */
    size_t nfams;
};

/* ---- doubles in atomic words ---------------------------------------------- */

static uint64_t bits_of(double d)
{
    uint64_t u;
    memcpy(&u, &d, sizeof u);
    return u;
}

static double double_of(uint64_t u)
{
    double d;
    memcpy(&d, &u, sizeof d);
    return d;
}

static void atomic_double_add(atomic_uint_least64_t *a, double d)
{
    uint_least64_t old = atomic_load_explicit(a, memory_order_relaxed);
    while (!atomic_compare_exchange_weak_explicit(a, &old, bits_of(double_of(old) + d),
                                                  memory_order_relaxed, memory_order_relaxed)) {
    }
}

/* ---- registry ------------------------------------------------------------- */

/* A default mutex fails to lock only on a programmer error (EINVAL). */
static void lock(metrics_registry *r)
{
    int rc = pthread_mutex_lock(&r->mu);
    ESC_ASSERT(rc == 0);
}

static void unlock(metrics_registry *r)
{
    int rc = pthread_mutex_unlock(&r->mu);
    ESC_ASSERT(rc == 0);
}

int metrics_registry_new(metrics_registry **out)
{
    metrics_registry *r = calloc(1, sizeof *r);
    if (r == NULL) {
        return ESC_ENOMEM;
    }
    if (pthread_mutex_init(&r->mu, NULL) != 0) {
        free(r);
        return ESC_EIO;
    }
    *out = r;
    return 0;
}

void metrics_registry_on_render(metrics_registry *r, void (*collect)(void *arg), void *arg)
{
    lock(r);
    r->collect = collect;
    r->collect_arg = arg;
    unlock(r);
}

static void series_free(metrics_series *s)
{
    if (s == NULL) {
        return;
    }
    for (size_t i = 0; i < METRICS_LABELS_MAX; i++) {
        free(s->values[i]);
    }
    free(s);
}

static void family_free(metrics_family *f)
{
    if (f == NULL) {
        return;
    }
    for (size_t i = 0; i < f->nseries; i++) {
        series_free(f->series[i]);
    }
    for (size_t i = 0; i < f->nlabels; i++) {
        free(f->labels[i]);
    }
    free(f->name);
    free(f->help);
    free(f);
}

void metrics_registry_free(metrics_registry *r)
{
    if (r == NULL) {
        return;
    }
    for (size_t i = 0; i < r->nfams; i++) {
        family_free(r->fams[i]);
    }
    pthread_mutex_destroy(&r->mu);
    free(r);
}

static bool name_valid(const char *s, bool colon_ok)
{
    if (s == NULL || s[0] == '\0' || strlen(s) > METRICS_NAME_LEN_MAX) {
        return false;
    }
    for (size_t i = 0; s[i] != '\0'; i++) {
        char c = s[i];
        bool alpha =
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (colon_ok && c == ':');
        if (!alpha && !(i > 0 && c >= '0' && c <= '9')) {
            return false;
        }
    }
    return true;
}

static bool bounds_valid(const double *bounds, size_t n)
{
    if (n > METRICS_BUCKETS_MAX || (n > 0 && bounds == NULL)) {
        return false;
    }
    for (size_t i = 0; i < n; i++) {
        if (!isfinite(bounds[i]) || (i > 0 && bounds[i] <= bounds[i - 1])) {
            return false;
        }
    }
    return true;
}

static bool family_set_labels(metrics_family *f, const char *const *labels)
{
    for (size_t i = 0; labels != NULL && labels[i] != NULL; i++) {
        if (i == METRICS_LABELS_MAX || !name_valid(labels[i], false) ||
            strcmp(labels[i], "le") == 0) {
            return false;
        }
        f->labels[i] = strdup(labels[i]);
        if (f->labels[i] == NULL) {
            return false;
        }
        f->nlabels = i + 1;
    }
    return true;
}

static metrics_family *family_new(metrics_type type, const char *name, const char *help,
                                  const char *const *labels, const double *bounds, size_t nbounds)
{
    if (!name_valid(name, true) || (type == METRICS_HISTOGRAM && !bounds_valid(bounds, nbounds))) {
        return NULL;
    }
    metrics_family *f = calloc(1, sizeof *f);
    if (f == NULL) {
        return NULL;
    }
    f->type = type;
    f->name = strdup(name);
    f->help = strdup(help != NULL ? help : "");
    if (f->name == NULL || f->help == NULL || !family_set_labels(f, labels)) {
        family_free(f);
        return NULL;
    }
    if (type == METRICS_HISTOGRAM && nbounds > 0) {
        memcpy(f->bounds, bounds, nbounds * sizeof bounds[0]);
        f->nbounds = nbounds;
    }
    return f;
}

metrics_family *metrics_family_add(metrics_registry *r, metrics_type type, const char *name,
                                   const char *help, const char *const *labels,
                                   const double *bounds, size_t nbounds)
{
    if (r == NULL) {
        return NULL;
    }
    metrics_family *f = family_new(type, name, help, labels, bounds, nbounds);
    if (f == NULL) {
        return NULL;
    }
    f->reg = r;
    lock(r);
    bool ok = r->nfams < METRICS_FAMILIES_MAX;
    for (size_t i = 0; ok && i < r->nfams; i++) {
        ok = strcmp(r->fams[i]->name, name) != 0;
    }
    if (ok) {
        r->fams[r->nfams++] = f;
    }
    unlock(r);
    if (!ok) {
        family_free(f);
        return NULL;
    }
    return f;
}

/* ---- series --------------------------------------------------------------- */

static bool series_matches(const metrics_family *f, const metrics_series *s,
                           const char *const *values)
{
    for (size_t i = 0; i < f->nlabels; i++) {
        const char *v = values[i] != NULL ? values[i] : "";
        if (strncmp(s->values[i], v, METRICS_LABEL_VALUE_LEN_MAX) != 0) {
            return false;
        }
    }
    return true;
}

static metrics_series *series_new(const metrics_family *f, const char *const *values)
{
    metrics_series *s = calloc(1, sizeof *s);
    if (s == NULL) {
        return NULL;
    }
    s->fam = f;
    for (size_t i = 0; i < f->nlabels; i++) {
        const char *v = values[i] != NULL ? values[i] : "";
        s->values[i] = strndup(v, METRICS_LABEL_VALUE_LEN_MAX);
        if (s->values[i] == NULL) {
            series_free(s);
            return NULL;
        }
    }
    return s;
}

metrics_series *metrics_series_get(metrics_family *f, const char *const *values)
{
    if (f == NULL) {
        return NULL;
    }
    static const char *const none[METRICS_LABELS_MAX] = {NULL};
    if (values == NULL) {
        values = none;
    }
    metrics_series *found = NULL;
    lock(f->reg);
    for (size_t i = 0; i < f->nseries && found == NULL; i++) {
        if (series_matches(f, f->series[i], values)) {
            found = f->series[i];
        }
    }
    if (found == NULL && f->nseries < METRICS_SERIES_MAX) {
        found = series_new(f, values);
        if (found != NULL) {
            f->series[f->nseries++] = found;
        }
    }
    unlock(f->reg);
    return found;
}

metrics_series *metrics_get0(metrics_family *f)
{
    return metrics_series_get(f, NULL);
}

metrics_series *metrics_get1(metrics_family *f, const char *v1)
{
    const char *v[1] = {v1};
    return metrics_series_get(f, v);
}

metrics_series *metrics_get2(metrics_family *f, const char *v1, const char *v2)
{
    const char *v[2] = {v1, v2};
    return metrics_series_get(f, v);
}

void metrics_family_clear(metrics_family *f)
{
    if (f == NULL) {
        return;
    }
    lock(f->reg);
    for (size_t i = 0; i < f->nseries; i++) {
        series_free(f->series[i]);
        f->series[i] = NULL;
    }
    f->nseries = 0;
    unlock(f->reg);
}

/* ---- updates -------------------------------------------------------------- */

void metrics_inc(metrics_series *s)
{
    metrics_add(s, 1);
}

void metrics_add(metrics_series *s, uint64_t n)
{
    if (s != NULL) {
        atomic_fetch_add_explicit(&s->v, n, memory_order_relaxed);
    }
}

void metrics_set(metrics_series *s, double v)
{
    if (s != NULL) {
        atomic_store_explicit(&s->v, bits_of(v), memory_order_relaxed);
    }
}

void metrics_gauge_add(metrics_series *s, double d)
{
    if (s != NULL) {
        atomic_double_add(&s->v, d);
    }
}

void metrics_observe(metrics_series *s, double v)
{
    if (s == NULL) {
        return;
    }
    const metrics_family *f = s->fam;
    size_t b = 0;
    while (b < f->nbounds && !(v <= f->bounds[b])) {
        b++;
    }
    atomic_double_add(&s->sum_bits, v);
    atomic_fetch_add_explicit(&s->buckets[b], 1, memory_order_relaxed);
}

double metrics_value(const metrics_series *s)
{
    if (s == NULL) {
        return 0;
    }
    metrics_series *m = (metrics_series *)s; /* atomic loads take non-const pointers */
    switch (s->fam->type) {
    case METRICS_COUNTER:
        return (double)atomic_load_explicit(&m->v, memory_order_relaxed);
    case METRICS_GAUGE:
    case METRICS_COUNTER_SET:
        return double_of(atomic_load_explicit(&m->v, memory_order_relaxed));
    default: {
        uint64_t n = 0;
        for (size_t i = 0; i <= s->fam->nbounds; i++) {
            n += atomic_load_explicit(&m->buckets[i], memory_order_relaxed);
        }
        return (double)n;
    }
    }
}

/* ---- rendering ------------------------------------------------------------ */

typedef struct out_buf {
    char *p;
    size_t len, cap;
    bool failed;
} out_buf;

static void out_put(out_buf *o, const char *s, size_t n)
{
    if (o->failed) {
        return;
    }
    if (o->len + n + 1 > o->cap) {
        size_t cap = o->cap ? o->cap : 4096;
        while (cap < o->len + n + 1) {
            cap *= 2;
        }
        char *p = realloc(o->p, cap);
        if (p == NULL) {
            o->failed = true;
            return;
        }
        o->p = p;
        o->cap = cap;
    }
    memcpy(o->p + o->len, s, n);
    o->len += n;
    o->p[o->len] = '\0';
}

static void out_str(out_buf *o, const char *s)
{
    out_put(o, s, strlen(s));
}

/* HELP text escapes \ and newline; label values also escape ". */
static void out_escaped(out_buf *o, const char *s, bool quote)
{
    for (; *s != '\0'; s++) {
        if (*s == '\\') {
            out_str(o, "\\\\");
        } else if (*s == '\n') {
            out_str(o, "\\n");
        } else if (quote && *s == '"') {
            out_str(o, "\\\"");
        } else {
            out_put(o, s, 1);
        }
    }
}

const char *metrics_format_double(double v, char *buf, size_t cap)
{
    if (isnan(v)) {
        snprintf(buf, cap, "NaN");
    } else if (isinf(v)) {
        snprintf(buf, cap, v > 0 ? "+Inf" : "-Inf");
    } else if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(buf, cap, "%.0f", v);
    } else {
        snprintf(buf, cap, "%.15g", v);
        if (strtod(buf, NULL) != v) {
            snprintf(buf, cap, "%.17g", v);
        }
    }
    return buf;
}

/* name{labels[,le="x"]} value */
static void out_sample(out_buf *o, const metrics_family *f, const metrics_series *s,
                       const char *suffix, const char *le, const char *value)
{
    out_str(o, f->name);
    out_str(o, suffix);
    if (f->nlabels > 0 || le != NULL) {
        out_str(o, "{");
        for (size_t i = 0; i < f->nlabels; i++) {
            out_str(o, i > 0 ? "," : "");
            out_str(o, f->labels[i]);
            out_str(o, "=\"");
            out_escaped(o, s->values[i], true);
            out_str(o, "\"");
        }
        if (le != NULL) {
            out_str(o, f->nlabels > 0 ? ",le=\"" : "le=\"");
            out_str(o, le);
            out_str(o, "\"");
        }
        out_str(o, "}");
    }
    out_str(o, " ");
    out_str(o, value);
    out_str(o, "\n");
}

static void out_histogram(out_buf *o, const metrics_family *f, metrics_series *s)
{
    char num[40], le[40];
    uint64_t cum = 0;
    for (size_t b = 0; b <= f->nbounds; b++) {
        cum += atomic_load_explicit(&s->buckets[b], memory_order_relaxed);
        snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
        if (b < f->nbounds) {
            metrics_format_double(f->bounds[b], le, sizeof le);
        } else {
            snprintf(le, sizeof le, "+Inf");
        }
        out_sample(o, f, s, "_bucket", le, num);
    }
    double sum = double_of(atomic_load_explicit(&s->sum_bits, memory_order_relaxed));
    out_sample(o, f, s, "_sum", NULL, metrics_format_double(sum, num, sizeof num));
    snprintf(num, sizeof num, "%llu", (unsigned long long)cum);
    out_sample(o, f, s, "_count", NULL, num);
}

static void out_family(out_buf *o, const metrics_family *f)
{
    static const char *const type_names[] = {"counter", "gauge", "histogram", "counter"};
    char num[40];
    out_str(o, "# HELP ");
    out_str(o, f->name);
    out_str(o, " ");
    out_escaped(o, f->help, false);
    out_str(o, "\n# TYPE ");
    out_str(o, f->name);
    out_str(o, " ");
    out_str(o, type_names[f->type]);
    out_str(o, "\n");
    for (size_t i = 0; i < f->nseries; i++) {
        metrics_series *s = f->series[i];
        switch (f->type) {
        case METRICS_COUNTER:
            snprintf(num, sizeof num, "%llu",
                     (unsigned long long)atomic_load_explicit(&s->v, memory_order_relaxed));
            out_sample(o, f, s, "", NULL, num);
            break;
        case METRICS_GAUGE:
        case METRICS_COUNTER_SET:
            metrics_format_double(double_of(atomic_load_explicit(&s->v, memory_order_relaxed)), num,
                                  sizeof num);
            out_sample(o, f, s, "", NULL, num);
            break;
        default:
            out_histogram(o, f, s);
            break;
        }
    }
}

int metrics_render(metrics_registry *r, char **out, size_t *len)
{
    out_buf o = {0};
    out_put(&o, "", 0); /* an empty registry renders "" */
    lock(r);
    void (*collect)(void *) = r->collect;
    void *collect_arg = r->collect_arg;
    unlock(r);
    if (collect != NULL) {
        collect(collect_arg);
    }
    lock(r);
    for (size_t i = 0; i < r->nfams; i++) {
        out_family(&o, r->fams[i]);
    }
    unlock(r);
    if (o.failed) {
        free(o.p);
        return ESC_ENOMEM;
    }
    *out = o.p;
    *len = o.len;
    return 0;
}

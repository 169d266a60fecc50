/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics.h - a small registry of Prometheus metrics (counters, gauges and
 * fixed-bucket histograms, each with up to METRICS_LABELS_MAX labels) and
 * its rendering in the Prometheus text exposition format (version 0.0.4).
 * The HTTP side is metrics_http.h; this module does no I/O.
 *
 * Threads. A daemon's libuv loop thread writes (increments, sets,
 * observes); the HTTP server's own thread reads (renders). The two are
 * kept apart like this, and the choice is deliberate:
 *   - every VALUE is a C11 atomic (a counter or bucket is an
 *     atomic_uint_least64_t bumped with relaxed fetch_add; a gauge or a
 *     histogram's sum is an atomic 64-bit word holding a double's bits,
 *     changed with a compare-and-swap loop). The hot path (a request
 *     answered, a batch committed) is one relaxed atomic add on a handle
 *     the caller looked up once: no lock, no syscall, nothing the HTTP
 *     thread can make the loop wait for.
 *   - the STRUCTURE (families, and series created on first use of a label
 *     combination) is guarded by one mutex, taken by series lookup and
 *     creation, by metrics_family_clear and by the renderer. A scrape holds
 *     it while it formats (microseconds for a few hundred series), so the
 *     loop only ever waits on it when it creates a series or clears a
 *     family during a scrape, never on the per-request path.
 * The alternative, a snapshot rendered by the loop under a mutex, would
 * make every scrape cost loop time and delay values by a period; atomics
 * make a scrape free for the loop and always current.
 *
 * Consistency: a scrape is not one instant. Different series may be read
 * a few nanoseconds apart; a histogram's buckets are read one by one, and
 * its _count is the sum of the buckets read, so count and buckets always
 * agree (the _sum may lag by the observation in progress).
 *
 * Bounds: METRICS_FAMILIES_MAX families per registry, METRICS_SERIES_MAX
 * series per family (a label combination beyond it is dropped: the lookup
 * returns NULL and updates through NULL are no-ops), METRICS_BUCKETS_MAX
 * histogram buckets. Names and label names must be valid Prometheus names
 * (checked, [a-zA-Z_:][a-zA-Z0-9_:]*); label values are escaped when
 * rendered.
 */
#ifndef ESC_METRICS_H
#define ESC_METRICS_H

#include <stddef.h>
#include <stdint.h>

#define METRICS_FAMILIES_MAX 128
#define METRICS_SERIES_MAX 512
#define METRICS_LABELS_MAX 4
#define METRICS_BUCKETS_MAX 32
#define METRICS_NAME_LEN_MAX 128
#define METRICS_LABEL_VALUE_LEN_MAX 256

typedef struct metrics_registry metrics_registry;
typedef struct metrics_family metrics_family;
typedef struct metrics_series metrics_series;

/* METRICS_COUNTER_SET: a counter whose total is read from elsewhere (CPU
 * seconds from the kernel) and stored with metrics_set, a double; it is
 * rendered as a counter. */
typedef enum {
    METRICS_COUNTER = 0,
    METRICS_GAUGE,
    METRICS_HISTOGRAM,
    METRICS_COUNTER_SET
} metrics_type;

/* A new, empty registry (*out owned by the caller: metrics_registry_free).
 * Returns 0 or ESC_ENOMEM / ESC_EIO (mutex). */
int metrics_registry_new(metrics_registry **out);
/* Frees the registry, its families and series; every handle dies with it.
 * No thread may render it any more (stop the HTTP server first). NULL-safe. */
void metrics_registry_free(metrics_registry *r);

/* A function run at the start of every metrics_render (on the renderer's
 * thread), before the registry's mutex is taken: it may set values (e.g.
 * read /proc). One per registry; NULL removes it. */
void metrics_registry_on_render(metrics_registry *r, void (*collect)(void *arg), void *arg);

/* Registers a family. name and help are copied; labels is a NULL-terminated
 * list of label names (NULL = none), copied. For a histogram, bounds are
 * the upper bounds of the buckets, strictly increasing and finite (the
 * +Inf bucket is implicit), nbounds <= METRICS_BUCKETS_MAX; both are
 * ignored for other types. Returns the family (owned by the registry), or
 * NULL for an invalid name, label or bounds, a duplicate name, a full
 * registry or out of memory. */
metrics_family *metrics_family_add(metrics_registry *r, metrics_type type, const char *name,
                                   const char *help, const char *const *labels,
                                   const double *bounds, size_t nbounds);

/* The series of f with these label values (as many as f has labels; NULL
 * entries are rendered as ""), created on first use with value 0. Values
 * are copied, cut at METRICS_LABEL_VALUE_LEN_MAX bytes. The handle stays
 * valid until metrics_family_clear(f) or metrics_registry_free. Returns
 * NULL when f is NULL, f has METRICS_SERIES_MAX series, or out of memory.
 * Takes the registry's mutex: look a handle up once and keep it on hot
 * paths. */
metrics_series *metrics_series_get(metrics_family *f, const char *const *values);
/* Shorthands for families with 0, 1 or 2 labels. */
metrics_series *metrics_get0(metrics_family *f);
metrics_series *metrics_get1(metrics_family *f, const char *v1);
metrics_series *metrics_get2(metrics_family *f, const char *v1, const char *v2);

/* Removes every series of f (e.g. a per-item gauge whose items changed);
 * their handles become invalid. */
void metrics_family_clear(metrics_family *f);

/* Updates. All are NULL-safe (a dropped series) and wait-free. */
void metrics_inc(metrics_series *s);                 /* counter += 1 */
void metrics_add(metrics_series *s, uint64_t n);     /* counter += n */
void metrics_set(metrics_series *s, double v);       /* gauge (or COUNTER_SET) = v */
void metrics_gauge_add(metrics_series *s, double d); /* gauge += d */
void metrics_observe(metrics_series *s, double v);   /* histogram */

/* Reads one value (tests, and daemons that log what they export): a
 * counter's count, a gauge's value, a histogram's observation count. 0 for
 * NULL. */
double metrics_value(const metrics_series *s);

/* Renders every family, in registration order, with # HELP and # TYPE
 * lines, series in creation order. *out is a NUL-terminated string owned by
 * the caller (free()), *len its length. Safe from any thread. Returns 0 or
 * ESC_ENOMEM (nothing is written then). */
int metrics_render(metrics_registry *r, char **out, size_t *len);

/* Formats v the way the exposition format expects ("+Inf", "-Inf", "NaN",
 * integers without a fraction, otherwise the shortest text that reads back
 * as v) into buf (at least 32 bytes). Returns buf. */
const char *metrics_format_double(double v, char *buf, size_t cap);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * conn_guard.c - see conn_guard.h. accept4 runs on nanomsg's worker
 * threads (and libmicrohttpd's), close on every thread, conn_guard_tick on
 * the daemon's loop: the tables are under one mutex, taken by close only
 * for a descriptor the guard accepted.
 */
#define _GNU_SOURCE
#include "conn_guard.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <malloc.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "escrow_errors.h"
#include "log.h"

/* Descriptors above this are passed through uncounted (4 MiB of table). */
#define FD_TABLE_MAX (1u << 20)

typedef int (*accept4_fn)(int, struct sockaddr *, socklen_t *, int);
typedef int (*close_fn)(int);

static struct {
    pthread_mutex_t mu;
    atomic_bool on;
    accept4_fn real_accept4;
    close_fn real_close;
    int spare;              /* the reserve descriptor, -1 when lost */
    uint32_t *fd_bucket;    /* fd -> its peer's bucket + 1, 0: not ours */
    uint32_t fd_n, fd_high; /* table size, highest fd + 1 ever tracked */
    uint32_t sweep_next;    /* the descriptor the idle sweep looks at next */
    uint32_t *bucket_count; /* CONN_GUARD_BUCKETS */
    uint64_t seed[2];
    uint64_t open, conns_max;
    conn_guard_cfg cfg;
    _Atomic uint64_t refused_peer, refused_total, refused_nofile, idle_closed, trims, accepted;
    uint64_t closes_since_trim;
    int64_t last_accept_ms, last_sweep_ms, last_log_ms;
    uint64_t logged[5]; /* the counts at the last CONN-FLOOD line */
    metrics_series *m_open, *m_max, *m_refused[4];
} g = {.mu = PTHREAD_MUTEX_INITIALIZER, .spare = -1};

static int64_t now_ms(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

static int sys_close(int fd)
{
    return g.real_close != NULL ? g.real_close(fd) : (int)syscall(SYS_close, fd);
}

__attribute__((constructor)) static void resolve(void)
{
    g.real_accept4 = (accept4_fn)dlsym(RTLD_NEXT, "accept4");
    g.real_close = (close_fn)dlsym(RTLD_NEXT, "close");
}

/* A keyed FNV-1a of the peer's address bytes, folded to a bucket. */
static uint32_t bucket_of(const struct sockaddr_storage *ss)
{
    const uint8_t *p = NULL;
    size_t n = 0;
    if (ss->ss_family == AF_INET) {
        p = (const uint8_t *)&((const struct sockaddr_in *)ss)->sin_addr;
        n = 4;
    } else if (ss->ss_family == AF_INET6) {
        p = (const uint8_t *)&((const struct sockaddr_in6 *)ss)->sin6_addr;
        n = 16;
    }
    uint64_t h = 1469598103934665603ull ^ g.seed[0];
    for (size_t i = 0; i < n; i++) {
        h = (h ^ p[i]) * 1099511628211ull;
    }
    h ^= g.seed[1];
    h ^= h >> 29;
    h *= 0xbf58476d1ce4e5b9ull;
    h ^= h >> 32;
    return (uint32_t)(h % CONN_GUARD_BUCKETS);
}

/* Out of descriptors: take the pending connection off the queue with the
 * spare descriptor and drop it. Without a spare (another thread took the
 * freed number), wait 10 ms so that the retry is not a spin. */
static int shed_pending(int s)
{
    atomic_fetch_add(&g.refused_nofile, 1);
    pthread_mutex_lock(&g.mu);
    if (g.spare >= 0) {
        sys_close(g.spare);
        g.spare = -1;
        int fd = g.real_accept4(s, NULL, NULL, SOCK_CLOEXEC);
        if (fd >= 0) {
            sys_close(fd);
        }
        g.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    }
    bool spare = g.spare >= 0;
    pthread_mutex_unlock(&g.mu);
    if (!spare) {
        struct timespec ts = {0, 10 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    errno = ECONNABORTED;
    return -1;
}

/* 0: tracked; else the refusal's slot (1 per peer, 2 total). */
static int admit(int fd, const struct sockaddr_storage *ss)
{
    if ((uint32_t)fd >= g.fd_n || (ss->ss_family != AF_INET && ss->ss_family != AF_INET6)) {
        return 0; /* not a TCP peer, or past the table: uncounted */
    }
    uint32_t b = bucket_of(ss);
    pthread_mutex_lock(&g.mu);
    int refuse = 0;
    if (g.open >= g.conns_max) {
        refuse = 2;
    } else if (g.cfg.per_peer_max != 0 && g.bucket_count[b] >= g.cfg.per_peer_max) {
        refuse = 1;
    } else {
        g.fd_bucket[fd] = b + 1;
        g.bucket_count[b]++;
        g.open++;
        atomic_fetch_add(&g.accepted, 1);
        g.fd_high = (uint32_t)fd + 1 > g.fd_high ? (uint32_t)fd + 1 : g.fd_high;
    }
    g.last_accept_ms = now_ms();
    pthread_mutex_unlock(&g.mu);
    return refuse;
}

/* Default visibility: the tree builds hidden, and only an exported
 * definition takes libnanomsg's calls (interposition). */
#define CONN_GUARD_EXPORT __attribute__((visibility("default")))

CONN_GUARD_EXPORT int accept4(int s, struct sockaddr *addr, socklen_t *len, int flags)
{
    if (g.real_accept4 == NULL) {
        resolve();
    }
    if (!atomic_load(&g.on)) {
        return g.real_accept4(s, addr, len, flags);
    }
    struct sockaddr_storage ss;
    socklen_t sl = sizeof ss;
    memset(&ss, 0, sizeof ss);
    int fd = g.real_accept4(s, (struct sockaddr *)&ss, &sl, flags);
    if (fd < 0) {
        return errno == EMFILE || errno == ENFILE ? shed_pending(s) : -1;
    }
    if (addr != NULL && len != NULL) {
        memcpy(addr, &ss, *len < sl ? *len : sl);
        *len = sl;
    }
    int refuse = admit(fd, &ss);
    if (refuse != 0) {
        atomic_fetch_add(refuse == 1 ? &g.refused_peer : &g.refused_total, 1);
        sys_close(fd);
        errno = ECONNABORTED;
        return -1;
    }
    return fd;
}

/* The same, for code that calls accept (libnanomsg imports both). */
CONN_GUARD_EXPORT int accept(int s, struct sockaddr *addr, socklen_t *len)
{
    return accept4(s, addr, len, 0);
}

CONN_GUARD_EXPORT int close(int fd)
{
    if (fd >= 0 && (uint32_t)fd < g.fd_n && g.fd_bucket != NULL &&
        __atomic_load_n(&g.fd_bucket[fd], __ATOMIC_RELAXED) != 0) {
        pthread_mutex_lock(&g.mu);
        uint32_t b = g.fd_bucket[fd];
        if (b != 0) {
            g.fd_bucket[fd] = 0;
            g.bucket_count[b - 1]--;
            g.open--;
            g.closes_since_trim++;
        }
        pthread_mutex_unlock(&g.mu);
    }
    return sys_close(fd);
}

int conn_guard_start(const conn_guard_cfg *cfg, uint64_t fd_limit, const char *name)
{
    struct rlimit rl;
    if (fd_limit == 0 && getrlimit(RLIMIT_NOFILE, &rl) == 0) {
        fd_limit = (uint64_t)rl.rlim_cur;
    }
    g.fd_n = fd_limit < FD_TABLE_MAX ? (uint32_t)fd_limit : FD_TABLE_MAX;
    g.fd_bucket = calloc(g.fd_n, sizeof *g.fd_bucket);
    g.bucket_count = calloc(CONN_GUARD_BUCKETS, sizeof *g.bucket_count);
    g.spare = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (g.fd_bucket == NULL || g.bucket_count == NULL || g.spare < 0 ||
        getrandom(g.seed, sizeof g.seed, 0) != (ssize_t)sizeof g.seed) {
        ESC_LOG(ESC_LOG_ERROR, "CONN-GUARD", "%s: cannot set up the connection guard", name);
        return ESC_EIO;
    }
    g.conns_max =
        fd_limit > 2 * CONN_GUARD_FD_RESERVE ? fd_limit - CONN_GUARD_FD_RESERVE : fd_limit / 2;
    g.cfg = *cfg;
    atomic_store(&g.on, true);
    ESC_LOG(ESC_LOG_INFO, "CONN-GUARD",
            "%s: at most %" PRIu64 " connections, %u per peer address, closed after %u s "
            "without a byte (0: never)",
            name, g.conns_max, cfg->per_peer_max, cfg->idle_s);
    return 0;
}

void conn_guard_set(const conn_guard_cfg *cfg)
{
    pthread_mutex_lock(&g.mu);
    g.cfg = *cfg;
    pthread_mutex_unlock(&g.mu);
}

/* Looks at the share since_ms / every_ms of the descriptor table, from
 * where the last look ended, and shuts down the tracked connections idle
 * longer than the timeout. Under the mutex: a descriptor cannot be closed
 * and reused meanwhile. */
static void sweep_idle(int64_t since_ms, int64_t every_ms)
{
    pthread_mutex_lock(&g.mu);
    uint32_t idle_ms = g.cfg.idle_s * 1000u;
    uint64_t n =
        ((uint64_t)g.fd_high * (uint64_t)since_ms + (uint64_t)every_ms - 1) / (uint64_t)every_ms;
    for (uint64_t k = 0; idle_ms != 0 && k < n && k < g.fd_high; k++) {
        uint32_t fd = g.sweep_next < g.fd_high ? g.sweep_next : 0;
        g.sweep_next = fd + 1;
        struct tcp_info ti;
        socklen_t tl = sizeof ti;
        if (g.fd_bucket[fd] == 0 || getsockopt((int)fd, IPPROTO_TCP, TCP_INFO, &ti, &tl) != 0 ||
            ti.tcpi_last_data_recv < idle_ms) {
            continue;
        }
        if (shutdown((int)fd, SHUT_RDWR) == 0) {
            atomic_fetch_add(&g.idle_closed, 1);
        }
    }
    pthread_mutex_unlock(&g.mu);
}

/* At most one line per CONN_GUARD_LOG_MS: when connections were refused
 * or closed idle, or CONN_GUARD_FLOOD or more were accepted, since the
 * last one. */
static void log_flood(int64_t now)
{
    uint64_t c[5] = {atomic_load(&g.refused_peer), atomic_load(&g.refused_total),
                     atomic_load(&g.refused_nofile), atomic_load(&g.idle_closed),
                     atomic_load(&g.accepted)};
    if (now - g.last_log_ms < CONN_GUARD_LOG_MS ||
        (memcmp(c, g.logged, 4 * sizeof c[0]) == 0 && c[4] - g.logged[4] < CONN_GUARD_FLOOD)) {
        return;
    }
    g.last_log_ms = now;
    ESC_LOG(ESC_LOG_WARN, "CONN-FLOOD",
            "accepted=%" PRIu64 " per_peer=%" PRIu64 " total_cap=%" PRIu64
            " no_descriptors=%" PRIu64 " idle_closed=%" PRIu64 " open=%" PRIu64
            ": connections accepted, refused or closed idle since the last such line",
            c[4] - g.logged[4], c[0] - g.logged[0], c[1] - g.logged[1], c[2] - g.logged[2],
            c[3] - g.logged[3], conn_guard_read().open);
    memcpy(g.logged, c, sizeof c);
}

void conn_guard_tick(int64_t now)
{
    (void)now;
    if (!atomic_load(&g.on)) {
        return;
    }
    int64_t t = now_ms();
    /* Every connection is looked at once per tenth of the timeout (1..60
     * s), spread over the ticks: each looks at its share of the table, so
     * no tick holds the loop (and nanomsg's accepts and closes, which take
     * the mutex) for a look at every connection at once. */
    int64_t every = (int64_t)g.cfg.idle_s * 100;
    every = every < 1000 ? 1000 : every > 60000 ? 60000 : every;
    if (g.cfg.idle_s != 0) {
        int64_t since = t - g.last_sweep_ms;
        g.last_sweep_ms = t;
        sweep_idle(since < every ? since : every, every);
    }
    log_flood(t);
    pthread_mutex_lock(&g.mu);
    bool trim = g.closes_since_trim >= CONN_GUARD_TRIM_CLOSES && t - g.last_accept_ms >= 1000;
    if (trim) {
        g.closes_since_trim = 0;
    }
    pthread_mutex_unlock(&g.mu);
    if (trim) {
        malloc_trim(0);
        atomic_fetch_add(&g.trims, 1);
    }
    conn_guard_counts k = conn_guard_read();
    metrics_set(g.m_open, (double)k.open);
    metrics_set(g.m_max, (double)k.conns_max);
    uint64_t r[4] = {k.refused_peer, k.refused_total, k.refused_nofile, k.idle_closed};
    for (int i = 0; i < 4; i++) {
        metrics_set(g.m_refused[i], (double)r[i]);
    }
}

bool conn_guard_on(void)
{
    return atomic_load(&g.on);
}

conn_guard_counts conn_guard_read(void)
{
    conn_guard_counts k;
    pthread_mutex_lock(&g.mu);
    k.open = g.open;
    k.conns_max = g.conns_max;
    pthread_mutex_unlock(&g.mu);
    k.refused_peer = atomic_load(&g.refused_peer);
    k.refused_total = atomic_load(&g.refused_total);
    k.refused_nofile = atomic_load(&g.refused_nofile);
    k.idle_closed = atomic_load(&g.idle_closed);
    k.trims = atomic_load(&g.trims);
    return k;
}

int conn_guard_register(metrics_registry *reg)
{
    static const char *const labels[] = {"reason", NULL};
    static const char *const reasons[] = {"per_peer", "total_cap", "no_descriptors",
                                          "idle_timeout"};
    metrics_family *o = metrics_family_add(reg, METRICS_GAUGE, "escrow_conn_open",
                                           "TCP connections accepted and open now.", NULL, NULL, 0);
    metrics_family *m = metrics_family_add(reg, METRICS_GAUGE, "escrow_conn_max",
                                           "The most TCP connections accepted at once (the "
                                           "open files limit less a reserve).",
                                           NULL, NULL, 0);
    metrics_family *r = metrics_family_add(reg, METRICS_COUNTER_SET, "escrow_conn_refused_total",
                                           "TCP connections refused at accept, or closed idle, "
                                           "by reason.",
                                           labels, NULL, 0);
    if (o == NULL || m == NULL || r == NULL) {
        return ESC_EINVAL;
    }
    g.m_open = metrics_get0(o);
    g.m_max = metrics_get0(m);
    for (int i = 0; i < 4; i++) {
        g.m_refused[i] = metrics_get1(r, reasons[i]);
    }
    return 0;
}

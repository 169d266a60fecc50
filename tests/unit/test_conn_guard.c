/* SPDX-License-Identifier: Apache-2.0 */
/*
 * test_conn_guard.c - the connection guard (common/conn_guard.h) on real
 * loopback sockets in one process: accept4 as nanomsg calls it, through the
 * guard's definition. The per-peer cap refuses exactly the connections over
 * it and counts them, a close frees a place; out of descriptors, one
 * accept4 drops the waiting connection (ECONNABORTED) and leaves the
 * listener unreadable, instead of failing with EMFILE while the connection
 * stays queued and the listener readable, which is what makes nanomsg spin.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cmocka.h>

#include "conn_guard.h"

static int listener(struct sockaddr_in *addr)
{
    int s = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
    assert_true(s >= 0);
    memset(addr, 0, sizeof *addr);
    addr->sin_family = AF_INET;
    addr->sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    assert_int_equal(bind(s, (struct sockaddr *)addr, sizeof *addr), 0);
    socklen_t len = sizeof *addr;
    assert_int_equal(getsockname(s, (struct sockaddr *)addr, &len), 0);
    assert_int_equal(listen(s, 64), 0);
    return s;
}

static int dial(const struct sockaddr_in *addr)
{
    int c = socket(AF_INET, SOCK_STREAM, 0);
    assert_true(c >= 0);
    assert_int_equal(connect(c, (const struct sockaddr *)addr, sizeof *addr), 0);
    return c;
}

/* accept4 until it answers something else than EINTR; the connection was
 * queued by connect already (loopback completes the handshake). */
static int take(int s)
{
    int fd;
    do {
        fd = accept4(s, NULL, NULL, SOCK_CLOEXEC);
    } while (fd < 0 && errno == EINTR);
    return fd;
}

static void test_per_peer_and_nofile(void **state)
{
    (void)state;
    conn_guard_cfg cfg = {2, 0};
    assert_int_equal(conn_guard_start(&cfg, 0, "test"), 0);
    struct sockaddr_in addr;
    int s = listener(&addr);
    int c[4], a[4];
    for (int i = 0; i < 3; i++) {
        c[i] = dial(&addr);
    }
    a[0] = take(s);
    a[1] = take(s);
    assert_true(a[0] >= 0 && a[1] >= 0);
    errno = 0;
    assert_int_equal(take(s), -1); /* the third from 127.0.0.1: over the cap */
    assert_int_equal(errno, ECONNABORTED);
    conn_guard_counts k = conn_guard_read();
    assert_int_equal(k.refused_peer, 1);
    assert_int_equal(k.open, 2);
    char b;
    assert_int_equal(read(c[2], &b, 1), 0); /* closed by the guard */
    close(a[0]);
    c[3] = dial(&addr);
    a[2] = take(s); /* a place was freed */
    assert_true(a[2] >= 0);
    assert_int_equal(conn_guard_read().open, 2);

    /* out of descriptors: the soft limit just above a new descriptor, and
     * every free number under it taken (dup) */
    close(a[1]);
    close(a[2]);
    close(c[0]);
    int w = dial(&addr);
    struct rlimit old, low;
    assert_int_equal(getrlimit(RLIMIT_NOFILE, &old), 0);
    int fill[256], nfill = 0;
    fill[nfill++] = dup(0);
    low.rlim_cur = (rlim_t)fill[0] + 1;
    low.rlim_max = old.rlim_max;
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &low), 0);
    while (nfill < 256 && (fill[nfill] = dup(0)) >= 0) {
        nfill++;
    }
    assert_int_equal(errno, EMFILE);
    uint64_t nofile0 = conn_guard_read().refused_nofile;
    errno = 0;
    assert_int_equal(take(s), -1);
    assert_int_equal(errno, ECONNABORTED); /* dropped, not EMFILE */
    assert_int_equal(conn_guard_read().refused_nofile, nofile0 + 1);
    /* the queue is empty: the listener is not readable, so nanomsg (which
     * accepts when it is) has nothing to retry */
    struct pollfd p = {.fd = s, .events = POLLIN};
    assert_int_equal(poll(&p, 1, 0), 0);
    assert_int_equal(setrlimit(RLIMIT_NOFILE, &old), 0);
    assert_int_equal(read(w, &b, 1), 0); /* the waiting peer was closed */
    for (int i = 0; i < nfill; i++) {
        close(fill[i]);
    }
    close(w);
    close(c[1]);
    close(c[2]);
    close(c[3]);
    close(s);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_per_peer_and_nofile),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

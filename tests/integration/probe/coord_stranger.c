/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_stranger.c - see coord_stranger.h.
 */
#define _GNU_SOURCE /* memmem */
#include "coord_stranger.h"

#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <nanomsg/nn.h>

#include "auth.h"
#include "auth_route.h"
#include "clock.h"
#include "coord_io.h"
#include "escrow_errors.h"
#include "nnx.h"
#include "wire.h"

typedef struct stranger_counts {
    long msgs, clear, sealed, opened, opened_item, leaks;
} stranger_counts;

/* Large: static, not on the stack. One run per process. */
static wire_route g_route;
static unsigned char g_plain[ESC_FRAME_BYTES_MAX + AUTH_ROUTE_OVERHEAD];

static void count(stranger_counts *n, const uint8_t *msg, size_t len, const auth_route_key *rk,
                  const char *item)
{
    n->msgs++;
    if (wire_decode_route_pub(msg, len, &g_route) == 0) {
        n->clear++;
    }
    if (len > 0 && msg[0] == AUTH_ROUTE_MARK) {
        n->sealed++;
    }
    size_t plen = 0;
    if (rk != NULL && auth_route_open(rk, msg, len, g_plain, sizeof g_plain, &plen) == 0) {
        n->opened++;
        if (wire_decode_route_pub(g_plain, plen, &g_route) == 0 &&
            strcmp(g_route.item_id, item) == 0) {
            n->opened_item++;
        }
    }
    if (memmem(msg, len, item, strlen(item)) != NULL) {
        n->leaks++;
    }
}

/* Opens a SUB socket on url subscribed to every message. */
static int subscribe_all(const char *url, int *fd)
{
    int s;
    if (nnx_open_sub(&s, "", 0) != 0 || nnx_connect(s, url, NULL) != 0) {
        coord_fail("cannot subscribe");
    }
    size_t sz = sizeof *fd;
    if (nn_getsockopt(s, NN_SOL_SOCKET, NN_RCVFD, fd, &sz) < 0) {
        coord_fail("NN_RCVFD");
    }
    return s;
}

int coord_stranger_run(int argc, char **argv)
{
    if (argc != 6) {
        coord_fail("stranger PUB_URL SECONDS KEY|- ITEM");
    }
    auth_route_key rk;
    bool keyed = strcmp(argv[4], "-") != 0;
    if (keyed) {
        auth_key k;
        if (auth_init() != 0 || auth_key_parse(argv[4], strlen(argv[4]), k.key_id, k.hash) != 0) {
            coord_fail("KEY is not a key");
        }
        auth_route_key_derive(k.hash, &rk);
    }
    int fd;
    int s = subscribe_all(argv[2], &fd);
    stranger_counts n = {0};
    int64_t end = esc_mono_us() + strtoll(argv[3], NULL, 10) * 1000000LL;
    while (esc_mono_us() < end) {
        void *msg = NULL;
        size_t len;
        nnx_hdr h;
        if (nnx_recv(s, &msg, &len, &h) != 0) {
            break;
        }
        if (msg == NULL) {
            struct pollfd p = {.fd = fd, .events = POLLIN};
            (void)poll(&p, 1, 50);
            continue;
        }
        count(&n, msg, len, keyed ? &rk : NULL, argv[5]);
        nnx_free(msg);
    }
    printf("STRANGER msgs=%ld clear=%ld sealed=%ld opened=%ld opened_item=%ld leaks=%ld\n", n.msgs,
           n.clear, n.sealed, n.opened, n.opened_item, n.leaks);
    return n.msgs > 0 ? 0 : 1;
}

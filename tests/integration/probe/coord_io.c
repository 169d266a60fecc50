/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_io.c - coord_probe's shared conventions and connection (see
 * coord_io.h).
 */
#include "coord_io.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "nnx.h"

#define COORD_CALL_TIMEOUT_MS 5000
#define COORD_RESEND_MS 500
#define COORD_SETTLE_MS 200

void coord_fail(const char *msg)
{
    fprintf(stderr, "coord_probe: %s\n", msg);
    exit(2);
}

const char *coord_kv(int argc, char **argv, int from, const char *key)
{
    size_t k = strlen(key);
    for (int i = from; i < argc; i++) {
        if (strncmp(argv[i], key, k) == 0 && argv[i][k] == '=') {
            return argv[i] + k + 1;
        }
    }
    return NULL;
}

void coord_open(probe_req *c, const char *url)
{
    if (probe_req_open(c, url) != 0) {
        coord_fail("cannot open a REQ socket to the coordinator");
    }
    usleep(COORD_SETTLE_MS * 1000);
}

int coord_call(probe_req *c, const void *buf, size_t len, bool resend, wire_reply *rep)
{
    void *msg = NULL;
    size_t n = 0;
    if (probe_req_call(c, buf, len, COORD_CALL_TIMEOUT_MS, resend ? COORD_RESEND_MS : 0, &msg,
                       &n) != 1) {
        return 0;
    }
    int rc = wire_decode_reply(msg, n, rep);
    nnx_free(msg);
    return rc == 0;
}

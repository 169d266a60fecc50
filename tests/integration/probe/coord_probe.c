/* SPDX-License-Identifier: Apache-2.0 */
/*
 * coord_probe.c - the integration tests' driver for escrow-coordinator: it
 * plays a segment node (fake_node.c: hb, hb-loop) or a client / escrowctl
 * (coord_calls.c: route, admin, sub), or a stranger on the routing feed
 * (coord_stranger.c), over a raw nanomsg socket and prints the answers as
 * one line each. This file is its main: it dispatches.
 *
 *   coord_probe hb|hb-loop|route|admin|sub URL ...   (see fake_node.h,
 *                                                     coord_calls.h)
 *
 * Exit 0 when an answer arrived (whatever its status), 1 when none did within
 * 5 s (or SECONDS), 2 on bad usage.
 */
#include <string.h>

#include "coord_calls.h"
#include "coord_io.h"
#include "coord_stranger.h"
#include "fake_node.h"

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv);
} coord_cmds[] = {
    {"hb", fake_node_hb},         {"hb-loop", fake_node_hb_loop}, {"route", coord_calls_route},
    {"admin", coord_calls_admin}, {"sub", coord_calls_sub},       {"stranger", coord_stranger_run},
};

int main(int argc, char **argv)
{
    if (argc < 2) {
        coord_fail("usage: coord_probe hb|hb-loop|route|admin|sub|stranger ...");
    }
    if (argc < 3) {
        coord_fail("missing endpoint");
    }
    for (size_t i = 0; i < sizeof coord_cmds / sizeof coord_cmds[0]; i++) {
        if (strcmp(argv[1], coord_cmds[i].name) == 0) {
            return coord_cmds[i].fn(argc, argv);
        }
    }
    coord_fail("unknown command");
}

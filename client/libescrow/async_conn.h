/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_conn.h - the engine's sockets ("conns"): raw REQ sockets watched on
 * the caller's loop (nnx_watch on NN_RCVFD), and the routes SUB socket.
 *
 * conns[0] is the segment node (single-node mode) or the coordinator
 * (routing mode); in routing mode conns[1 + i] is the node at endpoint slot
 * i of the route cache (route.h), opened on first use, at most
 * CLI_NODES_MAX of them. Routing mode also has a SUB socket on the
 * coordinator's route stream when esc_options.routes is given. Watchers are
 * unreferenced, so an idle client does not keep its host's loop alive.
 * Replies go to cli_answer_reply, route pushes to cli_routing_push.
 */
#ifndef ESC_CLIENT_ASYNC_CONN_H
#define ESC_CLIENT_ASYNC_CONN_H

#include <stdbool.h>
#include <stdint.h>

#include "async_state.h"

/* Opens conns[idx] on url (borrowed): socket, connection, unreferenced
 * watcher (counted in a->handles_open). Returns 0, or ESC_EINVAL (bad URL)
 * / ESC_EIO / ESC_ENOMEM. */
int cli_conn_open(esc_async *a, uint32_t idx, const char *url);
/* The routes socket: SUB on the coordinator's PUB (opts.routes), topic
 * "<tenant>\0". Returns 0 or the error that stopped it. */
int cli_conn_open_sub(esc_async *a);
/* Closes every watcher (their close callbacks count down handles_open). */
void cli_conn_close_all(esc_async *a);
/* Closes the sockets and frees the conns, once their watchers are closed. */
void cli_conn_free_all(esc_async *a);

/* The socket for node slot `node` of the route cache, opened on first use
 * and re-pointed when the slot now names another endpoint. NULL with *err. */
conn *cli_conn_node(esc_async *a, uint32_t node, int *err);
/* cli_node_idle_fn for cli_route_apply: may endpoint slot idx be reused
 * (its socket has no call in flight)? arg is the esc_async. */
bool cli_conn_node_idle(uint32_t idx, void *arg);

/* Makes k (borrowed) the socket where c's frame is out, counted in
 * k->calls; cli_conn_untarget undoes it (nothing when c has no target). */
void cli_conn_target(call *c, conn *k);
void cli_conn_untarget(call *c);
/* Sends (or resends) c's frame to c->target and schedules its next
 * attention (resend, with growing gaps, or a quick retry when nanomsg did
 * not take the frame). */
void cli_conn_send(esc_async *a, call *c, int64_t now);

#endif

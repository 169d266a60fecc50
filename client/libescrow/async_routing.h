/* SPDX-License-Identifier: Apache-2.0 */
/*
 * async_routing.h - routing mode of the engine: where each call goes, and
 * keeping the route cache (route.h) fed by fetches and pushes.
 *
 * A call is routed by its item (reserve) or its hold's segment (the rest):
 * it is sent to the owner the cached route names, or parked until a route
 * fetch (RouteReq to the coordinator; itself a call, kind CALL_FETCH, with
 * its waiters linked to it) answers. A call whose answer is not known (in
 * flight) never changes segment, because its first segment may have
 * committed; when the route gives its segment a new owner, the same frame
 * goes to the new owner. Pushes from the routes socket refresh the routes
 * the client already uses.
 */
#ifndef ESC_CLIENT_ASYNC_ROUTING_H
#define ESC_CLIENT_ASYNC_ROUTING_H

#include <stddef.h>
#include <stdint.h>

#include "async_state.h"

/* Makes the route cache and the decoding room. Returns 0 or ESC_ENOMEM. */
int cli_routing_init(esc_async *a);
/* Frees them (NULL-safe: single-node mode has none). */
void cli_routing_fini(esc_async *a);

/* Decides where user call c goes next (or answers it). Always moves c's
 * due time past now, or completes it. */
void cli_routing_step(esc_async *a, call *c, int64_t now);
/* c is due and SENT: resends its frame; in routing mode first moves it to
 * its segment's new owner, or fetches the route again in the background. */
void cli_routing_resend(esc_async *a, call *c, int64_t now);
/* The route c was sent by is not to be trusted (NOT_OWNER, FENCED): the
 * next step fetches it first. */
void cli_routing_distrust(esc_async *a, const call *c);

/* The coordinator answered fetch f (rep borrowed): applies the route and
 * ends f (cli_routing_fetch_done), or backs off. */
void cli_routing_fetch_reply(esc_async *a, call *f, const wire_reply *rep);
/* Fetch f ended with status: wakes (or answers) its waiters, frees f. */
void cli_routing_fetch_done(esc_async *a, call *f, int status);
/* Takes c off the waiter list of the fetch it waits for, if any. */
void cli_routing_unwait(call *c);

/* A frame from the routes socket (msg transferred: freed here): a route
 * the client uses is applied, anything else dropped. */
void cli_routing_push(esc_async *a, void *msg, size_t len);

#endif

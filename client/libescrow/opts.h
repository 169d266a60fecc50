/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.h - libescrow's private copy of esc_options, validated once.
 *
 * esc_async_new and esc_client_new copy what the caller's esc_options points
 * to (the caller may free its strings afterwards), fill the defaults and
 * validate the bounds here, so the engine works only with trusted values.
 * The client-side bounds that are not in common/esc_limits.h live here, each with
 * its unit and the reason for its value.
 */
#ifndef ESC_CLIENT_OPTS_H
#define ESC_CLIENT_OPTS_H

#include <stdbool.h>
#include <stdint.h>

#include "auth.h"
#include "auth_route.h"
#include "escrow.h"
#include "esc_limits.h"

/* nanomsg refuses longer addresses (NN_SOCKADDR_MAX is 128); we allow a bit
 * more so nanomsg, not we, names the error. */
#define CLI_ENDPOINT_LEN_MAX 255
/* Per-call deadline when neither the call nor the options give one. */
#define CLI_DEADLINE_MS_DEFAULT 5000u
/* An unanswered request is resent this often (same frame, same key). */
#define CLI_RESEND_MS_DEFAULT 500u
/* The gap between resends doubles up to this many times resend_ms (1, 2,
 * then 4: async.c's send_frame spells out those steps). */
#define CLI_RESEND_FACTOR_MAX 4u
/* A frame nanomsg refused to queue (no connection yet, send buffer full) is
 * retried this soon: it never left, so trying again costs nothing remote. */
#define CLI_UNSENT_RETRY_MS 10u
/* A connection that could not send for this long is made afresh (async.c). */
#define CLI_RECONNECT_US 1000000
/* Backoff after ESC_EBUSY / ESC_EUNAVAILABLE from the node: doubles from MIN
 * to MAX (plus up to 50% jitter), always inside the call's deadline. */
#define CLI_BACKOFF_MS_MIN 10u
#define CLI_BACKOFF_MS_MAX 320u
/* The encoded Request: ids are bounded (~450 bytes of strings), so 2 KiB is
 * generous; an oversize request is refused locally with ESC_EINVAL. */
#define CLI_FRAME_BYTES_MAX 2048

typedef struct cli_opts {
    bool routing; /* coordinator given: routing mode */
    /* single-node mode: the node; routing mode: the coordinator */
    char endpoint[CLI_ENDPOINT_LEN_MAX + 1];
    char routes[CLI_ENDPOINT_LEN_MAX + 1]; /* routing mode: "" = no push stream */
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    uint32_t deadline_ms; /* never 0 after cli_opts_init */
    uint32_t resend_ms;   /* never 0 after cli_opts_init */
    esc_log_fn log_fn;    /* may be NULL */
    void *log_arg;        /* borrowed */
    /* The tenant's key, parsed from esc_options.credential (its text is
     * not kept): has_signer = every request is signed with signer (its id
     * and signing key), and routing updates sealed for it are opened with
     * route_key (auth_route.h). Wiped by cli_opts_fini. */
    bool has_signer;
    auth_key signer;
    auth_route_key route_key;
} cli_opts;

/* Copies and validates in (borrowed). Returns 0 and fills *out, or
 * ESC_EINVAL: a missing tenant or bad tenant id, neither or both of
 * endpoint and coordinator, routes without coordinator, an empty or too
 * long address, bounds, a credential that is not a well-formed key. */
int cli_opts_init(cli_opts *out, const esc_options *in);

/* Wipes the key material of o (the signing and route keys). */
void cli_opts_fini(cli_opts *o);

/* Resolves a per-call deadline: 0 means the options' default. Returns 0 and
 * *out, or ESC_EINVAL above ESC_DEADLINE_MS_MAX. */
int cli_opts_deadline(const cli_opts *o, uint32_t deadline_ms, uint32_t *out);

/* Formats and hands a line to the host's log callback, if it installed one
 * (the library is silent otherwise). Levels as common/log.h: 0 error,
 * 1 warn, 2 info, 3 debug. */
void cli_log(const cli_opts *o, int level, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif

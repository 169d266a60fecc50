/* SPDX-License-Identifier: Apache-2.0 */
/*
 * opts.c - see opts.h.
 */
#include "opts.h"

#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include <sodium.h>

#include "wire.h"

/* NULL is fine (absent); otherwise 1..CLI_ENDPOINT_LEN_MAX bytes. */
static bool addr_ok(const char *s)
{
    return s == NULL || (s[0] != '\0' && strlen(s) <= CLI_ENDPOINT_LEN_MAX);
}

int cli_opts_init(cli_opts *out, const esc_options *in)
{
    if (in == NULL || in->tenant_id == NULL) {
        return ESC_EINVAL;
    }
    /* Exactly one mode; routes belong to the coordinator. */
    if ((in->endpoint == NULL) == (in->coordinator == NULL) ||
        (in->routes != NULL && in->coordinator == NULL)) {
        return ESC_EINVAL;
    }
    if (!addr_ok(in->endpoint) || !addr_ok(in->coordinator) || !addr_ok(in->routes)) {
        return ESC_EINVAL;
    }
    if (!wire_id_valid(in->tenant_id, ESC_TENANT_LEN_MAX)) {
        return ESC_EINVAL;
    }
    if (in->deadline_ms > ESC_DEADLINE_MS_MAX || in->resend_ms > ESC_DEADLINE_MS_MAX) {
        return ESC_EINVAL;
    }
    if (in->credential != NULL && strlen(in->credential) > ESC_CREDENTIAL_LEN_MAX) {
        return ESC_EINVAL;
    }
    memset(out, 0, sizeof *out);
    if (in->credential != NULL && in->credential[0] != '\0') {
        if (auth_init() != 0 || auth_key_parse(in->credential, strlen(in->credential),
                                               out->signer.key_id, out->signer.hash) != 0) {
            return ESC_EINVAL;
        }
        out->has_signer = true;
        auth_route_key_derive(out->signer.hash, &out->route_key);
    }
    out->routing = in->coordinator != NULL;
    const char *ep = out->routing ? in->coordinator : in->endpoint;
    memcpy(out->endpoint, ep, strlen(ep) + 1);
    if (in->routes != NULL) {
        memcpy(out->routes, in->routes, strlen(in->routes) + 1);
    }
    memcpy(out->tenant_id, in->tenant_id, strlen(in->tenant_id) + 1);
    out->deadline_ms = in->deadline_ms != 0 ? in->deadline_ms : CLI_DEADLINE_MS_DEFAULT;
    out->resend_ms = in->resend_ms != 0 ? in->resend_ms : CLI_RESEND_MS_DEFAULT;
    out->log_fn = in->log_fn;
    out->log_arg = in->log_arg;
    return 0;
}

void cli_opts_fini(cli_opts *o)
{
    sodium_memzero(&o->signer, sizeof o->signer);
    sodium_memzero(&o->route_key, sizeof o->route_key);
    o->has_signer = false;
}

int cli_opts_deadline(const cli_opts *o, uint32_t deadline_ms, uint32_t *out)
{
    if (deadline_ms > ESC_DEADLINE_MS_MAX) {
        return ESC_EINVAL;
    }
    *out = deadline_ms != 0 ? deadline_ms : o->deadline_ms;
    return 0;
}

void cli_log(const cli_opts *o, int level, const char *fmt, ...)
{
    if (o->log_fn == NULL) {
        return;
    }
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    o->log_fn(level, line, o->log_arg);
}

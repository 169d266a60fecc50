/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_auth.h - who sent a request: the tenant key of its Authorization
 * header, checked against the key table the daemons share (auth_guard.h:
 * read from PostgreSQL, reloaded every second, revoked keys refused within
 * about a second). The gateway always checks: it is the cluster's door for
 * clients outside its network. The key must be a tenant's (a shop's); its
 * tenant scopes everything the request does, and the key itself travels
 * on to the cluster as the tenant's credential (esc_options.credential),
 * so the nodes check it again when they run with --auth on.
 */
#ifndef ESC_GW_AUTH_H
#define ESC_GW_AUTH_H

#include <stddef.h>

#include "auth.h"
#include "auth_guard.h"

typedef struct gw_principal {
    char tenant_id[ESC_TENANT_LEN_MAX + 1];
    char key_id[AUTH_KEY_ID_LEN + 1];
    char credential[ESC_CREDENTIAL_LEN_MAX + 1]; /* the key's text */
} gw_principal;

/* Checks header (the Authorization value, borrowed; NULL = none) against
 * g's table. Returns 0 with *out, or with a sentence in why: ESC_EAUTH (no,
 * malformed, unknown or revoked key: 401), GW_EFORBIDDEN (an admin or
 * cluster key, which names no shop: 403), ESC_EUNAVAILABLE (the table was
 * not read yet: 503). */
int gw_auth_check(auth_guard *g, const char *header, gw_principal *out, char *why, size_t why_len);

#endif

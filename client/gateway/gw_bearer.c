/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_bearer.c - see gw_bearer.h.
 */
#include "gw_bearer.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "esc_limits.h"
#include "escrow_errors.h"

int gw_bearer_token(const char *header, const char **tok, size_t *len, char *why, size_t why_len)
{
    if (header == NULL || header[0] == '\0') {
        snprintf(why, why_len, "no credential: send Authorization: Bearer <the shop's key>");
        return ESC_EAUTH;
    }
    if (strncasecmp(header, "Bearer ", 7) != 0) {
        snprintf(why, why_len, "the Authorization scheme must be Bearer");
        return ESC_EAUTH;
    }
    const char *t = header + 7;
    t += strspn(t, " \t");
    size_t n = strlen(t);
    while (n > 0 && (t[n - 1] == ' ' || t[n - 1] == '\t')) {
        n--;
    }
    if (n == 0 || n > ESC_CREDENTIAL_LEN_MAX) {
        snprintf(why, why_len, "the Bearer token must be a key of 1..%d bytes",
                 ESC_CREDENTIAL_LEN_MAX);
        return ESC_EAUTH;
    }
    *tok = t;
    *len = n;
    return 0;
}

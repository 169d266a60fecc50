/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_bearer.h - the Authorization header's credential: "Bearer <key>"
 * (RFC 6750; the scheme's case is ignored, as HTTP wants). Pure: no I/O.
 */
#ifndef ESC_GW_BEARER_H
#define ESC_GW_BEARER_H

#include <stddef.h>

/* The token of header (borrowed; NULL = no header): *tok points into it,
 * *len bytes, trailing blanks excluded. Returns 0, or ESC_EAUTH with a
 * sentence in why when the header is missing, of another scheme, or has
 * no token or one over ESC_CREDENTIAL_LEN_MAX bytes. */
int gw_bearer_token(const char *header, const char **tok, size_t *len, char *why, size_t why_len);

#endif

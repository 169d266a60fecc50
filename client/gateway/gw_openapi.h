/* SPDX-License-Identifier: Apache-2.0 */
/*
 * gw_openapi.h - the OpenAPI 3 document of escrow-gateway's API
 * (client/gateway/openapi.json), compiled into the binary at build time
 * (embed_file.cmake) and served at GET /v1/openapi.json.
 */
#ifndef ESC_GW_OPENAPI_H
#define ESC_GW_OPENAPI_H

#include <stddef.h>

extern const char gw_openapi_json[]; /* NUL-terminated */
extern const size_t gw_openapi_json_len;

#endif

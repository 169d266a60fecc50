/* SPDX-License-Identifier: Apache-2.0 */
/*
 * errors.c - names and sentences for the ESC_E* table (escrow_errors.h).
 */
#include "escrow_errors.h"

#include <string.h>

const char *esc_err_name(int err)
{
    switch (err) {
    case 0:
        return "OK";
#define ESC_ERR_NAME_(name, code, msg)                                                             \
    case code:                                                                                     \
        return #name;
        ESC_ERROR_TABLE(ESC_ERR_NAME_)
#undef ESC_ERR_NAME_
    default:
        return "UNKNOWN";
    }
}

const char *esc_strerror(int err)
{
    switch (err) {
    case 0:
        return "success";
#define ESC_ERR_MSG_(name, code, msg)                                                              \
    case code:                                                                                     \
        return msg;
        ESC_ERROR_TABLE(ESC_ERR_MSG_)
#undef ESC_ERR_MSG_
    default:
        return "unknown error";
    }
}

int esc_err_from_name(const char *name)
{
    if (strcmp(name, "OK") == 0) {
        return 0;
    }
#define ESC_ERR_FROM_(n, code, msg)                                                                \
    if (strcmp(name, #n) == 0) {                                                                   \
        return code;                                                                               \
    }
    ESC_ERROR_TABLE(ESC_ERR_FROM_)
#undef ESC_ERR_FROM_
    return ESC_EINVAL;
}

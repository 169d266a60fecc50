/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_args.h - esc_probe's command line: one sub-command and its options,
 * parsed into a probe_args every sub-command reads (the shell tests in
 * tests/integration/ call esc_probe; `esc_probe --help` lists the
 * sub-commands and what each needs).
 */
#ifndef ESC_PROBE_ARGS_H
#define ESC_PROBE_ARGS_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

/* Bounds of the bulk sub-commands: arrays are sized from --n. */
#define PROBE_N_MAX 1000000u
#define PROBE_CONCURRENCY_MAX 4096u
#define PROBE_PER_HOLD_MAX 16u

/* Every string is borrowed from argv. */
typedef struct probe_args {
    const char *cmd;
    const char *endpoint;    /* a node's (or a coordinator's, for frame) */
    const char *coordinator; /* routing mode instead of endpoint */
    const char *routes;      /* the coordinator's PUB endpoint */
    const char *tenant;
    const char *item;
    const char *buyer; /* default = key */
    const char *key;
    const char *prefix; /* keys are "<prefix>-<index>" */
    const char *out_path;
    const char *in_path;
    const char *stop_file;
    const char *credential; /* the key that signs every request, or NULL (frame: a text
                               that is not a key goes in the cleartext field) */
    bool cleartext;         /* frame: --credential in the retired cleartext field */
    bool tamper;            /* frame: one bit of the MAC flipped */
    bool skew_set;          /* frame: --sign-skew-ms given */
    int64_t sign_skew_ms;   /* frame: signed at now + this */
    const char *save_path;  /* frame: write the bytes sent here */
    const char *frame_file; /* frame: send these bytes instead of encoding --op */
    const char *op;         /* frame's operation */
    const char *node;       /* frame's node (drain) or region (quota) */
    int64_t qty;
    bool qty_set; /* --qty given; otherwise reserve 1, confirm 0 (the whole hold) */
    uint64_t hold_id;
    uint64_t segment_id;
    uint64_t attempt; /* hint-reserve: the attempt number sent */
    bool resolve;     /* hint-reserve: send a resolve */
    uint32_t ttl_ms;
    uint32_t deadline_ms;
    uint32_t n;
    uint32_t concurrency;
    uint32_t per_hold;
    uint32_t seconds;
    uint32_t every;
} probe_args;

/* Parses argv (borrowed for a's lifetime) into a with the defaults filled
 * in. Returns 0, or -1 after a message on stderr (a usage error). --help
 * prints the usage and exits 0. */
int probe_args_parse(int argc, char **argv, probe_args *a);
void probe_args_usage(FILE *f);

#endif

/* SPDX-License-Identifier: Apache-2.0 */
/*
 * probe_args.c - esc_probe's command line (see probe_args.h): getopt_long
 * over one option table; numbers are checked against their bounds here, so
 * a sub-command can size its arrays from them.
 */
#include "probe_args.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

void probe_args_usage(FILE *f)
{
    fprintf(f, "usage: esc_probe COMMAND (--endpoint URL | --coordinator URL [--routes URL]) "
               "[--tenant T] [options]\n"
               "  reserve --item I --key K [--buyer B] [--qty Q] [--ttl-ms MS]\n"
               "  confirm|release|extend|get --hold ID [--qty Q] [--ttl-ms MS]\n"
               "      one blocking call; prints 'STATUS hold=.. state=.. qty=.. sold=..'\n"
               "  same-key --item I --key K --n N [--qty Q]   N reserves with one key at once\n"
               "  reserve-each --item PREFIX --key K --n N    one reserve on each of PREFIX1..PREFIXN\n"
               "  cr-race --item I --prefix P --n N           confirm vs release per hold\n"
               "  rx-race --item I --prefix P --n N --ttl-ms MS --per-hold K\n"
               "                                              K releases around each expiry\n"
               "  record --item I --prefix P --n N --concurrency C --out FILE [--ttl-ms MS]\n"
               "  verify --item I --in FILE [--every K]       recorded keys get their holds\n"
               "  fence-load --item I --prefix P --concurrency C --out FILE\n"
               "             (--stop-file F | --seconds S)    every OK, when sent and answered\n"
               "  raw --item I --hold ID --segment ID --key K --qty Q   malformed input\n"
               "  fake-coord --in SPEC --out LOG (--stop-file F | --seconds S)\n"
               "             a fake coordinator answering heartbeats (see fake_coordinator.c)\n"
               "  hint-reserve --item I --key K [--buyer B] [--segment S] [--qty Q] [--attempt N]\n"
               "             [--resolve]\n"
               "             one reserve (or resolve) frame with a segment hint\n"
               "  op-release --hold ID                        release by an operator\n"
               "  frame --op OP [--item I --key K --hold ID --qty Q --node N]\n"
               "        [--cleartext] [--sign-skew-ms MS] [--tamper] [--save FILE]\n"
               "  frame --frame-file FILE   one request of any kind (probe_frame.h), or\n"
               "      the bytes of FILE (a captured frame), answer as one line\n"
               "  call|acall --op reserve|confirm|release|extend|get|cart[+close] [call options]\n"
               "      one call, blocking (call) or asynchronous (acall): answer and out=\n"
               "common: --tenant (t1) --deadline-ms (5000) --qty (1)\n"
               "        --credential KEY  signs every request (libescrow and raw); for\n"
               "                          frame, a text that is not a key is sent in the\n"
               "                          retired cleartext field, as is KEY with --cleartext\n");
}

static int parse_u64_arg(const char *s, uint64_t max, uint64_t *out)
{
    char *end = NULL;
    errno = 0;
    if (s[0] == '-') {
        return -1;
    }
    unsigned long long v = strtoull(s, &end, 10);
    if (errno != 0 || end == s || *end != '\0' || v > max) {
        return -1;
    }
    *out = v;
    return 0;
}

static const struct option probe_opts[] = {{"endpoint", required_argument, NULL, 'e'},
                                           {"coordinator", required_argument, NULL, 'C'},
                                           {"routes", required_argument, NULL, 'R'},
                                           {"tenant", required_argument, NULL, 't'},
                                           {"item", required_argument, NULL, 'i'},
                                           {"buyer", required_argument, NULL, 'b'},
                                           {"key", required_argument, NULL, 'k'},
                                           {"prefix", required_argument, NULL, 'p'},
                                           {"out", required_argument, NULL, 'o'},
                                           {"in", required_argument, NULL, 'I'},
                                           {"stop-file", required_argument, NULL, 'S'},
                                           {"qty", required_argument, NULL, 'q'},
                                           {"hold", required_argument, NULL, 'H'},
                                           {"segment", required_argument, NULL, 'g'},
                                           {"ttl-ms", required_argument, NULL, 'l'},
                                           {"deadline-ms", required_argument, NULL, 'd'},
                                           {"n", required_argument, NULL, 'n'},
                                           {"concurrency", required_argument, NULL, 'c'},
                                           {"per-hold", required_argument, NULL, 'K'},
                                           {"seconds", required_argument, NULL, 's'},
                                           {"every", required_argument, NULL, 'E'},
                                           {"credential", required_argument, NULL, 'X'},
                                           {"op", required_argument, NULL, 'O'},
                                           {"node", required_argument, NULL, 'N'},
                                           {"attempt", required_argument, NULL, 'A'},
                                           {"resolve", no_argument, NULL, 'r'},
                                           {"cleartext", no_argument, NULL, 'Z'},
                                           {"tamper", no_argument, NULL, 'T'},
                                           {"sign-skew-ms", required_argument, NULL, 'W'},
                                           {"save", required_argument, NULL, 'V'},
                                           {"frame-file", required_argument, NULL, 'F'},
                                           {"help", no_argument, NULL, 'h'},
                                           {NULL, 0, NULL, 0}};

static int parse_qty(probe_args *a, const char *v)
{
    char *end = NULL;
    errno = 0;
    long long q = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0') {
        return -1;
    }
    a->qty = q;
    a->qty_set = true;
    return 0;
}

static int parse_skew(probe_args *a, const char *v)
{
    char *end = NULL;
    errno = 0;
    long long ms = strtoll(v, &end, 10);
    if (errno != 0 || end == v || *end != '\0' || ms > 86400000LL || ms < -86400000LL) {
        return -1;
    }
    a->sign_skew_ms = ms;
    a->skew_set = true;
    return 0;
}

static int parse_number(probe_args *a, int ch, const char *v)
{
    uint64_t u = 0;
    switch (ch) {
    case 'q':
        return parse_qty(a, v);
    case 'W':
        return parse_skew(a, v);
    case 'H':
        return parse_u64_arg(v, UINT64_MAX, &a->hold_id);
    case 'g':
        return parse_u64_arg(v, UINT64_MAX, &a->segment_id);
    case 'A':
        return parse_u64_arg(v, UINT64_MAX, &a->attempt);
    default:
        break;
    }
    uint64_t max = ch == 'n'   ? PROBE_N_MAX
                   : ch == 'c' ? PROBE_CONCURRENCY_MAX
                   : ch == 'K' ? PROBE_PER_HOLD_MAX
                               : UINT32_MAX;
    if (parse_u64_arg(v, max, &u) < 0) {
        return -1;
    }
    uint32_t *dst = ch == 'l'   ? &a->ttl_ms
                    : ch == 'd' ? &a->deadline_ms
                    : ch == 'n' ? &a->n
                    : ch == 'c' ? &a->concurrency
                    : ch == 'K' ? &a->per_hold
                    : ch == 's' ? &a->seconds
                                : &a->every;
    *dst = (uint32_t)u;
    return 0;
}

/* The option's string field in a, or NULL for a flag or a number. */
static const char **string_field(probe_args *a, int ch)
{
    return ch == 'e'   ? &a->endpoint
           : ch == 'C' ? &a->coordinator
           : ch == 'R' ? &a->routes
           : ch == 't' ? &a->tenant
           : ch == 'i' ? &a->item
           : ch == 'b' ? &a->buyer
           : ch == 'k' ? &a->key
           : ch == 'p' ? &a->prefix
           : ch == 'o' ? &a->out_path
           : ch == 'I' ? &a->in_path
           : ch == 'S' ? &a->stop_file
           : ch == 'X' ? &a->credential
           : ch == 'O' ? &a->op
           : ch == 'N' ? &a->node
           : ch == 'V' ? &a->save_path
           : ch == 'F' ? &a->frame_file
                       : NULL;
}

static void set_defaults(probe_args *a)
{
    memset(a, 0, sizeof *a);
    a->tenant = "t1";
    a->qty = 1;
    a->n = 1;
    a->concurrency = 64;
    a->per_hold = 5;
    a->deadline_ms = 5000;
}

int probe_args_parse(int argc, char **argv, probe_args *a)
{
    set_defaults(a);
    if (argc < 2 || argv[1][0] == '-') {
        probe_args_usage(stderr);
        return -1;
    }
    a->cmd = argv[1];
    optind = 2;
    int ch;
    while ((ch = getopt_long(argc, argv, "", probe_opts, NULL)) != -1) {
        const char **s = string_field(a, ch);
        if (s != NULL) {
            *s = optarg;
        } else if (ch == 'h') {
            probe_args_usage(stdout);
            exit(0);
        } else if (ch == 'r') {
            a->resolve = true;
        } else if (ch == 'Z' || ch == 'T') {
            *(ch == 'Z' ? &a->cleartext : &a->tamper) = true;
        } else if (ch == '?' || parse_number(a, ch, optarg) < 0) {
            fprintf(stderr, "esc_probe: bad option or value near '%s'\n", argv[optind - 1]);
            return -1;
        }
    }
    if (optind != argc || (a->endpoint == NULL) == (a->coordinator == NULL)) {
        fprintf(stderr, "esc_probe: --endpoint or --coordinator is required (one of them); "
                        "no positional arguments\n");
        return -1;
    }
    return 0;
}

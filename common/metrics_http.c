/* SPDX-License-Identifier: Apache-2.0 */
/*
 * metrics_http.c - see metrics_http.h. Everything in the request handler
 * runs on libmicrohttpd's thread.
 */
#include "metrics_http.h"

#include <netdb.h>
#include <stdarg.h>
#include <netinet/in.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>

#include <microhttpd.h>

#include "escrow_errors.h"
#include "log.h"

struct metrics_http {
    struct MHD_Daemon *daemon; /* owned */
    metrics_registry *reg;     /* borrowed */
    health *health;            /* borrowed; NULL = no /healthz, /readyz */
    uint16_t port;
};

static const char content_type[] = "text/plain; version=0.0.4; charset=utf-8";

/* ---- the address ---------------------------------------------------------- */

static int parse_port(const char *s, uint16_t *port)
{
    char *end;
    long v = strtol(s, &end, 10);
    if (*s < '0' || *s > '9' ||
        (*end != '\0' && strcmp(end, "/metrics") != 0 && strcmp(end, "/") != 0) || v < 0 ||
        v > 65535) {
        return ESC_EINVAL;
    }
    *port = (uint16_t)v;
    return 0;
}

int metrics_http_parse(const char *addr, char *host, size_t host_cap, uint16_t *port)
{
    if (addr == NULL || addr[0] == '\0' || strlen(addr) > METRICS_HTTP_ADDR_LEN_MAX) {
        return ESC_EINVAL;
    }
    if (strncmp(addr, "http://", 7) == 0) {
        addr += 7;
    }
    const char *colon;
    const char *h = addr;
    size_t hlen;
    if (addr[0] == '[') { /* [v6]:port */
        const char *close = strchr(addr, ']');
        if (close == NULL || close[1] != ':') {
            return ESC_EINVAL;
        }
        h = addr + 1;
        hlen = (size_t)(close - h);
        colon = close + 1;
    } else {
        colon = strrchr(addr, ':');
        if (colon == NULL) { /* a bare port: every interface */
            if (host_cap == 0 || parse_port(addr, port) != 0) {
                return ESC_EINVAL;
            }
            host[0] = '\0';
            return 0;
        }
        hlen = (size_t)(colon - addr);
    }
    if (hlen == 0 || hlen >= host_cap || memchr(h, '/', hlen) != NULL) {
        return ESC_EINVAL;
    }
    if (parse_port(colon + 1, port) != 0) {
        return ESC_EINVAL;
    }
    memcpy(host, h, hlen);
    host[hlen] = '\0';
    return 0;
}

/* Resolves host:port into ss. Returns 0 or ESC_EINVAL. */
static int resolve(const char *host, uint16_t port, struct sockaddr_storage *ss, bool *v6)
{
    memset(ss, 0, sizeof *ss);
    if (host[0] == '\0') {
        struct sockaddr_in *in = (struct sockaddr_in *)ss;
        in->sin_family = AF_INET;
        in->sin_port = htons(port);
        in->sin_addr.s_addr = htonl(INADDR_LOOPBACK); /* a bare port: this machine only */
        *v6 = false;
        return 0;
    }
    struct addrinfo hints, *res = NULL;
    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE;
    char service[8];
    snprintf(service, sizeof service, "%u", (unsigned)port);
    if (getaddrinfo(host, service, &hints, &res) != 0 || res == NULL) {
        return ESC_EINVAL;
    }
    memcpy(ss, res->ai_addr, res->ai_addrlen);
    *v6 = res->ai_family == AF_INET6;
    freeaddrinfo(res);
    return 0;
}

/* ---- requests ------------------------------------------------------------- */

static enum MHD_Result reply(struct MHD_Connection *conn, unsigned int code, char *body, size_t len,
                             const char *type)
{
    /* body is malloc'd and owned by MHD once the response exists */
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
    if (resp == NULL) {
        free(body);
        return MHD_NO;
    }
    enum MHD_Result rc = MHD_add_response_header(resp, MHD_HTTP_HEADER_CONTENT_TYPE, type);
    if (rc == MHD_YES) {
        rc = MHD_queue_response(conn, code, resp);
    }
    MHD_destroy_response(resp);
    return rc;
}

static enum MHD_Result reply_text(struct MHD_Connection *conn, unsigned int code, const char *text)
{
    char *body = strdup(text);
    if (body == NULL) {
        return MHD_NO;
    }
    return reply(conn, code, body, strlen(body), "text/plain; charset=utf-8");
}

/* /healthz (live) or /readyz: 200 or 503, the reason as text. */
static enum MHD_Result reply_health(struct MHD_Connection *conn, health *hl, bool live)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    int64_t now_ms = (int64_t)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
    char body[HEALTH_WHY_LEN + 64];
    unsigned code = live ? health_live(hl, now_ms, body, sizeof body)
                         : health_ready(hl, now_ms, body, sizeof body);
    return reply_text(conn, code, body);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *conn, const char *url,
                                  const char *method, const char *version, const char *upload_data,
                                  size_t *upload_data_size, void **ctx)
{
    (void)version;
    (void)upload_data;
    metrics_http *h = cls;
    if (*ctx == NULL) {
        *ctx = h; /* first call: headers only; answer on the next one */
        return MHD_YES;
    }
    if (*upload_data_size != 0) {
        *upload_data_size = 0; /* a body is ignored */
        return MHD_YES;
    }
    bool head = strcmp(method, MHD_HTTP_METHOD_HEAD) == 0;
    if (strcmp(method, MHD_HTTP_METHOD_GET) != 0 && !head) {
        return reply_text(conn, MHD_HTTP_METHOD_NOT_ALLOWED, "only GET /metrics\n");
    }
    if (h->health != NULL && (strcmp(url, "/healthz") == 0 || strcmp(url, "/readyz") == 0)) {
        return reply_health(conn, h->health, url[1] == 'h');
    }
    if (strcmp(url, "/metrics") != 0 && strcmp(url, "/") != 0) {
        return reply_text(conn, MHD_HTTP_NOT_FOUND,
                          h->health != NULL ? "not found; try /metrics, /healthz or /readyz\n"
                                            : "not found; try /metrics\n");
    }
    char *body = NULL;
    size_t len = 0;
    if (metrics_render(h->reg, &body, &len) != 0) {
        return reply_text(conn, MHD_HTTP_INTERNAL_SERVER_ERROR, "out of memory\n");
    }
    return reply(conn, MHD_HTTP_OK, body, len, content_type);
}

/* ---- lifecycle ------------------------------------------------------------ */

/* libmicrohttpd's own error messages, as our log lines (one per message). */
static void on_mhd_log(void *cls, const char *fmt, va_list ap)
{
    (void)cls;
    char msg[512];
    vsnprintf(msg, sizeof msg, fmt, ap);
    size_t n = strlen(msg);
    while (n > 0 && msg[n - 1] == '\n') {
        msg[--n] = '\0';
    }
    ESC_LOG(ESC_LOG_WARN, "METRICS-HTTP", "%s", msg);
}

int metrics_http_start(metrics_registry *reg, const char *addr, metrics_http **out, char *why,
                       size_t why_len)
{
    return metrics_http_start_health(reg, NULL, addr, out, why, why_len);
}

int metrics_http_start_health(metrics_registry *reg, health *hl, const char *addr,
                              metrics_http **out, char *why, size_t why_len)
{
    char host[METRICS_HTTP_ADDR_LEN_MAX + 1];
    uint16_t port;
    struct sockaddr_storage ss;
    bool v6 = false;
    if (metrics_http_parse(addr, host, sizeof host, &port) != 0 ||
        resolve(host, port, &ss, &v6) != 0) {
        snprintf(why, why_len, "'%s' is not PORT, HOST:PORT or [IPV6]:PORT", addr);
        return ESC_EINVAL;
    }
    metrics_http *h = calloc(1, sizeof *h);
    if (h == NULL) {
        snprintf(why, why_len, "out of memory");
        return ESC_ENOMEM;
    }
    h->reg = reg;
    h->health = hl;
    unsigned int flags = MHD_USE_INTERNAL_POLLING_THREAD | MHD_USE_AUTO | MHD_USE_ERROR_LOG;
    if (v6) {
        flags |= MHD_USE_IPv6;
    }
    /* the logger goes first, or messages about the later options bypass it */
    h->daemon = MHD_start_daemon(
        flags, port, NULL, NULL, on_request, h, MHD_OPTION_EXTERNAL_LOGGER, on_mhd_log, NULL,
        MHD_OPTION_SOCK_ADDR, (struct sockaddr *)&ss, MHD_OPTION_CONNECTION_LIMIT,
        (unsigned int)METRICS_HTTP_CONNECTIONS_MAX, MHD_OPTION_CONNECTION_TIMEOUT,
        (unsigned int)METRICS_HTTP_TIMEOUT_S, MHD_OPTION_END);
    if (h->daemon == NULL) {
        snprintf(why, why_len, "cannot serve HTTP on %s (address in use or not local?)", addr);
        free(h);
        return ESC_EIO;
    }
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(h->daemon, MHD_DAEMON_INFO_BIND_PORT);
    h->port = info != NULL ? info->port : port;
    *out = h;
    return 0;
}

uint16_t metrics_http_port(const metrics_http *h)
{
    return h->port;
}

void metrics_http_stop(metrics_http *h)
{
    if (h == NULL) {
        return;
    }
    MHD_stop_daemon(h->daemon);
    free(h);
}

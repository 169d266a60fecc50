/* SPDX-License-Identifier: Apache-2.0 */
/*
 * nnx.h - the one module that talks to nanomsg.
 *
 * escrow uses raw (AF_SP_RAW) REQ/REP sockets so that many requests are in
 * flight on one socket. On a raw socket the nanomsg protocol header (pipe key
 * and request id) travels as control data; nnx_recv hands it out as an
 * nnx_hdr that the caller keeps until it replies (a reply may wait for a
 * group commit), and nnx_send puts it back.
 *
 * Facts this module encodes (measured; docs/architecture.md, Transport): Nagle is off on every TCP
 * endpoint (NN_TCP_NODELAY set before bind/connect); NN_RCVMAXSIZE is the
 * protocol's real maximum; NN_RCVFD only signals and stays readable while
 * messages are queued, so readers drain with NN_DONTWAIT and a cap; raw
 * sockets drop messages under back-pressure and report success, so callers
 * need deadlines and idempotent retries.
 *
 * Errors are translated here, once: nn_errno() never travels up.
 */
#ifndef ESC_NNX_H
#define ESC_NNX_H

#include <stddef.h>
#include <stdint.h>

#include <uv.h>

#define NNX_HDR_MAX 64

typedef struct nnx_hdr {
    uint8_t bytes[NNX_HDR_MAX];
    uint8_t len;
} nnx_hdr;

/* Opens a raw REP (server) or raw REQ (client) socket with escrow's options.
 * Returns 0 and *sock_out, or ESC_EIO. */
int nnx_open_rep(int *sock_out);
int nnx_open_req(int *sock_out);
/* Frames larger than bytes are refused by nanomsg (the connection that
 * announces one is dropped before the frame is read), for a socket whose
 * peers send only small requests. Default: ESC_FRAME_BYTES_MAX. */
int nnx_set_rcvmax(int sock, int bytes);
/* Binds/connects after setting NN_TCP_NODELAY. ESC_EINVAL for a bad URL,
 * ESC_EIO otherwise. */
int nnx_bind(int sock, const char *url);
/* Endpoints one nnx_connect made: url may be a comma-separated list (a
 * region's coordinators: only the leader binds, so a REQ socket connected
 * to all of them reaches the one that leads). */
#define NNX_CONNECT_MAX 4
typedef struct nnx_eids {
    int n;
    int id[NNX_CONNECT_MAX];
} nnx_eids;
/* Connects to url, or to each URL of a comma-separated list (at most
 * NNX_CONNECT_MAX; ESC_EINVAL beyond). *eids (may be NULL) receives the
 * endpoint ids, for nnx_reconnect. */
int nnx_connect(int sock, const char *url, nnx_eids *eids);
/* Drops the connecting endpoints *eids and connects to url afresh.
 * nanomsg 1.1.5's connecting endpoint can wedge after its peer was killed
 * and restarted on the same port (sends refused forever while a new socket
 * connects at once); a client that cannot send for a while calls this.
 * Returns 0 or ESC_EINVAL / ESC_EIO. */
int nnx_reconnect(int sock, nnx_eids *eids, const char *url);
void nnx_close(int sock);

/* Routing updates (PUB/SUB, cooked sockets: subscribers filter by prefix).
 * nnx_open_pub: a PUB socket; bind it with nnx_bind. nnx_open_sub: a SUB
 * socket subscribed to prefix (len bytes; len 0 = everything); connect it
 * with nnx_connect, read it with nnx_recv (hdr is empty). Return 0 and
 * *sock_out, or ESC_EIO. */
int nnx_open_pub(int *sock_out);
int nnx_open_sub(int *sock_out, const void *prefix, size_t len);
/* Subscribes a SUB socket to one more prefix. Returns 0 or ESC_EIO. */
int nnx_subscribe(int sock, const void *prefix, size_t len);
/* Publishes buf (copied) without blocking; subscribers that cannot keep up
 * lose messages (the publisher resends everything periodically). Returns 0,
 * ESC_EBUSY or ESC_EIO. */
int nnx_publish(int sock, const void *buf, size_t len);

/* Receives one message without blocking. Returns 0 with *msg (an NN_MSG
 * buffer the caller frees with nnx_free) and *len, or 0 with *msg == NULL
 * when nothing is queued, or ESC_EIO/ESC_ETOOBIG. */
int nnx_recv(int sock, void **msg, size_t *len, nnx_hdr *hdr);
void nnx_free(void *msg);

/* Sends buf (copied) with the given header, without blocking. ESC_EBUSY if
 * nanomsg would block, ESC_EIO otherwise. */
int nnx_send(int sock, const nnx_hdr *hdr, const void *buf, size_t len);

/* Request ids for a raw REQ socket: the 4-byte header with the top bit set. */
void nnx_hdr_request_id(nnx_hdr *hdr, uint32_t id);
/* Extracts the request id from a reply header; 0 if the header is malformed. */
uint32_t nnx_hdr_get_request_id(const nnx_hdr *hdr);

/* A uv_poll watcher on NN_RCVFD. cb runs when messages may be queued; it must
 * drain with nnx_recv (bounded per call: more remain readable). */
typedef struct nnx_watch nnx_watch;
typedef void (*nnx_ready_cb)(nnx_watch *w, void *arg);
struct nnx_watch {
    uv_poll_t poll; /* embedded; the owner lives until close_cb */
    int sock;
    nnx_ready_cb cb;
    void *arg;
};
/* Starts watching. Returns 0 or ESC_EIO. */
int nnx_watch_start(uv_loop_t *loop, nnx_watch *w, int sock, nnx_ready_cb cb, void *arg);
/* Pauses / resumes watching (back-pressure). resume returns 0 or ESC_EIO. */
void nnx_watch_pause(nnx_watch *w);
int nnx_watch_resume(nnx_watch *w);
/* Stops and closes the poll handle; close_cb runs from the loop. */
void nnx_watch_close(nnx_watch *w, uv_close_cb close_cb);

#endif

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""conn_peer.py - raw TCP peers of a segment node for conn_limits.sh.

    conn_peer.py --port P [--src ADDR] --idle N [--slow N]
                 [--expect-closed K] [--deadline-s S]

Opens --idle connections that send nanomsg's SP handshake (a REQ peer) and
nothing more, then --slow ones that also send half of a 1,000-byte frame,
all from source address --src (any 127.x.y.z is local). Then waits until at
least --expect-closed of them were closed by the node (EOF or reset), or
--deadline-s passed, looks once more a second later and prints

    PEERS opened=.. closed=.. open=.. connect_errors=..

(a connect refused or reset during the handshake counts as closed). Exit 0.
"""
import argparse
import select
import socket
import struct
import sys
import time

SP_REQ = b"\x00SP\x00\x00\x30\x00\x00"  # NN_REQ = 48


def connect(a, slow):
    s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    s.bind((a.src, 0))
    s.settimeout(5)
    s.connect(("127.0.0.1", a.port))
    s.sendall(SP_REQ)
    if slow:
        s.sendall(struct.pack(">Q", 1000) + b"\x80\x00\x00\x01" + b"x" * 496)
    s.setblocking(False)
    return s


def is_closed(s):
    r, _, _ = select.select([s], [], [], 0)
    if not r:
        return False
    try:
        return s.recv(4096) == b""  # the node sends its own handshake first
    except BlockingIOError:
        return False
    except OSError:
        return True


def count_closed(socks, closed):
    for i, s in enumerate(socks):
        if i not in closed and is_closed(s):
            closed.add(i)
    return len(closed)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--src", default="127.0.0.1")
    ap.add_argument("--idle", type=int, default=0)
    ap.add_argument("--slow", type=int, default=0)
    ap.add_argument("--expect-closed", type=int, default=0)
    ap.add_argument("--deadline-s", type=float, default=60)
    a = ap.parse_args()
    socks, errors = [], 0
    for i in range(a.idle + a.slow):
        try:
            socks.append(connect(a, i >= a.idle))
        except OSError:
            errors += 1
    closed = set()
    deadline = time.monotonic() + a.deadline_s
    while count_closed(socks, closed) + errors < a.expect_closed and time.monotonic() < deadline:
        time.sleep(0.1)
    time.sleep(1.0)  # then look once more: none beyond those should close
    n = count_closed(socks, closed)
    print("PEERS opened=%d closed=%d open=%d connect_errors=%d"
          % (len(socks) + errors, n + errors, len(socks) - n, errors))
    sys.stdout.flush()
    for s in socks:
        s.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""rogue.py - the rogue client of the chaos suite: bytes no escrow client sends.

    rogue.py --target 127.0.0.1:PORT [--target ...] [--malformed 10000]
             [--oversized 1000] [--garbage 100] [--seed N]
             [--signed N --coordinator 127.0.0.1:PORT --tenant T --item I]

Against the nodes' own ports (nanomsg SP over TCP, not through libescrow):
  malformed   frames inside a correct SP/TCP session (REQ handshake, 8-byte
              length, request id): random bytes, broken protobuf (bad wire
              types, truncated varints, lengths past the end), a Request with
              a wrong version or a garbage tenant, frames too short to carry a
              request id. The node must answer or drop each and keep serving.
  oversized   a session per frame announcing more than NN_RCVMAXSIZE (64 KiB,
              up to 2^62 bytes), half of them followed by 70 KiB of data:
              nanomsg must drop the connection, nothing else.
  garbage     non-protocol connections: HTTP, random bytes, a wrong SP
              protocol id, half an SP header, and idle half-open connections
              held until the end of the run.
  signed      (--signed N; the tenant's key in $ROGUE_KEY, the admin key in
              $ROGUE_ADMIN_KEY) N frames each with a bad MAC, a wrong key id,
              a clock outside the window, and N replays of one admin frame to
              the coordinator (rogue_signed.py), to the first target.
Prints one line: ROGUE malformed=.. replies=.. oversized=.. dropped=..
garbage=.. held=.. errors=.. seconds=..; with --signed a line before it:
ROGUE-SIGNED bad_mac_auth=.. bad_mac_other=.. bad_mac_lost=.. bad_mac_codes=..
(and the same for wrong_key_id, stale, replay) good_first=STATUS
replay_first=STATUS.
Exit 0 (the driver judges the nodes).
Standard library only.
"""
import argparse
import os
import random
import select
import socket
import struct
import sys
import time

import rogue_signed
from rogue_signed import ld, varint

SP_REQ = b"\x00SP\x00\x00\x30\x00\x00"  # NN_REQ = 48
SP_REP = b"\x00SP\x00\x00\x31\x00\x00"
FRAME_MAX = 64 * 1024


def field(num, wt, payload):
    return varint(num << 3 | wt) + payload


def malformed_payload(rng, i):
    k = i % 9
    if k == 0:
        return bytes(rng.getrandbits(8) for _ in range(rng.randrange(0, 200)))
    if k == 1:  # wire type 7 (does not exist)
        return bytes([0x0F | (rng.randrange(1, 16) << 3)]) + b"\xff\xff\xff"
    if k == 2:  # varint cut short
        return b"\x10" + b"\xff" * rng.randrange(1, 11)
    if k == 3:  # length-delimited field longer than the frame
        return ld(3, b"t1")[:-1] + b"\x7f" + b"ab"
    if k == 4:  # wrong version, otherwise a reserve
        res = ld(1, b"item") + ld(2, b"buyer") + field(3, 0, varint(1)) + ld(4, b"key")
        return field(1, 0, varint(rng.choice([0, 2, 7, 2**32 - 1]))) + ld(3, b"t1") + ld(10, res)
    if k == 5:  # garbage tenant, nested garbage op
        junk = bytes(rng.getrandbits(8) for _ in range(rng.randrange(1, 64)))
        return field(1, 0, varint(1)) + ld(3, junk) + ld(rng.randrange(10, 20), junk)
    if k == 6:  # 10-byte varint overflow
        return b"\x08" + b"\xff" * 10 + b"\x01"
    if k == 7:  # deeply nested length prefixes
        data = b""
        for _ in range(50):
            data = ld(10, data)
        return field(1, 0, varint(1)) + data
    # a valid request followed by trailing garbage
    return field(1, 0, varint(1)) + ld(3, b"t1") + ld(15, b"") + b"\xff"


def sp_connect(addr, timeout=2.0):
    s = socket.create_connection(addr, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    s.sendall(SP_REQ)
    hdr = b""
    while len(hdr) < 8:
        chunk = s.recv(8 - len(hdr))
        if not chunk:
            raise ConnectionError("closed during the SP handshake")
        hdr += chunk
    return s


def drain(s, stats, wait):
    """Reads whatever replies arrived (counting frames roughly by headers)."""
    end = time.time() + wait
    buf = stats.setdefault("_buf", b"")
    while True:
        left = end - time.time()
        r, _, _ = select.select([s], [], [], max(0.0, left))
        if not r:
            break
        try:
            data = s.recv(1 << 16)
        except (BlockingIOError, InterruptedError):
            continue
        if not data:
            raise ConnectionError("closed by the node")
        buf += data
        while len(buf) >= 8:
            (n,) = struct.unpack(">Q", buf[:8])
            if len(buf) < 8 + n:
                break
            buf = buf[8 + n:]
            stats["replies"] += 1
        if left <= 0:
            break
    stats["_buf"] = buf


def run_malformed(targets, n, rng, stats):
    socks = {}
    i = 0
    give_up = time.time() + 120.0
    while stats["malformed"] < n and time.time() < give_up:
        # a frame lost to a node the nemesis killed is sent again to the next node
        t = targets[(i + stats["reconnects"]) % len(targets)]
        i += 1
        try:
            if t not in socks:
                socks[t] = sp_connect(t)
                stats["_buf"] = b""
            s = socks[t]
            body = malformed_payload(rng, i)
            if i % 97 == 0:
                frame = body[:3]  # too short for a request id
            else:
                frame = struct.pack(">I", 0x80000000 | (i & 0x7FFFFFFF)) + body
            s.sendall(struct.pack(">Q", len(frame)) + frame)
            stats["malformed"] += 1
            if i % 64 == 63:
                drain(s, stats, 0.0)
        except (OSError, ConnectionError):
            stats["reconnects"] += 1
            s = socks.pop(t, None)
            if s:
                s.close()
            time.sleep(0.05)
    for s in socks.values():
        try:
            drain(s, stats, 1.0)
        except (OSError, ConnectionError):
            pass
        s.close()


def closed_within(s, wait):
    end = time.time() + wait
    while time.time() < end:
        r, _, _ = select.select([s], [], [], end - time.time())
        if r:
            try:
                if not s.recv(4096):
                    return True
            except OSError:
                return True
    return False


def connect_any(targets, i, fn, stats):
    """fn(target) on target i, else the next ones: a node the nemesis killed
    is down for a second or two. Gives up after 15 s."""
    end = time.time() + 15.0
    k = 0
    while True:
        try:
            return fn(targets[(i + k) % len(targets)])
        except (OSError, ConnectionError):
            stats["connect_retries"] += 1
            k += 1
            if time.time() > end:
                raise
            time.sleep(0.05)


def run_oversized(targets, n, rng, stats):
    blob = b"\x0a" * (70 * 1024)
    for i in range(n):
        try:
            s = connect_any(targets, i, sp_connect, stats)
        except (OSError, ConnectionError):
            stats["errors"] += 1
            continue
        size = rng.choice([FRAME_MAX + 1, FRAME_MAX + 4096, 1 << 20, 1 << 31, (1 << 62) - 1])
        try:
            s.sendall(struct.pack(">Q", size) + struct.pack(">I", 0x80000001))
            if i % 2 == 0:
                s.sendall(blob)
            stats["oversized"] += 1
            if closed_within(s, 1.0):
                stats["dropped"] += 1
        except OSError:
            stats["oversized"] += 1
            stats["dropped"] += 1
        s.close()


def run_garbage(targets, n, rng, stats, held):
    http = b"GET /metrics HTTP/1.1\r\nHost: escrow\r\n\r\n"
    for i in range(n):
        try:
            s = connect_any(targets, i, lambda t: socket.create_connection(t, timeout=2.0),
                            stats)
        except OSError:
            stats["errors"] += 1
            continue
        kind = i % 5
        try:
            if kind == 0:
                s.sendall(http)
            elif kind == 1:
                s.sendall(bytes(rng.getrandbits(8) for _ in range(1000)))
            elif kind == 2:
                s.sendall(SP_REP)  # REP talking to REP
            elif kind == 3:
                s.sendall(SP_REQ[:4])  # half a header, then silence
                held.append(s)
                stats["held"] += 1
                stats["garbage"] += 1
                continue
            else:  # idle: connected, never a byte
                held.append(s)
                stats["held"] += 1
                stats["garbage"] += 1
                continue
            stats["garbage"] += 1
            closed_within(s, 0.2)
        except OSError:
            stats["garbage"] += 1
        s.close()


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--target", action="append", required=True, type=hostport)
    ap.add_argument("--malformed", type=int, default=10000)
    ap.add_argument("--oversized", type=int, default=1000)
    ap.add_argument("--garbage", type=int, default=100)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--signed", type=int, default=0)
    ap.add_argument("--coordinator", type=hostport)
    ap.add_argument("--tenant", default="t1")
    ap.add_argument("--item", default="flash-0")
    a = ap.parse_args()
    rng = random.Random(a.seed)
    stats = {"malformed": 0, "replies": 0, "oversized": 0, "dropped": 0, "garbage": 0,
             "held": 0, "errors": 0, "reconnects": 0, "connect_retries": 0}
    held = []
    t0 = time.time()
    if a.signed:
        sig = {}
        rogue_signed.run_signed(a.target[0], a.coordinator, a.signed, a.tenant, a.item,
                                os.environ["ROGUE_KEY"], os.environ["ROGUE_ADMIN_KEY"], sig)
        print("ROGUE-SIGNED " + " ".join("%s=%s" % kv for kv in sig.items()))
        sys.stdout.flush()
    # Half-open connections first, held while the rest runs.
    run_garbage(a.target, a.garbage, rng, stats, held)
    run_malformed(a.target, a.malformed, rng, stats)
    run_oversized(a.target, a.oversized, rng, stats)
    for s in held:
        s.close()
    stats.pop("_buf", None)
    print("ROGUE " + " ".join("%s=%s" % kv for kv in stats.items())
          + " seconds=%.1f" % (time.time() - t0))
    sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())

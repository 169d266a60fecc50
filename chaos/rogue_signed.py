# SPDX-License-Identifier: Apache-2.0
"""rogue_signed.py - the rogue client's signed frames (chaos/rogue.py
--signed N): well-formed escrow requests whose signature must not pass
(common/auth.h), each sent N times, one request per frame on one connection,
every answer read and its status counted:

  bad_mac       a reserve of the tenant's item signed with its key, one MAC
                byte flipped
  wrong_key_id  the same, signed with a made-up key under a made-up key id
  stale         signed right, sent_at_ms 10 minutes in the past (half) or
                the future (half): outside any window (at most 600 s... the
                default is 30 s; chaos runs the default)
  replay        one admin frame (re-read the catalog: harmless) signed with
                the admin key and answered once, then its exact bytes sent
                again N times to the coordinator

and one control first: a stats request signed right with the tenant's key,
which must be answered OK (good_first=0): the refusals
above are then the signature's, not a broken signer's.

Each reserve carries idempotency key "rogue-<stage>-<i>", so the driver can
check that none of them left a hold. Standard library only: BLAKE2b
(hashlib) is the MAC libsodium's crypto_generichash makes.
"""
import base64
import hashlib
import os
import socket
import struct
import time

SP_REQ = b"\x00SP\x00\x00\x30\x00\x00"  # NN_REQ = 48
AUTH = -28  # ESC_EAUTH (common/escrow_errors.h)
WIRE_VERSION = 1
ADMIN_RELOAD = 11  # WIRE_ADMIN_RELOAD (proto/wire.h)
MAC_CONTEXT = b"escrow-frame-v1"
STALE_MS = 600 * 1000


def varint(n):
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        out.append(b | 0x80 if n else b)
        if not n:
            return bytes(out)


def ld(num, data):
    return varint(num << 3 | 2) + varint(len(data)) + data


def vfield(num, n):
    return varint(num << 3) + varint(n)


def parse_key(text):
    """esk_<key id>_<secret> -> (key id, signing key), as auth_key_parse."""
    _, key_id, secret = text.strip().split("_", 2)
    raw = base64.urlsafe_b64decode(secret + "=" * (-len(secret) % 4))
    return key_id, hashlib.blake2b(raw + key_id.encode(), digest_size=32).digest()


def signed(body_fields, tenant, key_id, key, sent_at_ms, corr, tamper=False):
    """A Request: version, corr_id, tenant, the signature's fields, the op,
    then the MAC over everything before it (its last field)."""
    head = (vfield(1, WIRE_VERSION) + vfield(2, corr) + ld(3, tenant.encode())
            + ld(5, key_id.encode()) + vfield(6, sent_at_ms)
            + varint(7 << 3 | 1) + struct.pack("<Q", int.from_bytes(os.urandom(8), "little"))
            + body_fields)
    mac = bytearray(hashlib.blake2b(MAC_CONTEXT + head, key=key, digest_size=32).digest())
    if tamper:
        mac[corr % 32] ^= 0x01
    return head + ld(8, bytes(mac))


def reserve_op(item, key):
    return ld(10, ld(1, item.encode()) + ld(2, b"rogue") + vfield(3, 1) + ld(4, key.encode()))


def admin_reload_op():
    return ld(18, vfield(1, ADMIN_RELOAD))


def reply_status(payload):
    """Field 2 (sint32) of a Reply; None when absent (0 is not encoded)."""
    i = 0
    while i < len(payload):
        tag, i = read_varint(payload, i)
        num, wt = tag >> 3, tag & 7
        if wt == 0:
            v, i = read_varint(payload, i)
            if num == 2:
                return (v >> 1) ^ -(v & 1)
        elif wt == 2:
            n, i = read_varint(payload, i)
            i += n
        elif wt == 1:
            i += 8
        elif wt == 5:
            i += 4
        else:
            return None
    return 0


def read_varint(b, i):
    n = shift = 0
    while True:
        c = b[i]
        i += 1
        n |= (c & 0x7F) << shift
        shift += 7
        if not c & 0x80:
            return n, i


class Conn:
    """One SP/TCP session to a REP socket: send a frame, read its answer."""

    def __init__(self, addr, wait_s=60):
        # The nemesis may have killed the daemon a moment ago: it comes back
        # within seconds, so a refused connect is tried again until wait_s.
        deadline = time.time() + wait_s
        while True:
            try:
                self.s = socket.create_connection(addr, timeout=10)
                break
            except OSError:
                if time.time() >= deadline:
                    raise
                time.sleep(0.2)
        self.s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.s.sendall(SP_REQ)
        self.read(8)
        self.rid = 0

    def read(self, n):
        buf = b""
        while len(buf) < n:
            chunk = self.s.recv(n - len(buf))
            if not chunk:
                raise ConnectionError("closed by the peer")
            buf += chunk
        return buf

    def ask(self, payload):
        """The answer's status, or None when none came within 10 s."""
        self.rid = (self.rid + 1) & 0x7FFFFFFF
        frame = struct.pack(">I", 0x80000000 | self.rid) + payload
        self.s.sendall(struct.pack(">Q", len(frame)) + frame)
        while True:
            try:
                (n,) = struct.unpack(">Q", self.read(8))
                body = self.read(n)
            except socket.timeout:
                return None
            if body[:4] == struct.pack(">I", 0x80000000 | self.rid):
                return reply_status(body[4:])

    def close(self):
        self.s.close()


def run_stage(addr, frames, stats, stage):
    """Sends each frame once on a connection of its own making; counts the
    answers: auth (AUTH), other (any other status: a frame let through),
    lost (no answer: the nemesis killed the daemon or its link)."""
    conn = None
    for f in frames:
        for attempt in range(2):
            try:
                if conn is None:
                    conn = Conn(addr)
                st = conn.ask(f)
                break
            except (OSError, ConnectionError):
                if conn is not None:
                    conn.close()
                conn = None
                st = None
                time.sleep(0.2)
        key = "auth" if st == AUTH else "lost" if st is None else "other"
        stats["%s_%s" % (stage, key)] += 1
        if key == "other":
            stats["%s_codes" % stage].add(st)
    if conn is not None:
        conn.close()


def run_signed(node, coord, n, tenant, item, cred, admin_cred, stats):
    key_id, key = parse_key(cred)
    now = int(time.time() * 1000)
    fake_id, fake_key = os.urandom(8).hex(), os.urandom(32)
    for stage in ("bad_mac", "wrong_key_id", "stale", "replay"):
        for k in ("auth", "other", "lost"):
            stats["%s_%s" % (stage, k)] = 0
        stats["%s_codes" % stage] = set()
    frames = {"bad_mac": [], "wrong_key_id": [], "stale": []}
    for i in range(n):
        frames["bad_mac"].append(signed(reserve_op(item, "rogue-bad_mac-%d" % i), tenant,
                                        key_id, key, now, i + 1, tamper=True))
        frames["wrong_key_id"].append(signed(reserve_op(item, "rogue-wrong_key_id-%d" % i),
                                             tenant, fake_id, fake_key, now, i + 1))
        skew = -STALE_MS if i % 2 == 0 else STALE_MS
        frames["stale"].append(signed(reserve_op(item, "rogue-stale-%d" % i), tenant, key_id,
                                      key, now + skew, i + 1))
    c = Conn(node)
    stats["good_first"] = c.ask(signed(ld(15, b""), tenant, key_id, key,
                                       int(time.time() * 1000), 1))
    c.close()
    for stage, fs in frames.items():
        run_stage(node, fs, stats, stage)
    admin_id, admin_key = parse_key(admin_cred)
    original = signed(admin_reload_op(), "", admin_id, admin_key, int(time.time() * 1000), 1)
    c = Conn(coord)
    first = c.ask(original)
    c.close()
    stats["replay_first"] = first
    run_stage(coord, [original] * n, stats, "replay")
    for stage in ("bad_mac", "wrong_key_id", "stale", "replay"):
        stats["%s_codes" % stage] = ",".join(str(x) for x in sorted(stats["%s_codes" % stage])) or "-"

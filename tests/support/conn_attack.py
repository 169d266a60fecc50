#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""conn_attack.py - what idle connections and slow half-sent frames cost a
segment node: its memory (RSS) and CPU while they are held, its memory after
they closed. Run by tests/support/conn_attack.sh, which also measures real
clients' latency meanwhile; it prints figures and asserts nothing.

    conn_attack.py --host H --port P --pid NODE_PID [--idle N] [--slow N]
                   [--announce BYTES] [--hold-s S] [--after-s S]

--idle N: N TCP connections that complete nanomsg's SP handshake (a REQ
peer's 8-byte header) and then send nothing. --slow N: N more that announce a
frame of --announce bytes (default 4000, under the node's 4 KiB limit for
requests) and send only half of it. Each --per-source connections (default
1000, under the node's default per-peer cap) come from another local address
(127.0.1.1, 127.0.1.2, ...; 0: all from one). Both are held for --hold-s seconds
(default 10), then closed; RSS is read again --after-s seconds later
(default 5). Prints one line per phase and a RESULT line:

    RESULT idle=.. slow=.. opened=.. rss_base_mib=.. rss_held_mib=..
           rss_after_mib=.. node_cpu_pct_held=.. refused=..
"""
import argparse
import os
import resource
import socket
import struct
import sys
import time

SP_HEADER_REQ = b"\x00SP\x00" + struct.pack(">H", 48) + b"\x00\x00"  # NN_REQ = 48


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024.0
    return -1.0


def cpu_ticks(pid):
    with open(f"/proc/{pid}/stat") as f:
        parts = f.read().rsplit(")", 1)[1].split()
    return int(parts[11]) + int(parts[12])  # utime + stime


def open_conns(host, port, n, announce, per_source, first=0):
    """From 127.0.1.1, 127.0.1.2, ...: per_source connections each (the
    node's per-peer cap counts by address; 0: all from the default)."""
    conns, refused = [], 0
    for i in range(first, first + n):
        try:
            src = ("127.0.%d.%d" % (1 + i // per_source // 250, 1 + i // per_source % 250), 0) \
                if per_source else None
            s = socket.create_connection((host, port), timeout=5, source_address=src)
            s.sendall(SP_HEADER_REQ)
            if announce:
                body = b"\x80\x00\x00\x01" + b"x" * (announce - 4)  # request id, then bytes
                s.sendall(struct.pack(">Q", announce) + body[: announce // 2])
            conns.append(s)
        except OSError:
            refused += 1
    return conns, refused


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, required=True)
    ap.add_argument("--pid", type=int, required=True)
    ap.add_argument("--idle", type=int, default=5000)
    ap.add_argument("--slow", type=int, default=1000)
    ap.add_argument("--announce", type=int, default=4000)
    ap.add_argument("--hold-s", type=float, default=10.0)
    ap.add_argument("--after-s", type=float, default=5.0)
    ap.add_argument("--per-source", type=int, default=1000)
    a = ap.parse_args()
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    if a.idle + a.slow + 64 > hard:
        print(f"conn_attack: the hard limit of open files ({hard}) is below "
              f"{a.idle + a.slow + 64}", file=sys.stderr)
        return 2
    base = rss_mib(a.pid)
    print(f"node rss before: {base:.1f} MiB", flush=True)
    idle, r1 = open_conns(a.host, a.port, a.idle, 0, a.per_source)
    slow, r2 = open_conns(a.host, a.port, a.slow, a.announce, a.per_source, a.idle)
    print(f"opened {len(idle)} idle and {len(slow)} slow connections "
          f"({r1 + r2} refused)", flush=True)
    hz = os.sysconf("SC_CLK_TCK")
    t0, c0 = time.monotonic(), cpu_ticks(a.pid)
    peak = rss_mib(a.pid)
    while time.monotonic() - t0 < a.hold_s:
        time.sleep(0.5)
        peak = max(peak, rss_mib(a.pid))
    cpu_pct = 100.0 * (cpu_ticks(a.pid) - c0) / hz / (time.monotonic() - t0)
    print(f"held {a.hold_s:.0f} s: node rss peak {peak:.1f} MiB, node cpu {cpu_pct:.0f}% of a core",
          flush=True)
    for s in idle + slow:
        s.close()
    time.sleep(a.after_s)  # a measurement's settling time, not a wait for a condition
    after = rss_mib(a.pid)
    print(f"node rss {a.after_s:.0f} s after closing: {after:.1f} MiB", flush=True)
    print(f"RESULT idle={a.idle} slow={a.slow} opened={len(idle) + len(slow)} "
          f"rss_base_mib={base:.1f} rss_held_mib={peak:.1f} rss_after_mib={after:.1f} "
          f"node_cpu_pct_held={cpu_pct:.0f} refused={r1 + r2}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""faultproxy.py - a TCP proxy that can cut, black-hole or delay a link.

This machine's kernel has no tc netem and the tests may not own iptables, so
faults on a network link go through this proxy: a peer is configured to
connect to the proxy's port instead of the real one.

    faultproxy.py --listen 127.0.0.1:7300 --target 127.0.0.1:7200 \
                  --mode-file DIR/link.mode [--log FILE]

The mode file holds one word (re-read on SIGHUP, and checked every 100 ms):
    pass           forward both ways (the default when the file is missing)
    cut            close every connection and refuse new ones (peers see resets)
    blackhole      accept and keep connections but forward nothing (peers see silence)
    delay MS       forward after MS milliseconds
Every change of mode is logged with a timestamp: "PROXY mode=cut".
Standard library only.
"""
import argparse
import asyncio
import os
import signal
import sys
import time


class Proxy:
    def __init__(self, target, mode_file, log):
        self.target = target
        self.mode_file = mode_file
        self.log = log
        self.mode = ("pass", 0)
        self.conns = set()
        self.bytes = 0

    def say(self, msg):
        line = "%.3f PROXY %s\n" % (time.time(), msg)
        self.log.write(line)
        self.log.flush()

    def read_mode(self):
        try:
            with open(self.mode_file) as f:
                words = f.read().split()
        except FileNotFoundError:
            words = ["pass"]
        if not words:
            words = ["pass"]
        if words[0] == "delay" and len(words) == 2 and words[1].isdigit():
            mode = ("delay", int(words[1]))
        elif words[0] in ("pass", "cut", "blackhole"):
            mode = (words[0], 0)
        else:
            self.say("ignoring bad mode %r" % " ".join(words))
            return
        if mode != self.mode:
            self.mode = mode
            self.say("mode=%s%s" % (mode[0], " %d" % mode[1] if mode[0] == "delay" else ""))
            if mode[0] == "cut":
                for w in list(self.conns):
                    w.close()

    async def pipe(self, reader, writer):
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                while self.mode[0] == "blackhole":
                    await asyncio.sleep(0.05)  # hold it: the link is silent
                if self.mode[0] == "cut":
                    break
                if self.mode[0] == "delay":
                    await asyncio.sleep(self.mode[1] / 1000.0)
                writer.write(data)
                self.bytes += len(data)
                await writer.drain()
        except (ConnectionError, OSError, asyncio.CancelledError):
            pass
        finally:
            writer.close()

    async def handle(self, reader, writer):
        if self.mode[0] == "cut":
            writer.close()
            return
        host, port = self.target
        try:
            ur, uw = await asyncio.open_connection(host, port)
        except OSError:
            writer.close()
            return
        self.conns.add(writer)
        self.conns.add(uw)
        try:
            await asyncio.gather(self.pipe(reader, uw), self.pipe(ur, writer))
        finally:
            self.conns.discard(writer)
            self.conns.discard(uw)

    async def watch(self):
        while True:
            self.read_mode()
            await asyncio.sleep(0.1)


def hostport(s):
    host, _, port = s.rpartition(":")
    return host, int(port)


async def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--listen", required=True, type=hostport)
    ap.add_argument("--target", required=True, type=hostport)
    ap.add_argument("--mode-file", required=True)
    ap.add_argument("--log")
    a = ap.parse_args()
    log = open(a.log, "a") if a.log else sys.stderr
    p = Proxy(a.target, a.mode_file, log)
    p.read_mode()
    loop = asyncio.get_running_loop()
    loop.add_signal_handler(signal.SIGHUP, p.read_mode)
    stop = asyncio.Event()
    loop.add_signal_handler(signal.SIGTERM, stop.set)
    loop.add_signal_handler(signal.SIGINT, stop.set)
    server = await asyncio.start_server(p.handle, a.listen[0], a.listen[1], reuse_address=True)
    p.say("listening on %s:%d -> %s:%d pid=%d" % (a.listen + a.target + (os.getpid(),)))
    watcher = asyncio.ensure_future(p.watch())
    await stop.wait()
    watcher.cancel()
    server.close()
    for w in list(p.conns):
        w.close()
    p.say("stopped bytes=%d" % p.bytes)


if __name__ == "__main__":
    asyncio.run(main())

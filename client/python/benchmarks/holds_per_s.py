#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""holds_per_s.py - how fast one Python process checks out through escrow:
N buyers, each reserve + confirm (as escrow-load --confirm 1 --release 0),
with C calls in flight, either from C threads sharing one escrow.Client or
from C asyncio tasks on one escrow.AsyncClient. Prints one line

  RESULT mode=threads holds_ok=... holds_per_s=... p50_ms=... p99_ms=... errors=...

(holds_ok / wall time of the run; latency of the reserve). A benchmark: it
asserts nothing. tests/support/bench_bindings.sh runs it next to
escrow-load on the same cluster.

  holds_per_s.py --mode threads|asyncio --coordinator URL --routes URL
                 --tenant T --item I --buyers N --concurrency C [--credential KEY]
"""

import argparse
import asyncio
import itertools
import sys
import threading
import time

import escrow


def summary(mode, ok, errors, lat, elapsed):
    lat.sort()
    pct = lambda p: lat[min(len(lat) - 1, int(p * len(lat)))] * 1000 if lat else 0.0
    print(f"RESULT mode={mode} holds_ok={ok} holds_per_s={ok / elapsed:.0f} "
          f"p50_ms={pct(0.50):.1f} p99_ms={pct(0.99):.1f} errors={sum(errors.values())} "
          f"seconds={elapsed:.2f}")
    for name, n in sorted(errors.items()):
        print(f"  error {name}: {n}", file=sys.stderr)


def run_threads(a, opts):
    client = escrow.Client(**opts)
    ids = itertools.count()  # next() is atomic under the GIL
    lock = threading.Lock()
    ok, errors, lat = [0], {}, []

    def worker():
        mine_ok, mine_lat, mine_err = 0, [], {}
        while (i := next(ids)) < a.buyers:
            t0 = time.perf_counter()
            try:
                hold = client.reserve(a.item, f"buyer-{i}", f"{a.item}-{i}")
                mine_lat.append(time.perf_counter() - t0)
                client.confirm(hold)
                mine_ok += 1
            except escrow.EscrowError as e:
                mine_err[e.name] = mine_err.get(e.name, 0) + 1
        with lock:
            ok[0] += mine_ok
            lat.extend(mine_lat)
            for k, v in mine_err.items():
                errors[k] = errors.get(k, 0) + v

    threads = [threading.Thread(target=worker) for _ in range(a.concurrency)]
    t0 = time.perf_counter()
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    elapsed = time.perf_counter() - t0
    client.close()
    summary("threads", ok[0], errors, lat, elapsed)


async def run_asyncio(a, opts):
    ids = itertools.count()
    ok, errors, lat = [0], {}, []
    async with escrow.AsyncClient(**opts) as client:

        async def worker():
            while (i := next(ids)) < a.buyers:
                t0 = time.perf_counter()
                try:
                    hold = await client.reserve(a.item, f"buyer-{i}", f"{a.item}-{i}")
                    lat.append(time.perf_counter() - t0)
                    await client.confirm(hold)
                    ok[0] += 1
                except escrow.EscrowError as e:
                    errors[e.name] = errors.get(e.name, 0) + 1

        t0 = time.perf_counter()
        await asyncio.gather(*(worker() for _ in range(a.concurrency)))
        elapsed = time.perf_counter() - t0
    summary("asyncio", ok[0], errors, lat, elapsed)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mode", choices=["threads", "asyncio"], required=True)
    p.add_argument("--coordinator", required=True)
    p.add_argument("--routes")
    p.add_argument("--tenant", default="t1")
    p.add_argument("--item", required=True)
    p.add_argument("--buyers", type=int, default=20000)
    p.add_argument("--concurrency", type=int, default=256)
    p.add_argument("--credential")
    p.add_argument("--deadline-ms", type=int, default=5000)
    a = p.parse_args()
    opts = dict(coordinator=a.coordinator, routes=a.routes, tenant=a.tenant,
                credential=a.credential, deadline_ms=a.deadline_ms)
    if a.mode == "threads":
        run_threads(a, opts)
    else:
        asyncio.run(run_asyncio(a, opts))


if __name__ == "__main__":
    main()

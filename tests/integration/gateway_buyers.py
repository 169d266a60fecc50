#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gateway_buyers.py - many buyers through escrow-gateway at once, for the
race and restart tests: THREADS clients (one keep-alive HTTPS connection
each, examples/gateway/escrow_gateway.py) share BUYERS buyers; each buyer
reserves one unit with its own Idempotency-Key "<prefix>-<b>", retrying
what is retryable and lost connections with the same key for --retry-s
seconds; with --confirm a buyer that got a hold confirms it; with --twins
every fifth buyer is sent twice at once (same buyer, same key) by two
clients. Writes "key status hold_id tries" per answer to OUT ("-" for no
hold) and prints a RESULT line with the outcomes.

    gateway_buyers.py URL KEY_FILE CA_FILE ITEM BUYERS THREADS OUT LIB_DIR
                      [--prefix P] [--confirm] [--twins] [--retry-s S]
"""
import argparse
import http.client
import queue
import sys
import threading


def main():
    p = argparse.ArgumentParser()
    for a in ("url", "key_file", "ca_file", "item"):
        p.add_argument(a)
    p.add_argument("buyers", type=int)
    p.add_argument("threads", type=int)
    p.add_argument("out")
    p.add_argument("lib_dir")
    p.add_argument("--prefix", default="buyer")
    p.add_argument("--confirm", action="store_true")
    p.add_argument("--twins", action="store_true")
    p.add_argument("--retry-s", type=float, default=20.0)
    o = p.parse_args()
    sys.path.insert(0, o.lib_dir)
    from escrow_gateway import Client, EscrowError

    key = open(o.key_file).read().strip()
    work = queue.Queue()
    for b in range(o.buyers):
        work.put(b)
        if o.twins and b % 5 == 0:
            work.put(b)  # its twin: the same buyer and key, on another client
    lock = threading.Lock()
    lines, tally = [], {"sold": 0, "held": 0, "sold_out": 0, "try_later": 0, "errors": 0}
    start = threading.Barrier(o.threads)

    def buy(c, b):
        k = f"{o.prefix}-{b}"
        try:
            hold = c.reserve(o.item, f"buyer-{b}", 1, idempotency_key=k)
            line = f"{k} {c.status} {hold['id']} {c.tries}"
            if not o.confirm:
                return "held", line
            return ("sold" if c.confirm(hold["id"])["state"] == "converted" else "errors"), line
        except EscrowError as e:
            outcome = e.code if e.code in tally else "errors"
            if outcome == "errors":
                print(f"{k}: {e}", file=sys.stderr)
            return outcome, f"{k} {e.status} - {c.tries}"
        except (OSError, http.client.HTTPException) as e:
            print(f"{k}: {e}", file=sys.stderr)
            return "errors", f"{k} 000 - {c.tries}"

    def run():
        c = Client(o.url, key, cafile=o.ca_file, retry_for_s=o.retry_s)
        start.wait()  # every client starts at once
        while True:
            try:
                b = work.get_nowait()
            except queue.Empty:
                break
            outcome, line = buy(c, b)
            with lock:
                tally[outcome] += 1
                lines.append(line)
        c.close()

    ts = [threading.Thread(target=run) for _ in range(o.threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(o.out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("RESULT " + " ".join(f"{k}={v}" for k, v in tally.items()))


if __name__ == "__main__":
    main()

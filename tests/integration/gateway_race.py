#!/usr/bin/env python3
"""gateway_race.py - a flash sale through escrow-gateway: THREADS concurrent
HTTPS clients (one keep-alive connection each) for BUYERS buyers; every
fifth buyer's reserve is sent twice at the same time, by two clients, with
the same Idempotency-Key. Each buyer that gets a hold confirms it. Writes one
line per answer to OUT ("key status hold_id") and prints a RESULT line.

    gateway_race.py URL KEY_FILE CA_FILE ITEM BUYERS THREADS OUT [LIB_DIR]
"""
import queue
import sys
import threading

sys.path.insert(0, sys.argv[8] if len(sys.argv) > 8 else "examples/gateway")
from escrow_gateway import Client, EscrowError  # noqa: E402


def main():
    url, key_file, cafile, item = sys.argv[1:5]
    buyers, threads, out = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
    key = open(key_file).read().strip()
    work = queue.Queue()
    for b in range(buyers):
        work.put(b)
        if b % 5 == 0:
            work.put(b)  # its twin: the same buyer and key, on another client
    lock = threading.Lock()
    lines, tally = [], {"sold": 0, "sold_out": 0, "try_later": 0, "errors": 0}
    start = threading.Barrier(threads)

    def run():
        c = Client(url, key, cafile=cafile, retry_for_s=20.0)
        start.wait()  # every client connected at once
        while True:
            try:
                b = work.get_nowait()
            except queue.Empty:
                break
            k = f"race-{b}"
            try:
                hold = c.reserve(item, f"buyer-{b}", 1, idempotency_key=k)
                status = c.status
                sold = c.confirm(hold["id"])
                outcome = "sold" if sold["state"] == "converted" else "errors"
                line = f"{k} {status} {hold['id']}"
            except EscrowError as e:
                outcome = e.code if e.code in tally else "errors"
                line = f"{k} {e.status} -"
                if outcome == "errors":
                    print(f"{k}: {e}", file=sys.stderr)
            except OSError as e:
                outcome, line = "errors", f"{k} 000 -"
                print(f"{k}: {e}", file=sys.stderr)
            with lock:
                tally[outcome] += 1
                lines.append(line)
        c.close()

    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print("RESULT " + " ".join(f"{k}={v}" for k, v in tally.items()))


if __name__ == "__main__":
    main()

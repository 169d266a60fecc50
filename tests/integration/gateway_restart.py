#!/usr/bin/env python3
"""gateway_restart.py - reserves through escrow-gateway while the test kills
and restarts it: THREADS clients reserve BUYERS buyers, one key each; a
connection that fails (the gateway died) is retried with the same key until
the gateway is back (escrow_gateway.Client retries lost connections for
retry_for_s). Writes "key status hold_id attempts" per buyer to OUT.

    gateway_restart.py URL KEY_FILE CA_FILE ITEM BUYERS THREADS OUT LIB_DIR
"""
import http.client
import queue
import sys
import threading

sys.path.insert(0, sys.argv[8])
from escrow_gateway import Client, EscrowError  # noqa: E402


def main():
    url, key_file, cafile, item = sys.argv[1:5]
    buyers, threads, out = int(sys.argv[5]), int(sys.argv[6]), sys.argv[7]
    key = open(key_file).read().strip()
    work = queue.Queue()
    for b in range(buyers):
        work.put(b)
    lock = threading.Lock()
    lines = []

    def run():
        c = Client(url, key, cafile=cafile, retry_for_s=120.0, timeout_s=30.0)
        while True:
            try:
                b = work.get_nowait()
            except queue.Empty:
                break
            k = f"restart-{b}"
            tries = 0
            while True:
                tries += 1
                try:
                    hold = c.request("POST", "/v1/holds",
                                     {"item": item, "buyer": f"buyer-{b}", "qty": 1}, k)
                    line = f"{k} {c.status} {hold['id']} {tries}"
                    break
                except EscrowError as e:
                    if not e.retryable or tries > 2000:
                        line = f"{k} {e.status} - {tries}"
                        break
                except (OSError, http.client.HTTPException):
                    if tries > 2000:
                        line = f"{k} 000 - {tries}"
                        break
                threading.Event().wait(0.05)
            with lock:
                lines.append(line)
        c.close()

    ts = [threading.Thread(target=run) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    with open(out, "w") as f:
        f.write("\n".join(lines) + "\n")
    print(f"RESTART-CLIENTS buyers={buyers} answered={sum(1 for l in lines if ' - ' not in l)}")


if __name__ == "__main__":
    main()

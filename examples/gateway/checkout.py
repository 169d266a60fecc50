#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""checkout.py - checkout through escrow-gateway with Python's standard
library (escrow_gateway.py): each buyer reserves one unit with an
Idempotency-Key of its own, pays (here: nothing), confirms; a sold-out item
ends the sale. Prints one line per outcome and a RESULT line.

    checkout.py URL KEY_FILE CA_FILE ITEM BUYERS [THREADS]
"""
import sys
import threading

from escrow_gateway import Client, EscrowError


def main():
    url, key_file, cafile, item = sys.argv[1:5]
    buyers = int(sys.argv[5])
    threads = int(sys.argv[6]) if len(sys.argv) > 6 else 1
    key = open(key_file).read().strip()
    tally = {"sold": 0, "sold_out": 0, "try_later": 0, "replayed": 0, "errors": 0}
    lock = threading.Lock()
    next_buyer = iter(range(buyers))

    def count(what):
        with lock:
            tally[what] += 1

    def work():
        c = Client(url, key, cafile=cafile)
        while True:
            with lock:
                b = next(next_buyer, None)
            if b is None:
                break
            try:
                hold = c.reserve(item, f"buyer-{b}", 1, idempotency_key=f"checkout-{item}-{b}")
                if c.replayed:
                    count("replayed")
                c.confirm(hold["id"])
                count("sold")
            except EscrowError as e:
                if e.code == "sold_out":
                    count("sold_out")
                elif e.code == "try_later":
                    count("try_later")  # still held by others after retry_for_s
                else:
                    print(f"buyer-{b}: {e}", file=sys.stderr)
                    count("errors")
        c.close()

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    print("RESULT " + " ".join(f"{k}={v}" for k, v in tally.items()))
    return 1 if tally["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())

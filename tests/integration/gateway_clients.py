#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gateway_clients.py - the Python client of examples/gateway/escrow_gateway.py
(standard library only) through everything a checkout and an order system do:
reserve (new, then a replay), extend, release, a cart, confirm, and the event
feed as SSE with a committed cursor. Exits non-zero on the first surprise.

    gateway_clients.py URL KEY_FILE CA_FILE ITEM
"""
import sys

sys.path.insert(0, sys.argv[5] if len(sys.argv) > 5 else "examples/gateway")
from escrow_gateway import Client, EscrowError  # noqa: E402


def check(cond, what):
    if not cond:
        print("FAIL:", what)
        sys.exit(1)


def main():
    url, key_file, cafile, item = sys.argv[1:5]
    c = Client(url, open(key_file).read().strip(), cafile=cafile)
    h = c.reserve(item, "py-1", 2, idempotency_key="py-k1")
    check(c.status == 201 and not c.replayed and h["state"] == "held", f"reserve: {c.status} {h}")
    again = c.reserve(item, "py-1", 2, idempotency_key="py-k1")
    check(c.status == 200 and c.replayed and again["id"] == h["id"], "the replay")
    try:
        c.reserve(item, "py-1", 1, idempotency_key="py-k1")
        check(False, "a mismatch was accepted")
    except EscrowError as e:
        check(e.status == 422 and e.code == "idempotency_mismatch" and not e.retryable, str(e))
    check(c.extend(h["id"], ttl_ms=60000)["extended"], "extend")
    check(c.release(h["id"])["state"] == "cancelled", "release")
    holds = c.cart("py-2", [(item, 1), (item, 1)], idempotency_key="py-cart")
    check(len(holds) == 1 and holds[0]["qty"] == 2, f"cart: {holds}")
    sold = c.confirm(holds[0]["id"])
    check(sold["state"] == "converted" and sold["qty_sold"] == 2, f"confirm: {sold}")
    try:
        c.get("1099511627999")
        check(False, "an unknown hold was found")
    except EscrowError as e:
        check(e.status == 404 and e.code == "not_found", str(e))
    # the order system: held, extended, cancelled (py-1), held, converted (the cart)
    want = ["held", "extended", "cancelled", "held", "converted"]
    seen = []
    stream = c.events("py-orders", item=item)
    for event_id, kind, ev in stream:
        check(ev["kind"] == kind and ev["event_id"] == event_id, f"event {event_id} {kind} {ev}")
        seen.append((event_id, kind))
        if len(seen) == len(want):
            break
    stream.close()
    check([k for _, k in seen] == want, f"events {seen}")
    ack = c.commit_cursor("py-orders", seen[-1][0])
    check(ack["moved"] and ack["event_id"] == seen[-1][0], f"cursor {ack}")
    c.close()
    print(f"PY-CLIENT ok hold={h['id']} cart={holds[0]['id']} events={len(seen)}")


if __name__ == "__main__":
    main()

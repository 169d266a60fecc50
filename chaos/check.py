#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check.py - the chaos suite's checker: client histories of a real cluster,
the nemesis log, the periodic audits and the final database dump.

    check.py --dump DUMP.json [--audits AUDITS.jsonl] [--nemesis NEMESIS.jsonl]
             [--run RUN.json] HISTORY.jsonl...

History format (Jepsen style, shared with tests/sim/check_history.py): one
JSON object per line, {"type": "invoke"|"ok"|"fail"|"info", "f": ...,
"process": P, "time": unix-us, "tenant": T, "value": {...}}. A process has
one call outstanding: a completion answers the process's last invoke; an
invoke never answered is "info" (outcome unknown). f is reserve (value: item,
key, buyer, qty, ttl; replies: hold, seg, item, hqty, qty_sold, state,
expires in unix ms, error), confirm / release / get (value: hold), cart
(value: key, buyer, lines [{item, qty}]; replies: holds [...]). "fail" is a
definite answer (nothing changed, or the reply states the outcome); "info"
is unknown. chaos_client writes these; tests/sim's store-log events are not
used here: a real cluster's ground truth is the database dump (holds,
segments, transfers, conservation view, terminal outbox events) plus the
audits taken during the run (escrowctl check, epochs, counters).

Properties (named as in chaos/history.py, the history library this checker
shares with tests/sim/check_history.py); each violation names the first
offending events (file:line):
  P1 no oversell: held + sold <= total in every audit and at the end; at
     every acknowledged reserve, acknowledged live holds + sold <= total
  P2 conservation incl. transfers in flight (every audit, and the end)
  P3 acknowledged = durable (lost = 0) and nothing nobody asked for
     (unexpected = 0)
  P4 one hold per (tenant, key); identical replies per key
  P5 every ended hold ended exactly once (one terminal event, its kind =
     its state); counters equal the holds behind them
  P6 no confirm acknowledged when every confirm of the hold was invoked
     after its expiry
  P7 no hold written under an epoch the audits had already seen replaced
  P8 carts all-or-nothing
  P9 after the last heal every segment was served again within the bound,
     and every item sold out (RUN.json from chaos.py, and the dump)
Prints "VIOLATION Pn ..." lines, then "FIGURES key=value ...". Exit 0 when
every property holds, 1 otherwise, 2 on bad input. Python 3 stdlib only.
"""
import argparse
import json
import os
import sys

from history import (PROPERTIES, Calls, EpochLog, HoldLedger, KeyReplies, Violations,
                     counters_broken, read_jsonl, unasked_reason)

PROPS = list(PROPERTIES)


class Checker:
    def __init__(self):
        self.v = Violations(PROPS)
        self.calls = Calls(self.v)
        self.lost = self.unexpected = 0

    @property
    def ops(self):
        return self.calls.ops

    def bad(self, p, msg, *events):
        self.v.add(p, msg, *events)

    # ---- input -----------------------------------------------------------
    def load(self, paths):
        for path in paths:
            name = os.path.basename(path)
            for n, ev in read_jsonl(path):
                self.calls.feed(ev, "%s:%d" % (name, n))
            self.calls.end_of_file()

    # ---- the checks ------------------------------------------------------
    def run(self, dump, audits, runinfo):
        self.dump = dump
        holds = dump.get("holds") or []
        self.by_id = {h["hold"]: h for h in holds}
        self.by_key = {}
        # The database's holds as a ledger (one per key: P4), ended by the
        # outbox's terminal events (check_ends).
        self.ledger = HoldLedger(self.v)
        for h in holds:
            k = (h["tenant"], h["key"])
            self.ledger.insert(h["hold"], k, h["qty"], h["seg"], evidence=("dump", h))
            self.by_key[k] = h
        self.totals = {(i["tenant"], i["item"]): i["total"] for i in dump.get("items") or []}
        self.check_ops()
        self.check_unexpected(holds)
        self.check_books(dump, audits)
        self.check_ends(holds, dump.get("ends") or [])
        self.check_epochs(holds, audits)
        self.check_oversell_history()
        self.check_p9(dump, runinfo)

    def tk(self, op, key):
        return (op.tenant, key)

    def check_ops(self):
        self.key_replies = KeyReplies(self.v)
        self.invoked_keys = {}
        self.ended_by = {"confirm": set(), "release": set()}
        self.cart_keys = set()
        # A confirm answered after the expiry is fine when an earlier confirm of
        # the same hold was invoked before it (retries get the first outcome).
        first_confirm = {}
        for op in self.ops:
            if op.f == "confirm":
                hid = op.ival["hold"]
                first_confirm[hid] = min(first_confirm.get(hid, 1 << 62), op.inv["time"])
        for op in self.ops:
            iv, v = op.ival, op.val
            if op.f == "reserve":
                k = self.tk(op, iv["key"])
                self.invoked_keys.setdefault(k, []).append(op)
                if op.type == "ok":
                    self.acked_hold(op, k, v, iv["qty"], iv["item"])
            elif op.f in ("confirm", "release"):
                hid = iv["hold"]
                self.ended_by[op.f].add(hid)
                if op.type == "ok":
                    h = self.by_id.get(hid)
                    if h is None or h["state"] != v.get("state"):
                        self.lost += 1
                        self.bad("P3", "acknowledged %s of hold %s (reply state %s) is lost: the "
                                 "database has %s" % (op.f, hid, v.get("state"),
                                                      h and h["state"]),
                                 (op.where, op.inv), (op.cwhere, op.comp), ("dump", h))
                    if op.f == "confirm" and v.get("expires") and \
                            first_confirm[hid] > v["expires"] * 1000:
                        self.bad("P6", "confirm of hold %s invoked %.1f ms after its expiry and "
                                 "acknowledged" % (hid, op.inv["time"] / 1000.0 - v["expires"]),
                                 (op.where, op.inv), (op.cwhere, op.comp))
            elif op.f == "cart":
                self.check_cart(op)

    def acked_hold(self, op, k, v, qty, item):
        h = self.by_key.get(k)
        if h is None or h["hold"] != v.get("hold") or h["qty"] != qty or h["item"] != item:
            self.lost += 1
            self.bad("P3", "acknowledged hold %s (key %s/%s) is lost or differs in the database"
                     % (v.get("hold"), k[0], k[1]), (op.where, op.inv), (op.cwhere, op.comp),
                     ("dump", h))
        self.key_replies.ack(k, "hold %s qty %s" % (v.get("hold"), v.get("hqty")),
                             (op.cwhere, op.comp))

    def check_cart(self, op):
        iv, v = op.ival, op.val
        want = {}
        for line in iv["lines"]:
            want[line["item"]] = want.get(line["item"], 0) + line["qty"]
        keys = {self.tk(op, "%s/%s" % (iv["key"], item)): (item, q) for item, q in want.items()}
        for k in keys:
            self.invoked_keys.setdefault(k, []).append(op)
            self.cart_keys.add(k)
        if op.type == "ok":
            got = {h["item"]: h for h in v.get("holds", [])}
            if set(got) != set(want):
                self.bad("P8", "cart %s acknowledged holds for %s, asked for %s"
                         % (iv["key"], sorted(got), sorted(want)), (op.where, op.inv),
                         (op.cwhere, op.comp))
            for k, (item, q) in keys.items():
                if item in got:
                    self.acked_hold(op, k, got[item], q, item)
        elif op.type == "fail":
            for k in keys:
                h = self.by_key.get(k)
                if h is not None and h["state"] in ("held", "converted"):
                    self.bad("P8", "cart %s failed (%s) but its line %s is %s in the database"
                             % (iv["key"], v.get("error"), k[1], h["state"]),
                             (op.where, op.inv), (op.cwhere, op.comp), ("dump", h))

    def check_unexpected(self, holds):
        for h in holds:
            k = (h["tenant"], h["key"])
            ops = self.invoked_keys.get(k)
            refused = None
            if ops and k not in self.cart_keys and all(
                    o.type == "fail" and o.val.get("error") != "IDEMPOTENCY_MISMATCH"
                    for o in ops):
                # (a failed cart's earlier lines were held, then compensated: P8)
                refused = "every request with its key was answered with a definite failure " \
                    "(%s)" % ", ".join(sorted({o.val.get("error", "?") for o in ops}))
            why = unasked_reason(h, bool(ops), h["hold"] in self.ended_by["confirm"],
                                 h["hold"] in self.ended_by["release"] or k in self.cart_keys,
                                 refused)
            if why:
                self.unexpected += 1
                o = ops[0] if ops else None
                self.bad("P3", "unexpected hold %s (%s/%s, %s): %s"
                         % (h["hold"], k[0], k[1], h["state"], why), ("dump", h),
                         (o.where, o.inv) if o else None, (o.cwhere, o.comp) if o else None)

    def check_books(self, dump, audits):
        for c in dump.get("conservation") or []:
            if not c["ok"]:
                self.bad("P2", "final: conservation broken for %s/%s" % (c["tenant_id"],
                                                                         c["item_id"]),
                         ("dump", c))
            why = counters_broken(c["available"], c["held"], c["sold"], c["total"])
            if why:
                self.bad("P1", "final: %s/%s: %s" % (c["tenant_id"], c["item_id"], why),
                         ("dump", c))
        for s in dump.get("segments") or []:
            why = counters_broken(s["available"], s["held"], s["sold"])
            if why:
                self.bad("P1", "final: segment %d: %s" % (s["id"], why), ("dump", s))
        for a in dump.get("agree") or []:
            self.bad("P5", "final: segment %s counters held=%s sold=%s, its holds say %s/%s"
                     % (a["segment_id"], a["held"], a["sold"], a["holds_live"],
                        a["holds_sold"]), ("dump", a))
        for where, a in audits:
            v = a["value"]
            if v.get("rc") == 1:
                self.bad("P2", "audit: escrowctl check failed: %s" % v.get("out", "")[-300:],
                         (where, a))
            for c in (v.get("snap") or {}).get("items") or []:
                if not c["ok"]:
                    self.bad("P2", "audit: conservation broken for %s/%s"
                             % (c["tenant_id"], c["item_id"]), (where, c))
                if c["held"] + c["sold"] > c["total"]:
                    self.bad("P1", "audit: %s/%s: held %d + sold %d > total %d"
                             % (c["tenant_id"], c["item_id"], c["held"], c["sold"], c["total"]),
                             (where, c))

    def check_ends(self, holds, ends):
        """Every ended hold ended exactly once, by an event of its kind: the
        outbox's terminal events replayed on the database's holds (events of
        holds the dump does not have are not judged)."""
        first = {}
        for e in ends:
            if e["hold"] in self.ledger.holds:
                first.setdefault(e["hold"], e)
                self.ledger.end(e["hold"], e["kind"], e.get("qty", 0), evidence=("outbox", e))
        for h in holds:
            why = self.ledger.disagrees(h["hold"], h["state"])
            if why:
                self.bad("P5", why, ("dump", h), ("outbox", first.get(h["hold"])))

    def check_epochs(self, holds, audits):
        epochs = EpochLog()
        for where, a in audits:
            snap = a["value"].get("snap") or {}
            for seg, e in (snap.get("epochs") or {}).items():
                epochs.see(seg, e, snap["at"], where)
        epochs.sort()
        for h in holds:
            seen = epochs.fenced(h["seg"], h["epoch"], h["created"])
            if seen:
                self.bad("P7", "hold %s written by a transaction that began at %d under epoch "
                         "%d of segment %d, but the audit at %d had already seen epoch %d"
                         % (h["hold"], h["created"], h["epoch"], h["seg"], seen[0], seen[1]),
                         ("dump", h), (seen[2], None))

    def check_oversell_history(self):
        """At each acknowledged reserve, acknowledged holds that must still be
        live plus acknowledged sales stay within the item's total."""
        items = {}
        end_at = {}
        sold_at = {}
        for op in self.ops:
            if op.f in ("confirm", "release") and op.inv:
                hid = op.ival["hold"]
                end_at[hid] = min(end_at.get(hid, 1 << 62), op.inv["time"])
                if op.f == "confirm" and op.type == "ok":
                    sold_at[hid] = (op.comp["time"], op.val.get("qty_sold", 0))
        seen = set()
        for op in sorted(self.ops, key=lambda o: o.comp["time"] if o.comp else 1 << 62):
            hs = []
            if op.f == "reserve" and op.type == "ok":
                hs = [op.val]
            elif op.f == "cart" and op.type == "ok":
                hs = op.val.get("holds", [])
            for h in hs:
                key = (op.tenant, h["item"])
                if (op.tenant, h["hold"]) in seen:
                    continue  # the same hold acknowledged again (a retried key): count it once
                seen.add((op.tenant, h["hold"]))
                start = op.comp["time"]
                if h["hold"] in sold_at:
                    end = 1 << 62  # sold: the units never come back
                else:
                    end = min(end_at.get(h["hold"], 1 << 62), h["expires"] * 1000)
                items.setdefault(key, []).append((start, end, h["hqty"], op))
        for key, lst in items.items():
            total = self.totals.get(key)
            if total is None:
                continue
            ev = []
            for start, end, q, op in lst:
                if end > start:
                    ev.append((start, 1, q, op))
                    ev.append((end, 0, q, op))
            ev.sort(key=lambda e: (e[0], e[1]))
            live = 0
            for t, kind, q, op in ev:
                live += q if kind == 1 else -q
                if kind == 1 and live > total:
                    self.bad("P1", "%s/%s: %d units acknowledged as held at once, total %d"
                             % (key[0], key[1], live, total), (op.cwhere, op.comp))
                    break

    def check_p9(self, dump, runinfo):
        for p in (runinfo or {}).get("p9", []):
            if not p.get("met"):
                self.bad("P9", "phase %s: served %s/%s segments (max %s s, bound %s s), items "
                         "sold out %s/%s" % (p["phase"], p["served"], p["segments"],
                                             p["served_max_s"], p["served_bound_s"],
                                             p["sold_out"], p["items"]), ("run", p))
        if runinfo is not None:
            for c in dump.get("conservation") or []:
                if c["sold"] != c["total"] or c["held"] != 0:
                    self.bad("P9", "final: %s/%s did not sell out: sold %d of %d, held %d"
                             % (c["tenant_id"], c["item_id"], c["sold"], c["total"], c["held"]),
                             ("dump", c))

    # ---- output ----------------------------------------------------------
    def report(self):
        for p in PROPS:
            for msg, evs in self.v.examples(p):
                print("VIOLATION %s (%s): %s" % (p, PROPERTIES[p], msg))
                for where, ev in evs:
                    print("    %s: %s" % (where, json.dumps(ev, sort_keys=True)[:300]))
            if self.v.count(p) > len(self.v.examples(p)):
                print("VIOLATION %s: ... %d more" % (p, self.v.count(p) - len(self.v.examples(p))))
        n = {t: 0 for t in ("ok", "fail", "info")}
        for op in self.ops:
            n[op.type] += 1
        figs = ["ops=%d" % len(self.ops), "ok=%d" % n["ok"], "fail=%d" % n["fail"],
                "info=%d" % n["info"], "lost=%d" % self.lost, "unexpected=%d" % self.unexpected]
        figs += ["%s=%d" % (p, self.v.count(p)) for p in PROPS]
        print("FIGURES " + " ".join(figs))
        return 1 if self.v else 0


def read_audits(path):
    """The audits as (file:line, event); none without a path."""
    if not path:
        return []
    name = os.path.basename(path)
    return [("%s:%d" % (name, n), ev) for n, ev in read_jsonl(path)]


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--dump", required=True)
    ap.add_argument("--audits")
    ap.add_argument("--nemesis")
    ap.add_argument("--run")
    ap.add_argument("histories", nargs="*")
    a = ap.parse_args(argv)
    try:
        with open(a.dump) as f:
            dump = json.load(f)
        runinfo = None
        if a.run:
            with open(a.run) as f:
                runinfo = json.load(f)
        c = Checker()
        c.load(a.histories)
        audits = read_audits(a.audits)
    except (OSError, ValueError, KeyError) as e:
        print("check.py: bad input: %s" % e, file=sys.stderr)
        return 2
    c.run(dump, audits, runinfo)
    return c.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

#!/usr/bin/env python3
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

Properties; each violation names the first offending events (file:line):
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
from bisect import bisect_left

PROPS = ["P1", "P2", "P3", "P4", "P5", "P6", "P7", "P8", "P9"]
NAMES = {"P1": "no oversell", "P2": "conservation", "P3": "acknowledged = durable",
         "P4": "one hold per key, identical replies", "P5": "units return exactly once",
         "P6": "no confirm after expiry", "P7": "nothing acknowledged under a fenced epoch",
         "P8": "carts all-or-nothing", "P9": "served again and the sale completes"}
FINAL = ("converted", "cancelled", "expired")


class Op:
    __slots__ = ("f", "tenant", "inv", "comp", "where", "cwhere")

    def __init__(self, f, tenant, inv, where):
        self.f, self.tenant, self.inv, self.where = f, tenant, inv, where
        self.comp, self.cwhere = None, None

    @property
    def type(self):
        return self.comp["type"] if self.comp else "info"

    @property
    def val(self):
        return self.comp.get("value", {}) if self.comp else {}

    @property
    def ival(self):
        return self.inv.get("value", {})


class Checker:
    def __init__(self):
        self.v = {p: [] for p in PROPS}
        self.nv = {p: 0 for p in PROPS}
        self.ops = []
        self.lost = self.unexpected = 0

    def bad(self, p, msg, *events):
        self.nv[p] += 1
        if len(self.v[p]) < 5:
            self.v[p].append((msg, [e for e in events if e is not None]))

    # ---- input -----------------------------------------------------------
    def load(self, paths):
        for path in paths:
            pending = {}
            name = os.path.basename(path)
            with open(path) as f:
                for n, text in enumerate(f, 1):
                    text = text.strip()
                    if not text:
                        continue
                    try:
                        ev = json.loads(text)
                    except ValueError:
                        # a client killed mid-line leaves a torn last line
                        continue
                    where = "%s:%d" % (name, n)
                    p = ev.get("process")
                    if ev["type"] == "invoke":
                        if p in pending:
                            self.bad("P3", "process %s invoked again before its completion" % p,
                                     (where, ev))
                        op = Op(ev["f"], ev.get("tenant", ""), ev, where)
                        pending[p] = op
                        self.ops.append(op)
                    else:
                        op = pending.pop(p, None)
                        if op is None:
                            self.bad("P3", "completion without an invoke", (where, ev))
                            continue
                        op.comp, op.cwhere = ev, where

    # ---- the checks ------------------------------------------------------
    def run(self, dump, audits, runinfo):
        self.dump = dump
        holds = dump.get("holds") or []
        self.by_id = {h["hold"]: h for h in holds}
        self.by_key = {}
        for h in holds:
            k = (h["tenant"], h["key"])
            if k in self.by_key:
                self.bad("P4", "key %s/%s has two holds in the database: %s and %s"
                         % (k[0], k[1], self.by_key[k]["hold"], h["hold"]), ("dump", h))
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
        self.key_reply = {}
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
        first = self.key_reply.setdefault(k, (v.get("hold"), v.get("hqty"), op))
        if (first[0], first[1]) != (v.get("hold"), v.get("hqty")):
            self.bad("P4", "key %s/%s answered hold %s qty %s, earlier hold %s qty %s"
                     % (k[0], k[1], v.get("hold"), v.get("hqty"), first[0], first[1]),
                     (first[2].cwhere, first[2].comp), (op.cwhere, op.comp))

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
            why = None
            if not ops:
                why = "no client asked for its key"
            elif k not in self.cart_keys and all(
                    o.type == "fail" and o.val.get("error") != "IDEMPOTENCY_MISMATCH"
                    for o in ops):
                # (a failed cart's earlier lines were held, then compensated: P8)
                why = "every request with its key was answered with a definite failure (%s)" % (
                    ", ".join(sorted({o.val.get("error", "?") for o in ops})))
            elif h["state"] == "converted" and h["hold"] not in self.ended_by["confirm"]:
                why = "converted, but nobody confirmed it"
            elif h["state"] == "cancelled" and h["hold"] not in self.ended_by["release"] \
                    and k not in self.cart_keys:
                why = "cancelled, but nobody released it"
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
            if c["held"] + c["sold"] > c["total"] or min(c["held"], c["sold"],
                                                         c["available"]) < 0:
                self.bad("P1", "final: %s/%s held %d + sold %d > total %d"
                         % (c["tenant_id"], c["item_id"], c["held"], c["sold"], c["total"]),
                         ("dump", c))
        for s in dump.get("segments") or []:
            if min(s["available"], s["held"], s["sold"]) < 0:
                self.bad("P1", "final: segment %d below zero" % s["id"], ("dump", s))
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
                    self.bad("P1", "audit: %s/%s held + sold > total"
                             % (c["tenant_id"], c["item_id"]), (where, c))

    def check_ends(self, holds, ends):
        by_hold = {}
        for e in ends:
            by_hold.setdefault(e["hold"], []).append(e)
        for h in holds:
            es = by_hold.get(h["hold"], [])
            if h["state"] == "held":
                if es:
                    self.bad("P5", "hold %s is held but has ended %d times" % (h["hold"],
                                                                                len(es)),
                             ("dump", h), ("outbox", es[0]))
            elif len(es) != 1 or es[0]["kind"] != h["state"]:
                self.bad("P5", "hold %s is %s with %d terminal events %s"
                         % (h["hold"], h["state"], len(es), [e["kind"] for e in es]),
                         ("dump", h), ("outbox", es[:3]))

    def check_epochs(self, holds, audits):
        seen = {}  # seg -> [(at, epoch)] in time order
        for where, a in audits:
            snap = a["value"].get("snap") or {}
            for seg, e in (snap.get("epochs") or {}).items():
                seen.setdefault(int(seg), []).append((snap["at"], e, where))
        for lst in seen.values():
            lst.sort()
        for h in holds:
            lst = seen.get(h["seg"])
            if not lst:
                continue
            i = bisect_left(lst, (h["created"], -1, "")) - 1
            if i >= 0 and lst[i][1] > h["epoch"]:
                self.bad("P7", "hold %s written by a transaction that began at %d under epoch "
                         "%d of segment %d, but the audit at %d had already seen epoch %d"
                         % (h["hold"], h["created"], h["epoch"], h["seg"], lst[i][0],
                            lst[i][1]), ("dump", h), (lst[i][2], None))

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
            for msg, evs in self.v[p]:
                print("VIOLATION %s (%s): %s" % (p, NAMES[p], msg))
                for where, ev in evs:
                    print("    %s: %s" % (where, json.dumps(ev, sort_keys=True)[:300]))
            if self.nv[p] > len(self.v[p]):
                print("VIOLATION %s: ... %d more" % (p, self.nv[p] - len(self.v[p])))
        n = {t: 0 for t in ("ok", "fail", "info")}
        for op in self.ops:
            n[op.type] += 1
        figs = ["ops=%d" % len(self.ops), "ok=%d" % n["ok"], "fail=%d" % n["fail"],
                "info=%d" % n["info"], "lost=%d" % self.lost, "unexpected=%d" % self.unexpected]
        figs += ["%s=%d" % (p, self.nv[p]) for p in PROPS]
        print("FIGURES " + " ".join(figs))
        return 1 if any(self.nv.values()) else 0


def read_jsonl(path):
    out = []
    if not path:
        return out
    with open(path) as f:
        for n, text in enumerate(f, 1):
            text = text.strip()
            if text:
                try:
                    out.append(("%s:%d" % (os.path.basename(path), n), json.loads(text)))
                except ValueError:
                    pass
    return out


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
        audits = read_jsonl(a.audits)
    except (OSError, ValueError, KeyError) as e:
        print("check.py: bad input: %s" % e, file=sys.stderr)
        return 2
    c.run(dump, audits, runinfo)
    return c.report()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

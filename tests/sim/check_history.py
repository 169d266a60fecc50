#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_history.py - checks an escrow history (JSON lines, Jepsen style)
against a final state dump (JSON). Python 3 standard library only; the
history parsing, the hold model and the property checks it shares with
chaos/check.py are chaos/history.py's.

    check_history.py HISTORY.jsonl FINAL.json [HISTORY2.jsonl FINAL2.json ...]
    check_history.py --dir DIR        (every seed-N.jsonl with its seed-N.final.json)

Written for escrow-sim's histories (tests/sim) and meant for histories
recorded from a real cluster too; the events it reads:

  client ops   {"type":"invoke"|"ok"|"fail"|"info","f":"reserve"|"confirm"|
                "release"|"extend"|"get","process":<int>,"value":{...},"time":t}
               reserve value: key, qty, buyer; replies add hold, seg, state,
               expires, epoch, batch (the commit that answered it; 0 = from
               memory or unknown).
  store log    {"type":"info","process":"store","f":"commit","value":{"batch":B,
                "epochs":{"<seg>":e},"rows":[{"op":"reserve"|"duplicate"|
                "converted"|"cancelled"|"expired"|"extend"|"give"|"receive",...}]}}
               what each committed batch wrote (for a real cluster: the outbox).
  nemesis      {"type":"info","process":"nemesis","f":"claim","value":{"epochs":{...}}}
               raises epochs (an owner took the segments); other nemesis events
               are ignored. {"process":"coordinator","f":"plan"} plans a transfer.

The dump: {"total":T,"segments":[{"id","epoch","available","held","sold",
"initial"}],"transfers":[{"id","from","to","qty","state"}],"holds":[{"hold",
"seg","key","qty","qty_sold","state","expires","decided_at",...}]}.

Properties (named as in chaos/history.py; each violation names the first
offending events, with line numbers):
  P1 no oversell        P2 conservation       P3 acknowledged = durable,
  P4 one hold per key   P5 units return once     nothing unasked
  P6 no confirm after expiry
  P7 nothing committed (and acknowledged) under a fenced epoch
Exit status 0 when every history passes, 1 otherwise, 2 on bad input.
"""
import glob
import json
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "chaos"))
from history import (FINAL, PROPERTIES, Calls, EpochLog, HistoryError,  # noqa: E402
                     HoldLedger, KeyReplies, Violations, converted_late, counters_broken,
                     read_jsonl, unasked_reason)

PROPS = ["P1", "P2", "P3", "P4", "P5", "P6", "P7"]


class Checker:
    def __init__(self, dump):
        self.dump = dump
        self.total = dump["total"]
        self.segs = {}
        for s in dump["segments"]:
            self.segs[s["id"]] = {"available": s["initial"], "held": 0, "sold": 0,
                                  "alloc": s["initial"]}
        self.v = Violations(PROPS)
        self.calls = Calls(self.v)
        self.ledger = HoldLedger(self.v)  # the store's holds, replayed from its log
        self.epochs = EpochLog()
        self.key_replies = KeyReplies(self.v)
        self.xfers = {}
        self.batches = set()
        self.acked_reserve = {}  # hold -> (key, qty, line)
        self.acked_confirm = {}  # hold -> (qty, line)
        self.acked_release = {}
        self.invoked_keys = set()
        self.invoked = {"confirm": set(), "release": set()}
        self.events = 0
        self.line = 0
        self.ev = None

    def here(self, extra=None):
        """The evidence of a violation found now: this line and its event."""
        return (self.line, self.ev if extra is None else extra)

    def bad(self, prop, msg, extra=None):
        self.v.add(prop, msg, self.here(extra))

    # ---- the store's log ------------------------------------------------
    def commit(self, val):
        for seg, e in val.get("epochs", {}).items():
            cur = self.epochs.latest(seg)
            if cur is None:
                self.epochs.see(seg, e, self.line)
            elif e != cur:
                self.bad("P7", "batch %s committed seg %s under epoch %d, current %d"
                         % (val.get("batch"), seg, e, cur))
        for row in val.get("rows", []):
            self.row(row)
        self.batches.add(val.get("batch"))
        self.books()

    def row(self, r):
        op = r["op"]
        if op == "reserve":
            h = self.ledger.insert(r["hold"], r["key"], r["qty"], r["seg"], r["expires"],
                                   self.here())
            if h is not None:
                s = self.segs[h["seg"]]
                s["available"] -= h["qty"]
                s["held"] += h["qty"]
        elif op in FINAL:
            h = self.ledger.end(r["hold"], op, r.get("sold", 0), r.get("decided_at"),
                                self.here())
            if h is not None:
                s = self.segs[h["seg"]]
                s["held"] -= h["qty"]
                s["sold"] += h["qty_sold"]
                s["available"] += h["qty"] - h["qty_sold"]
        elif op == "extend":
            self.ledger.extend(r["hold"], r["expires"], self.here())
        elif op in ("give", "receive"):
            self.xfer_row(r)

    def xfer_row(self, r):
        verdict, xid, seg, qty = r.get("verdict"), r["transfer"], r["seg"], r["qty"]
        x = self.xfers.setdefault(xid, {"state": "planned", "qty": qty})
        if verdict == "sent":
            if x["state"] != "planned":
                self.bad("P2", "transfer %d sent again (was %s)" % (xid, x["state"]))
            x["state"], x["qty"] = "sent", qty
            self.segs[seg]["available"] -= qty
            self.segs[seg]["alloc"] -= qty
        elif verdict == "cancelled":
            x["state"] = "cancelled"
        elif verdict == "received":
            if x["state"] != "sent":
                self.bad("P2", "transfer %d received again (was %s)" % (xid, x["state"]))
            x["state"] = "received"
            self.segs[seg]["available"] += qty
            self.segs[seg]["alloc"] += qty

    def inflight(self):
        return sum(x["qty"] for x in self.xfers.values() if x["state"] == "sent")

    def books(self):
        s_all = 0
        for sid, s in sorted(self.segs.items()):
            why = counters_broken(s["available"], s["held"], s["sold"], s["alloc"])
            if why:
                self.bad("P1", "seg %d: %s" % (sid, why))
            s_all += s["available"] + s["held"] + s["sold"]
        if s_all + self.inflight() != self.total:
            self.bad("P2", "segments %d + in flight %d != total %d"
                     % (s_all, self.inflight(), self.total))

    # ---- clients --------------------------------------------------------
    def client(self, ev):
        f, val = ev["f"], ev.get("value") or {}
        if ev["type"] == "invoke":
            if f == "reserve":
                self.invoked_keys.add(val["key"])
            elif f in self.invoked:
                self.invoked[f].add(val["hold"])
        op = self.calls.feed(ev, self.line)
        if op is not None and op.type == "ok":
            self.ack(f, op.ival, val)

    def ack(self, f, iv, val):
        hid = val.get("hold")
        batch = val.get("batch", 0)
        if batch and batch not in self.batches:
            self.bad("P7", "acknowledged from batch %s, which never committed" % batch)
        h = self.ledger.holds.get(hid)
        if f == "reserve":
            if h is None or h["key"] != iv["key"] or h["qty"] != iv["qty"]:
                self.bad("P3", "reserve %s acknowledged hold %s before it was durable "
                         "(or with other parameters)" % (iv["key"], hid))
            self.key_replies.ack(iv["key"], hid, self.here())
            self.acked_reserve[hid] = (iv["key"], iv["qty"], self.line)
        elif f == "confirm":
            if h is None or h["state"] != "converted" or (
                    iv.get("qty") and h["qty_sold"] != iv["qty"]):
                self.bad("P3", "confirm of hold %s acknowledged but the store has %s"
                         % (hid, h and h["state"]))
            self.acked_confirm[hid] = (iv.get("qty", 0), self.line)
        elif f == "release":
            if h is None or h["state"] not in ("cancelled", "expired"):
                self.bad("P3", "release of hold %s acknowledged but the store has %s"
                         % (hid, h and h["state"]))
            self.acked_release[hid] = self.line

    def event(self, ev):
        self.events += 1
        proc = ev.get("process")
        if proc == "store" and ev.get("f") == "commit":
            self.commit(ev["value"])
        elif proc == "nemesis" and ev.get("f") == "claim":
            for seg, e in ev["value"].get("epochs", {}).items():
                self.epochs.see(seg, e, self.line)
        elif proc == "coordinator" and ev.get("f") == "plan":
            v = ev["value"]
            self.xfers[v["transfer"]] = {"state": "planned", "qty": v["qty"]}
        elif isinstance(proc, int):
            self.client(ev)

    # ---- the final state -----------------------------------------------
    def final(self):
        self.line, self.ev = "final", None
        d = self.dump
        holds = {h["hold"]: h for h in d["holds"]}
        lost = self.final_lost(holds)
        unexpected = 0
        stored = HoldLedger(self.v)  # the dump's holds: one per key (P4)
        for h in d["holds"]:
            stored.insert(h["hold"], h["key"], h["qty"], h["seg"], h["expires"], self.here(h))
            why = unasked_reason(h, h["key"] in self.invoked_keys,
                                 h["hold"] in self.invoked["confirm"],
                                 h["hold"] in self.invoked["release"])
            if why:
                unexpected += 1
                self.bad("P3", "hold %s (%s, key %s) is in the store: %s"
                         % (h["hold"], h["state"], h["key"], why), h)
            if h["state"] == "converted" and converted_late(h.get("decided_at", 0),
                                                            h["expires"]):
                self.bad("P6", "hold %s converted at %s after its expiry %s"
                         % (h["hold"], h["decided_at"], h["expires"]), h)
        self.final_books(d, holds)
        return lost, unexpected

    def final_lost(self, holds):
        """Acknowledged outcomes the final state does not have (P3)."""
        lost = 0
        for hid, (key, qty, line) in sorted(self.acked_reserve.items()):
            h = holds.get(hid)
            if h is None or h["key"] != key or h["qty"] != qty:
                lost += 1
                self.bad("P3", "acknowledged hold %s (key %s, line %s) is lost" % (hid, key, line))
        for hid, (qty, line) in sorted(self.acked_confirm.items()):
            h = holds.get(hid)
            if h is None or h["state"] != "converted" or (qty and h["qty_sold"] != qty):
                lost += 1
                self.bad("P3", "acknowledged confirm of hold %s (line %s) is lost" % (hid, line))
        for hid, line in sorted(self.acked_release.items()):
            h = holds.get(hid)
            if h is None or h["state"] not in ("cancelled", "expired"):
                lost += 1
                self.bad("P3", "acknowledged release of hold %s (line %s) is lost" % (hid, line))
        return lost

    def final_books(self, d, holds):
        sent = {s["id"]: 0 for s in d["segments"]}
        recv = dict(sent)
        inflight = 0
        for x in d["transfers"]:
            if x["state"] in ("sent", "received"):
                sent[x["from"]] += x["qty"]
            if x["state"] == "received":
                recv[x["to"]] += x["qty"]
            if x["state"] == "sent":
                inflight += x["qty"]
        total = 0
        for s in d["segments"]:
            sid = s["id"]
            given = s["initial"] + recv[sid] - sent[sid]
            why = counters_broken(s["available"], s["held"], s["sold"], given)
            if why:
                self.bad("P1", "final seg %d: %s" % (sid, why), s)
            if s["available"] + s["held"] + s["sold"] != given:
                self.bad("P2", "final seg %d: available+held+sold != given %d" % (sid, given), s)
            mine = [h for h in holds.values() if h["seg"] == sid]
            held = sum(h["qty"] for h in mine if h["state"] == "held")
            sold = sum(h["qty_sold"] for h in mine if h["state"] == "converted")
            if held != s["held"] or sold != s["sold"]:
                self.bad("P5", "final seg %d counters held=%d sold=%d, its holds say %d/%d"
                         % (sid, s["held"], s["sold"], held, sold), s)
            r = self.segs.get(sid)
            if r and self.events and (r["available"], r["held"], r["sold"]) != (
                    s["available"], s["held"], s["sold"]):
                self.bad("P2", "final seg %d differs from the replayed store log %s" % (sid, r), s)
            total += s["available"] + s["held"] + s["sold"]
        if total + inflight != d["total"]:
            self.bad("P2", "final: segments %d + in flight %d != total %d"
                     % (total, inflight, d["total"]))


def report(name, c, lost, unexpected):
    """Prints the history's violations and its CHECK line; 1 if any."""
    for p in PROPS:
        if not c.v.count(p):
            continue
        print("%s %s %s: VIOLATED" % (name, p, PROPERTIES[p]))
        for msg, evidence in c.v.examples(p):
            line, ev = evidence[-1] if evidence else ("?", None)
            print("    line %s: %s" % (line, msg))
            if ev is not None:
                print("      event: %s" % json.dumps(ev, sort_keys=True)[:400])
    acked = len(c.acked_reserve) + len(c.acked_confirm) + len(c.acked_release)
    print("CHECK %s events=%d acked=%d lost=%d unexpected=%d violations=%d"
          % (name, c.events, acked, lost, unexpected, c.v.total()))
    return 1 if c.v else 0


def check(hist_path, dump_path):
    with open(dump_path) as f:
        dump = json.load(f)
    c = Checker(dump)
    try:
        for n, ev in read_jsonl(hist_path, strict=True):
            c.line, c.ev = n, ev
            c.event(ev)
    except HistoryError as e:
        print(e)
        return 2
    lost, unexpected = c.final()
    return report(os.path.basename(hist_path), c, lost, unexpected)


def main(argv):
    pairs = []
    if len(argv) == 3 and argv[1] == "--dir":
        for h in sorted(glob.glob(os.path.join(argv[2], "*.jsonl"))):
            pairs.append((h, h[: -len(".jsonl")] + ".final.json"))
    elif len(argv) >= 3 and len(argv) % 2 == 1:
        pairs = list(zip(argv[1::2], argv[2::2]))
    else:
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    if not pairs:
        print("check_history: no histories", file=sys.stderr)
        return 2
    rc = 0
    for h, d in pairs:
        rc = max(rc, check(h, d))
    print("CHECKED histories=%d result=%s" % (len(pairs), "ok" if rc == 0 else "VIOLATIONS"))
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))

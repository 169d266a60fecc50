#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_check.py - proves chaos/check.py can fail: a small correct run
(history, audits, dump, P9 figures) passes, and one doctored copy per
property P1..P9 (and a few more cases of the checks chaos/history.py
shares with tests/sim/check_history.py) must be reported as a violation of
that property.

    test_check.py        exit 0 when the clean case passes and every doctored
                         case names its property; 1 otherwise
"""
import copy
import json
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
H1, H2, H3 = (1 << 40) | 1, (1 << 40) | 2, (2 << 40) | 1
EXP = 10000  # ms


def ev(t, f, p, time_us, value, tenant="t1"):
    return {"type": t, "f": f, "process": p, "time": time_us, "tenant": tenant, "value": value}


def hold_reply(hid, seg, item, state, sold=0):
    return {"error": "", "hold": hid, "seg": seg, "item": item, "hqty": 1, "qty_sold": sold,
            "state": state, "expires": EXP}


def clean():
    hist = [
        ev("invoke", "reserve", 1, 1000, {"item": "i", "key": "k1", "buyer": "b1", "qty": 1,
                                          "ttl": 0}),
        ev("ok", "reserve", 1, 1800, hold_reply(H1, 1, "i", "held")),
        ev("invoke", "confirm", 1, 2000, {"hold": H1, "qty": 0}),
        ev("ok", "confirm", 1, 2500, hold_reply(H1, 1, "i", "converted", 1)),
        ev("invoke", "reserve", 2, 1000, {"item": "i", "key": "k2", "buyer": "b2", "qty": 1,
                                          "ttl": 0}),
        ev("ok", "reserve", 2, 1900, hold_reply(H2, 1, "i", "held")),
        ev("invoke", "confirm", 2, 2000, {"hold": H2, "qty": 0}),
        ev("ok", "confirm", 2, 2600, hold_reply(H2, 1, "i", "converted", 1)),
        ev("invoke", "cart", 3, 1000, {"key": "c1", "buyer": "b3",
                                       "lines": [{"item": "j", "qty": 1}]}),
        ev("ok", "cart", 3, 1900, {"error": "", "failed_line": 0,
                                   "holds": [hold_reply(H3, 2, "j", "held")]}),
        ev("invoke", "confirm", 3, 2000, {"hold": H3, "qty": 0}),
        ev("ok", "confirm", 3, 2700, hold_reply(H3, 2, "j", "converted", 1)),
    ]

    def h(hid, seg, item, key):
        return {"tenant": "t1", "hold": hid, "item": item, "seg": seg, "key": key, "qty": 1,
                "qty_sold": 1, "state": "converted", "epoch": 2, "expires": EXP,
                "created": 1500, "ended": 2400}

    def cons(item, total):
        return {"tenant_id": "t1", "item_id": item, "total": total, "unallocated": 0,
                "available": 0, "held": 0, "sold": total, "in_flight": 0, "ok": True}

    dump = {
        "items": [{"tenant": "t1", "item": "i", "total": 2, "unallocated": 0},
                  {"tenant": "t1", "item": "j", "total": 1, "unallocated": 0}],
        "conservation": [cons("i", 2), cons("j", 1)],
        "agree": None,
        "segments": [{"id": 1, "tenant": "t1", "item": "i", "epoch": 2, "available": 0,
                      "held": 0, "sold": 2, "state": "active", "node": "n1"},
                     {"id": 2, "tenant": "t1", "item": "j", "epoch": 2, "available": 0,
                      "held": 0, "sold": 1, "state": "active", "node": "n2"}],
        "transfers": None,
        "holds": [h(H1, 1, "i", "k1"), h(H2, 1, "i", "k2"), h(H3, 2, "j", "c1/j")],
        "ends": [{"hold": x, "kind": "converted", "qty": 1, "at": 2400} for x in (H1, H2, H3)],
    }
    audits = [{"type": "info", "process": "audit", "f": "check", "time": 500,
               "value": {"rc": 0, "out": "", "snap": {"at": 500, "epochs": {"1": 2, "2": 2},
                                                      "items": [cons("i", 2), cons("j", 1)]}}}]
    run = {"p9": [{"phase": 1, "served": 2, "segments": 2, "served_max_s": 0.1,
                   "served_bound_s": 12, "sold_out": 2, "items": 2, "met": True}]}
    return hist, dump, audits, run


CASES = ["P%d" % i for i in range(1, 10)] + ["P3-unasked", "P4-stored", "P5-never-ended",
                                              "P5-wrong-kind", "P5-held-but-ended"]


def doctor(prop, hist, dump, audits, run):
    if prop == "P1":  # an audit saw more held + sold than the total
        audits[0]["value"]["snap"]["items"][0].update(held=1, sold=2)
    elif prop == "P2":  # escrowctl check failed during the run
        audits.append({"type": "info", "process": "audit", "f": "check", "time": 3000,
                       "value": {"rc": 1, "out": "conservation violated", "snap": {}}})
    elif prop == "P3":  # an acknowledged hold is not in the database
        dump["holds"] = [x for x in dump["holds"] if x["hold"] != H2]
    elif prop == "P4":  # the same key answered with two holds
        hist.append(ev("invoke", "reserve", 4, 3000, {"item": "i", "key": "k1", "buyer": "b1",
                                                      "qty": 1, "ttl": 0}))
        hist.append(ev("ok", "reserve", 4, 3100, hold_reply(H1 + 7, 1, "i", "held")))
    elif prop == "P5":  # a hold ended twice
        dump["ends"].append({"hold": H1, "kind": "expired", "qty": 1, "at": 2600})
    elif prop == "P6":  # a confirm invoked after the expiry, acknowledged
        hist[2]["time"] = EXP * 1000 + 5000
    elif prop == "P7":  # a hold written under epoch 2 after an audit saw epoch 3
        audits.append({"type": "info", "process": "audit", "f": "check", "time": 1000,
                       "value": {"rc": 0, "out": "", "snap": {"at": 1000, "epochs": {"1": 3},
                                                              "items": []}}})
    elif prop == "P8":  # a failed cart left a line held
        hist.append(ev("invoke", "cart", 5, 3000, {"key": "c2", "buyer": "b5",
                                                   "lines": [{"item": "j", "qty": 1}]}))
        hist.append(ev("fail", "cart", 5, 3100, {"error": "SOLD_OUT", "failed_line": 0,
                                                 "holds": []}))
        dump["holds"].append({"tenant": "t1", "hold": H3 + 1, "item": "j", "seg": 2,
                              "key": "c2/j", "qty": 1, "qty_sold": 0, "state": "held",
                              "epoch": 2, "expires": EXP, "created": 3050, "ended": None})
    elif prop == "P9":  # a segment never served again after the heal
        run["p9"][0].update(served=1, met=False)
    elif prop == "P3-unasked":  # a hold whose key no client sent
        dump["holds"].append({"tenant": "t1", "hold": H2 + 1, "item": "i", "seg": 1,
                              "key": "k9", "qty": 1, "qty_sold": 0, "state": "held",
                              "epoch": 2, "expires": EXP, "created": 1600, "ended": None})
    elif prop == "P4-stored":  # two holds for one key in the database
        dump["holds"].append(dict(dump["holds"][0], hold=H2 + 1, state="held", qty_sold=0))
    elif prop == "P5-never-ended":  # converted, but no terminal event
        dump["ends"] = [e for e in dump["ends"] if e["hold"] != H2]
    elif prop == "P5-wrong-kind":  # converted, its terminal event says cancelled
        dump["ends"][1]["kind"] = "cancelled"
    elif prop == "P5-held-but-ended":  # held in the database, ended in the outbox
        hist[6:8] = []
        dump["holds"][1].update(state="held", qty_sold=0)


def check(d, name, hist, dump, audits, run):
    paths = {}
    for what, data, jsonl in (("hist", hist, True), ("dump", dump, False),
                              ("audits", audits, True), ("run", run, False)):
        paths[what] = os.path.join(d, "%s-%s.json" % (name, what))
        with open(paths[what], "w") as f:
            if jsonl:
                f.write("".join(json.dumps(x) + "\n" for x in data))
            else:
                json.dump(data, f)
    r = subprocess.run([sys.executable, os.path.join(HERE, "check.py"), "--dump", paths["dump"],
                        "--audits", paths["audits"], "--run", paths["run"], paths["hist"]],
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return r.returncode, r.stdout


def main():
    failures = 0
    with tempfile.TemporaryDirectory() as d:
        rc, out = check(d, "clean", *clean())
        ok = rc == 0 and "VIOLATION" not in out
        print("clean case: exit %d %s" % (rc, "ok" if ok else "UNEXPECTED\n" + out))
        failures += not ok
        for case in CASES:
            p = case.split("-")[0]
            parts = [copy.deepcopy(x) for x in clean()]
            doctor(case, *parts)
            rc, out = check(d, case, *parts)
            first = [l for l in out.splitlines() if l.startswith("VIOLATION %s " % p)]
            ok = rc == 1 and bool(first)
            print("%s doctored: exit %d, %s" % (case, rc,
                                                first[0] if ok else "NOT REPORTED\n" + out))
            failures += not ok
    print("CHECKER-TEST %s" % ("ok" if failures == 0 else "FAILED (%d)" % failures))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

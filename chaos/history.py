# SPDX-License-Identifier: Apache-2.0
"""history.py - escrow's history library: what chaos/check.py (a real
cluster's histories, audits and database dump) and tests/sim/check_history.py
(the simulator's histories with its store's commit log and final dump) share.
Python 3 standard library only; import it, it runs nothing.

A history is Jepsen style: one JSON object per line, {"type": "invoke" |
"ok" | "fail" | "info", "f": ..., "process": P, "value": {...}, ...}. A
process has one call outstanding: a completion answers the process's last
invoke; "fail" is a definite answer, "info" an unknown outcome.

What is here:
  PROPERTIES      the properties, P1..P9, each with its one name; both
                  checkers report under these ids and names
  Violations      the violations found, counted per property, the first
                  few kept with their evidence: (where, event) pairs
  read_jsonl      the events of a file with their line numbers
  Calls, Op       invokes paired with their completions (P3 when a
                  completion answers nothing or a process invokes twice)
  HoldLedger      the model of holds a log of writes builds: inserted once,
                  one per key (P4), ended once and only from held, extended
                  only while held (P5), converted before it expired (P6)
  KeyReplies      every acknowledged reserve of one key names the same hold
                  (P4)
  EpochLog        which epoch of a segment was seen when: a write under an
                  epoch already replaced is fenced (P7)
  unasked_reason  why a hold in the final state is one nobody asked for (P3)
  counters_broken why a segment's or an item's counters oversell (P1)
"""
import json
from bisect import bisect_left

PROPERTIES = {
    "P1": "no oversell",
    "P2": "conservation",
    "P3": "acknowledged = durable, nothing unasked",
    "P4": "one hold per (tenant, key), identical replies",
    "P5": "units return exactly once",
    "P6": "no confirm after expiry",
    "P7": "nothing acknowledged under a fenced epoch",
    "P8": "carts all-or-nothing",
    "P9": "served again and the sale completes",
}
FINAL = ("converted", "cancelled", "expired")


class HistoryError(ValueError):
    """A line that is not JSON where every line must be (read_jsonl strict)."""

    def __init__(self, path, line, why):
        ValueError.__init__(self, "%s:%d: not JSON: %s" % (path, line, why))


def read_jsonl(path, strict=False):
    """Yields (line number, event) for every non-empty line of path. A line
    that is not JSON raises HistoryError when strict; otherwise it is
    skipped (a client killed mid-line leaves a torn last line)."""
    with open(path) as f:
        for n, text in enumerate(f, 1):
            text = text.strip()
            if not text:
                continue
            try:
                ev = json.loads(text)
            except ValueError as e:
                if strict:
                    raise HistoryError(path, n, e)
                continue
            yield n, ev


class Violations:
    """Violations per property: every one counted, the first `keep` kept as
    (message, [(where, event), ...])."""

    def __init__(self, props=PROPERTIES, keep=5):
        self.props = list(props)
        self.keep = keep
        self.kept = {p: [] for p in self.props}
        self.counts = {p: 0 for p in self.props}

    def add(self, prop, msg, *evidence):
        """Records a violation of prop; evidence: (where, event) pairs, None
        entries left out."""
        self.counts[prop] += 1
        if len(self.kept[prop]) < self.keep:
            self.kept[prop].append((msg, [e for e in evidence if e is not None]))

    def count(self, prop):
        return self.counts[prop]

    def examples(self, prop):
        return self.kept[prop]

    def total(self):
        return sum(self.counts.values())

    def __bool__(self):
        return self.total() > 0


class Op:
    """One call: its invoke and, once it came, its completion."""
    __slots__ = ("f", "process", "tenant", "inv", "comp", "where", "cwhere")

    def __init__(self, inv, where):
        self.f, self.process, self.inv, self.where = inv["f"], inv.get("process"), inv, where
        self.tenant = inv.get("tenant", "")
        self.comp, self.cwhere = None, None

    @property
    def type(self):
        """ok, fail, or info (also while no completion came)."""
        return self.comp["type"] if self.comp else "info"

    @property
    def val(self):
        """The completion's value ({} without one)."""
        return (self.comp.get("value") or {}) if self.comp else {}

    @property
    def ival(self):
        """The invoke's value."""
        return self.inv.get("value") or {}


class Calls:
    """Pairs invokes with completions, one call outstanding per process.
    Every op is kept in `ops`, in invoke order."""

    def __init__(self, violations):
        self.v = violations
        self.ops = []
        self.pending = {}

    def feed(self, ev, where):
        """Takes one client event. Returns the Op it completes, else None."""
        p = ev.get("process")
        if ev["type"] == "invoke":
            if p in self.pending:
                self.v.add("P3", "process %s invoked again before its completion" % p,
                           (where, ev))
            op = Op(ev, where)
            self.pending[p] = op
            self.ops.append(op)
            return None
        op = self.pending.pop(p, None)
        if op is None:
            self.v.add("P3", "completion without an invoke (process %s)" % p, (where, ev))
            return None
        op.comp, op.cwhere = ev, where
        return op

    def end_of_file(self):
        """Forgets the outstanding calls (they stay "info"): the next events
        come from another file, with processes of their own."""
        self.pending = {}


def converted_late(decided_at, expires):
    """A conversion decided at or after the hold's expiry (None: unknown)."""
    return decided_at is not None and expires is not None and decided_at >= expires


class HoldLedger:
    """The holds a log of writes builds, hold id -> {"key", "qty", "seg",
    "state", "qty_sold", "expires", "ends": [kinds]}; keys are whatever the
    caller says makes a key unique (a string, a (tenant, key) pair)."""

    def __init__(self, violations):
        self.v = violations
        self.holds = {}
        self.key_hold = {}

    def insert(self, hid, key, qty, seg=None, expires=None, evidence=None):
        """A hold written as held. Returns it, or None if the id was taken
        (P4); a key's second hold is P4 too (the first stays the key's)."""
        if hid in self.holds:
            self.v.add("P4", "hold %s inserted twice" % hid, evidence)
            return None
        first = self.key_hold.setdefault(key, hid)
        if first != hid:
            self.v.add("P4", "key %s got a second hold %s (first %s)" % (_key_text(key), hid,
                                                                          first), evidence)
        h = {"key": key, "qty": qty, "seg": seg, "state": "held", "qty_sold": 0,
             "expires": expires, "ends": []}
        self.holds[hid] = h
        return h

    def end(self, hid, kind, sold=0, decided_at=None, evidence=None):
        """A hold ended (kind in FINAL); sold counts for converted only.
        Returns the hold if it was held (now ended), else None: ending an
        unknown hold or one already ended is P5, converting at or after the
        expiry P6 (when decided_at is given)."""
        h = self.holds.get(hid)
        if h is None:
            self.v.add("P5", "%s of unknown hold %s" % (kind, hid), evidence)
            return None
        h["ends"].append(kind)
        if h["state"] != "held":
            self.v.add("P5", "hold %s ended twice (%s, then %s)" % (hid, h["state"], kind),
                       evidence)
            return None
        if kind == "converted" and converted_late(decided_at, h["expires"]):
            self.v.add("P6", "hold %s converted at %s, expired at %s"
                       % (hid, decided_at, h["expires"]), evidence)
        h["state"], h["qty_sold"] = kind, sold if kind == "converted" else 0
        return h

    def extend(self, hid, expires, evidence=None):
        """A held hold's new expiry; anything else is P5."""
        h = self.holds.get(hid)
        if h is None or h["state"] != "held":
            self.v.add("P5", "extend of hold %s that is not held" % hid, evidence)
            return
        h["expires"] = expires

    def disagrees(self, hid, state):
        """Why the ledger's hold hid is not in state (its final state as
        stored), or None when it is."""
        h = self.holds.get(hid)
        if h is None or h["state"] == state:
            return None
        if not h["ends"]:
            return "hold %s is %s, but it never ended" % (hid, state)
        return "hold %s is %s, but its terminal events say %s" % (hid, state, h["ends"])


class KeyReplies:
    """Every acknowledged reserve of one key names the same hold (and the
    same figures): reply is whatever identifies the answer."""

    def __init__(self, violations):
        self.v = violations
        self.first = {}

    def ack(self, key, reply, evidence=None):
        """Records an acknowledged reply for key; P4 if it differs from the
        key's first one (whose evidence is shown too)."""
        first = self.first.setdefault(key, (reply, evidence))
        if first[0] != reply:
            self.v.add("P4", "key %s answered %s, earlier %s" % (_key_text(key), reply,
                                                                   first[0]),
                       first[1], evidence)


class EpochLog:
    """Epochs of segments as they were seen, each at a time (any ordered
    value: unix time, a line number)."""

    def __init__(self):
        self.seen = {}  # seg -> [(at, epoch, where)], sorted by sort()

    def see(self, seg, epoch, at, where=None):
        self.seen.setdefault(int(seg), []).append((at, epoch, where))

    def sort(self):
        """Orders each segment's observations by time (see() may come in
        any order)."""
        for lst in self.seen.values():
            lst.sort(key=lambda s: (s[0], s[1]))

    def latest(self, seg):
        """The epoch seen last for seg, or None."""
        lst = self.seen.get(int(seg))
        return lst[-1][1] if lst else None

    def fenced(self, seg, epoch, at):
        """The last observation of seg strictly before at, (at, epoch,
        where), if it had already seen a newer epoch than epoch; else None
        (the write at `at` under epoch was not fenced yet, as far as seen)."""
        lst = self.seen.get(int(seg))
        if not lst:
            return None
        i = bisect_left([s[0] for s in lst], at) - 1
        if i >= 0 and lst[i][1] > epoch:
            return lst[i]
        return None


def unasked_reason(hold, asked, confirmed, released, refused=None):
    """Why hold (a final-state row: "state") is one nobody asked for, or
    None. asked: a client invoked a reserve of its key; refused: the reason
    every such request was answered with a definite failure, or None;
    confirmed / released: a client invoked a confirm / release of it (or
    something that may end it so)."""
    if not asked:
        return "no client asked for its key"
    if refused:
        return refused
    if hold["state"] == "converted" and not confirmed:
        return "converted, but nobody confirmed it"
    if hold["state"] == "cancelled" and not released:
        return "cancelled, but nobody released it"
    return None


def counters_broken(available, held, sold, allotted=None):
    """Why counters oversell: one below zero, or held + sold above the units
    allotted (None: not checked). None when they do not."""
    if min(available, held, sold) < 0:
        return "a counter below zero (available %d, held %d, sold %d)" % (available, held, sold)
    if allotted is not None and held + sold > allotted:
        return "held %d + sold %d > allotted %d" % (held, sold, allotted)
    return None


def _key_text(key):
    return "/".join(str(k) for k in key) if isinstance(key, tuple) else str(key)

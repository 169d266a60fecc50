#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_history.py - unit tests of chaos/history.py, the history library of
chaos/check.py and tests/sim/check_history.py: each model and check, on
good input and on the input it must refuse (ctest chaos_history).

    test_history.py      exit 0 when every test passes
"""
import os
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import history  # noqa: E402
from history import (Calls, EpochLog, HistoryError, HoldLedger, KeyReplies,  # noqa: E402
                     Violations, counters_broken, read_jsonl, unasked_reason)


def inv(p, f="reserve", value=None):
    return {"type": "invoke", "f": f, "process": p, "value": value or {}}


def done(p, t="ok", f="reserve", value=None):
    return {"type": t, "f": f, "process": p, "value": value or {}}


class PropertiesTest(unittest.TestCase):
    def test_one_name_per_property(self):
        self.assertEqual(list(history.PROPERTIES), ["P%d" % i for i in range(1, 10)])
        self.assertEqual(len(set(history.PROPERTIES.values())), 9)


class ViolationsTest(unittest.TestCase):
    def test_counts_all_keeps_the_first(self):
        v = Violations(["P1", "P2"], keep=2)
        self.assertFalse(v)
        for i in range(3):
            v.add("P1", "m%d" % i, ("here", {"i": i}), None)
        self.assertTrue(v)
        self.assertEqual(v.count("P1"), 3)
        self.assertEqual(v.count("P2"), 0)
        self.assertEqual(v.total(), 3)
        self.assertEqual(v.examples("P1"), [("m0", [("here", {"i": 0})]),
                                            ("m1", [("here", {"i": 1})])])


class ReadTest(unittest.TestCase):
    def write(self, text):
        f = tempfile.NamedTemporaryFile("w", suffix=".jsonl", delete=False)
        f.write(text)
        f.close()
        self.addCleanup(os.unlink, f.name)
        return f.name

    def test_line_numbers_and_torn_lines(self):
        path = self.write('{"a": 1}\n\n{"b": 2}\n{"torn')
        self.assertEqual(list(read_jsonl(path)), [(1, {"a": 1}), (3, {"b": 2})])
        with self.assertRaises(HistoryError) as e:
            list(read_jsonl(path, strict=True))
        self.assertIn(":4: not JSON", str(e.exception))


class CallsTest(unittest.TestCase):
    def test_pairs_per_process(self):
        v = Violations()
        c = Calls(v)
        self.assertIsNone(c.feed(inv(1, value={"key": "k"}), "l1"))
        self.assertIsNone(c.feed(inv(2), "l2"))
        op = c.feed(done(1, value={"hold": 7}), "l3")
        self.assertEqual((op.type, op.ival, op.val, op.where, op.cwhere),
                         ("ok", {"key": "k"}, {"hold": 7}, "l1", "l3"))
        self.assertEqual([o.type for o in c.ops], ["ok", "info"])
        self.assertFalse(v)

    def test_orphan_completion_and_double_invoke(self):
        v = Violations()
        c = Calls(v)
        self.assertIsNone(c.feed(done(3), "l1"))
        c.feed(inv(4), "l2")
        c.feed(inv(4), "l3")
        self.assertEqual(v.count("P3"), 2)

    def test_files_do_not_share_processes(self):
        v = Violations()
        c = Calls(v)
        c.feed(inv(1), "a:1")
        c.end_of_file()
        c.feed(inv(1), "b:1")
        self.assertFalse(v)
        self.assertEqual(len(c.ops), 2)


class HoldLedgerTest(unittest.TestCase):
    def setUp(self):
        self.v = Violations()
        self.h = HoldLedger(self.v)

    def test_life_of_a_hold(self):
        self.h.insert(1, "k1", 2, seg=1, expires=100)
        self.h.extend(1, 200)
        got = self.h.end(1, "converted", sold=2, decided_at=150)
        self.assertEqual((got["state"], got["qty_sold"], got["ends"]), ("converted", 2,
                                                                         ["converted"]))
        self.assertIsNone(self.h.disagrees(1, "converted"))
        self.assertFalse(self.v)

    def test_one_hold_per_id_and_key(self):
        self.h.insert(1, "k1", 1)
        self.assertIsNone(self.h.insert(1, "k1", 1))
        self.assertIsNotNone(self.h.insert(2, "k1", 1))
        self.assertEqual(self.v.count("P4"), 2)
        self.assertEqual(self.h.key_hold["k1"], 1)

    def test_ends_once_from_held(self):
        self.h.insert(1, "k1", 1, expires=100)
        self.assertIsNone(self.h.end(9, "expired"))
        self.h.end(1, "cancelled")
        self.assertIsNone(self.h.end(1, "expired"))
        self.h.extend(1, 500)
        self.assertEqual(self.v.count("P5"), 3)
        self.assertEqual(self.h.holds[1]["state"], "cancelled")
        self.assertIn("terminal events say ['cancelled', 'expired']",
                      self.h.disagrees(1, "expired"))

    def test_no_conversion_at_or_after_expiry(self):
        self.h.insert(1, "k1", 1, expires=100)
        self.h.end(1, "converted", sold=1, decided_at=100)
        self.assertEqual(self.v.count("P6"), 1)
        self.h.insert(2, "k2", 1, expires=100)
        self.h.end(2, "converted", sold=1)  # no decision time: not judged
        self.assertEqual(self.v.count("P6"), 1)

    def test_disagrees_with_the_stored_state(self):
        self.h.insert(1, "k1", 1)
        self.assertIn("never ended", self.h.disagrees(1, "converted"))
        self.assertIsNone(self.h.disagrees(1, "held"))
        self.assertIsNone(self.h.disagrees(42, "held"))


class KeyRepliesTest(unittest.TestCase):
    def test_same_key_same_hold(self):
        v = Violations()
        k = KeyReplies(v)
        k.ack(("t", "k"), 1, ("l1", None))
        k.ack(("t", "k"), 1, ("l2", None))
        k.ack(("t", "j"), 2, ("l3", None))
        self.assertFalse(v)
        k.ack(("t", "k"), 3, ("l4", None))
        self.assertEqual(v.count("P4"), 1)
        msg, evidence = v.examples("P4")[0]
        self.assertEqual(msg, "key t/k answered 3, earlier 1")
        self.assertEqual(evidence, [("l1", None), ("l4", None)])


class EpochLogTest(unittest.TestCase):
    def test_fenced_only_by_what_was_seen_before(self):
        e = EpochLog()
        e.see("1", 3, 20, "a2")
        e.see(1, 2, 10, "a1")
        e.sort()
        self.assertEqual(e.latest(1), 3)
        self.assertIsNone(e.latest(2))
        self.assertIsNone(e.fenced(1, 2, 15))  # epoch 2 was current at 15
        self.assertIsNone(e.fenced(1, 2, 20))  # the audit at 20 is not before 20
        self.assertEqual(e.fenced(1, 2, 21), (20, 3, "a2"))
        self.assertIsNone(e.fenced(1, 3, 21))
        self.assertIsNone(e.fenced(5, 1, 99))


class ChecksTest(unittest.TestCase):
    def test_unasked_reason(self):
        held, conv, canc = {"state": "held"}, {"state": "converted"}, {"state": "cancelled"}
        self.assertIsNone(unasked_reason(held, True, False, False))
        self.assertIn("no client", unasked_reason(held, False, True, True))
        self.assertEqual(unasked_reason(held, True, True, True, "refused"), "refused")
        self.assertIn("nobody confirmed", unasked_reason(conv, True, False, True))
        self.assertIn("nobody released", unasked_reason(canc, True, True, False))
        self.assertIsNone(unasked_reason(canc, True, False, True))

    def test_counters_broken(self):
        self.assertIsNone(counters_broken(1, 2, 3, 6))
        self.assertIsNone(counters_broken(0, 0, 0))
        self.assertIn("below zero", counters_broken(-1, 0, 0, 10))
        self.assertIn("held 4 + sold 3 > allotted 6", counters_broken(0, 4, 3, 6))


if __name__ == "__main__":
    unittest.main(verbosity=1)

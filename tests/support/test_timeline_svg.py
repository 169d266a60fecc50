#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_timeline_svg.py - timeline_svg.py on a small made-up sale: render
draws one group per segment with its three series, a marker per transfer
that was sent and a line per collapse; check accepts the picture with the
right counts and refuses it with any wrong count, with a series missing,
or when the file is not well-formed XML (ctest timeline_svg)."""
import json
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
TOOL = os.path.join(HERE, "timeline_svg.py")
NS = "{http://www.w3.org/2000/svg}"


def read(path):
    with open(path) as f:
        return f.read()


def seg(sid, no, avail, held, sold, state="active", tail=False):
    return {"segment_id": sid, "seg_no": no, "node": "n1", "state": state, "tail": tail,
            "available": avail, "held": held, "sold": sold}


class TimelineTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.samples = os.path.join(d, "timeline.jsonl")
        self.transfers = os.path.join(d, "transfers.csv")
        self.events = os.path.join(d, "events.csv")
        self.svg = os.path.join(d, "timeline.svg")
        # three segments of 10, five samples 250 ms apart; segment 3 sells
        # out, gets 4 units from segment 2, then all collapses into 3
        rows = [
            [seg(1, 0, 10, 0, 0), seg(2, 1, 10, 0, 0), seg(3, 2, 10, 0, 0)],
            [seg(1, 0, 9, 1, 0), seg(2, 1, 10, 0, 0), seg(3, 2, 0, 2, 8)],
            [seg(1, 0, 8, 0, 2), seg(2, 1, 6, 0, 0), seg(3, 2, 3, 1, 10)],
            [seg(1, 0, 0, 0, 2, "draining"), seg(2, 1, 0, 0, 0, "draining"),
             seg(3, 2, 14, 0, 12, "active", True)],
            [seg(1, 0, 0, 0, 2, "draining"), seg(2, 1, 0, 0, 0, "draining"),
             seg(3, 2, 0, 0, 28, "active", True)],
        ]
        with open(self.samples, "w") as f:
            for i, segs in enumerate(rows):
                other = {"tenant": "shop-1", "item": "other", "segments": [seg(9, 0, 5, 0, 0)]}
                item = {"tenant": "shop-1", "item": "tee", "segments": segs}
                f.write(json.dumps({"at_ms": 1000 + 250 * i, "interval_ms": 250,
                                    "items": [other, item]}) + "\n")
        with open(self.transfers, "w") as f:
            f.write("transfer_id,from_segment,to_segment,qty,reason,state,created_ms,sent_ms,"
                    "received_ms\n"
                    "1,2,3,4,refill,received,1200,1300,1350\n"
                    "2,1,3,8,collapse,received,1700,1760,1800\n"
                    "3,2,3,6,collapse,received,1700,1760,1790\n"
                    "4,1,2,1,rebalance,cancelled,1100,,\n"   # never sent: no marker
                    "5,,3,2,restock,received,1900,1950,1990\n")  # from unallocated
        with open(self.events, "w") as f:
            f.write("kind,segment_id,at_ms\ncollapsed,3,1700\n")

    def tearDown(self):
        self.dir.cleanup()

    def run_tool(self, *args):
        return subprocess.run([sys.executable, TOOL] + list(args), capture_output=True, text=True)

    def render(self):
        r = self.run_tool("render", "--samples", self.samples, "--transfers", self.transfers,
                          "--events", self.events, "--tenant", "shop-1", "--item", "tee",
                          "--out", self.svg)
        self.assertEqual(r.returncode, 0, r.stderr)

    def check(self, segments=3, samples=5, transfers=4, collapses=1):
        return self.run_tool("check", self.svg, "--segments", str(segments), "--samples",
                             str(samples), "--transfers", str(transfers), "--collapses",
                             str(collapses))

    def test_render_draws_the_sale(self):
        self.render()
        root = ET.parse(self.svg).getroot()
        groups = [g for g in root.iter(NS + "g") if g.get("class") == "segment"]
        self.assertEqual([g.get("data-segment") for g in groups], ["1", "2", "3"])
        sold3 = [p for p in groups[2].iter(NS + "polyline") if p.get("class") == "sold"][0]
        ys = [float(pt.split(",")[1]) for pt in sold3.get("points").split()]
        self.assertEqual(len(ys), 5)
        self.assertEqual(ys, sorted(ys, reverse=True))  # sold only grows: y only goes up
        marks = [g.get("data-transfer") for g in root.iter(NS + "g") if g.get("class") == "transfer"]
        self.assertEqual(marks, ["1", "2", "3", "5"])
        lines = [x for x in root.iter(NS + "line") if x.get("class") == "collapse"]
        self.assertEqual([x.get("data-segment") for x in lines], ["3"])
        # sold out at the last sample: its marker
        self.assertEqual(len([x for x in root.iter(NS + "line") if x.get("class") == "sold-out"]), 1)
        self.assertIn("tee: 30 units in 3 segments", read(self.svg))

    def test_check_accepts_the_right_counts(self):
        self.render()
        r = self.check()
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("3 segments x 3 series of 5 points, 4 transfers, 1 collapse", r.stdout)

    def test_check_refuses_wrong_counts(self):
        self.render()
        for wrong in ({"segments": 4}, {"samples": 4}, {"transfers": 5}, {"collapses": 0}):
            r = self.check(**wrong)
            self.assertEqual(r.returncode, 1, wrong)
            self.assertIn("expected", r.stderr)

    def test_check_refuses_a_missing_series(self):
        self.render()
        text = read(self.svg)
        start = text.index('<polyline class="held"')
        end = text.index("/>", start) + 2
        with open(self.svg, "w") as f:
            f.write(text[:start] + text[end:])
        r = self.check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("lines ['available', 'sold']", r.stderr)

    def test_check_refuses_broken_xml(self):
        self.render()
        text = read(self.svg)
        with open(self.svg, "w") as f:
            f.write(text[: len(text) // 2])
        r = self.check()
        self.assertEqual(r.returncode, 1)
        self.assertIn("not well-formed XML", r.stderr)

    def test_render_refuses_too_few_samples(self):
        with open(self.samples) as f:
            first = f.readline()
        with open(self.samples, "w") as f:
            f.write(first)
        r = self.run_tool("render", "--samples", self.samples, "--transfers", self.transfers,
                          "--events", self.events, "--tenant", "shop-1", "--item", "tee",
                          "--out", self.svg)
        self.assertNotEqual(r.returncode, 0)
        self.assertIn("fewer than two samples", r.stderr)


if __name__ == "__main__":
    unittest.main()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""test_bench_tools.py - the benchmark's two helpers on made-up input
(ctest bench_tools): bench_median.py gives each key's median, min and max
over the repetitions (odd and even counts, a key missing from one line, no
line at all); latency_svg.py computes p50/p99 per window exactly, breaks the
lines at a window without answers, marks the PostgreSQL log lines inside
the window and only those, and refuses a timeline without its t0 line."""
import datetime
import os
import subprocess
import sys
import tempfile
import unittest
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
MEDIAN = os.path.join(HERE, "bench_median.py")
SVG = os.path.join(HERE, "latency_svg.py")
NS = "{http://www.w3.org/2000/svg}"

sys.path.insert(0, HERE)
import latency_svg  # noqa: E402


def run(args, stdin=""):
    return subprocess.run([sys.executable] + args, input=stdin, capture_output=True, text=True)


def parse(line):
    assert line.startswith("BENCH "), line
    return dict(tok.split("=", 1) for tok in line.split()[1:])


class MedianTest(unittest.TestCase):
    def test_odd(self):
        p = run([MEDIAN], "noise\nBENCH e1_ok_s=300 e1_p99=9\nBENCH e1_ok_s=100 e1_p99=7\n"
                          "BENCH e1_ok_s=110 e1_p99=8.5\n")
        self.assertEqual(p.returncode, 0, p.stderr)
        kv = parse(p.stdout.strip())
        self.assertEqual(kv, {"e1_ok_s": "110", "e1_ok_s_min": "100", "e1_ok_s_max": "300",
                              "e1_p99": "8.5", "e1_p99_min": "7", "e1_p99_max": "9"})

    def test_even_and_missing_key(self):
        p = run([MEDIAN], "BENCH a=1 b=10\nBENCH a=4\n")
        kv = parse(p.stdout.strip())
        self.assertEqual(kv["a"], "2.5")
        self.assertEqual((kv["b"], kv["b_min"], kv["b_max"]), ("10", "10", "10"))

    def test_no_line(self):
        p = run([MEDIAN], "nothing here\n")
        self.assertEqual(p.returncode, 1)
        self.assertEqual(p.stdout, "")


T0_WALL_US = 1_764_000_000_000_000  # a whole second, UTC


def log_line(ms_after_t0, text):
    ts = datetime.datetime.fromtimestamp(T0_WALL_US / 1e6 + ms_after_t0 / 1000,
                                         datetime.timezone.utc)
    return "%s.%03d UTC [42] LOG:  %s\n" % (ts.strftime("%Y-%m-%d %H:%M:%S"),
                                            ts.microsecond // 1000, text)


class LatencySvgTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = self.dir.name
        self.csv = os.path.join(d, "t.csv")
        self.log = os.path.join(d, "postgres.log")
        self.out = os.path.join(d, "t.svg")
        rows = ["# escrow-bench timeline t0_wall_us=%d dropped=0" % T0_WALL_US,
                "t_ms,latency_us,kind"]
        # window 0: latencies 1..100 ms; window 1: nothing; window 2: 5 ms x 10
        rows += ["%.3f,%d,ok" % (10 + i * 0.5, (i + 1) * 1000) for i in range(100)]
        rows += ["50.000,999999,no", "60.000,999999,err"]  # not ok: not drawn
        rows += ["%.3f,5000,ok" % (210 + i) for i in range(10)]
        with open(self.csv, "w") as f:
            f.write("\n".join(rows) + "\n")
        with open(self.log, "w") as f:
            f.write(log_line(-5000, "checkpoint starting: time"))  # before: no mark
            f.write(log_line(150, "checkpoint starting: wal"))
            f.write(log_line(200, 'automatic vacuum of table "escrow.public.holds"'))
            f.write(log_line(9000, "checkpoint complete: wrote 1 buffers"))  # after

    def tearDown(self):
        self.dir.cleanup()

    def test_windows_exact(self):
        t0, rows, end = latency_svg.read_timeline(self.csv)
        self.assertEqual((t0, len(rows), end), (T0_WALL_US, 110, 219.0))
        wins = latency_svg.windows(rows, 100, end)
        self.assertEqual(wins, [(0, 100, 50.0, 99.0), (100, 0, None, None), (200, 10, 5.0, 5.0)])

    def test_render(self):
        p = run([SVG, "--timeline", self.csv, "--pg-log", self.log, "--title", "t <&>",
                 "--out", self.out])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("worst p99 99.0 ms, 1 windows with p99 > 10 ms", p.stdout)
        self.assertIn("checkpoint at 0.1 s, autovacuum at 0.2 s", p.stdout)
        root = ET.parse(self.out).getroot()
        # the empty window splits each line in two
        self.assertEqual(len(root.findall(NS + "polyline[@class='p99']")), 2)
        self.assertEqual(len(root.findall(NS + "polyline[@class='p50']")), 2)
        self.assertEqual(len(root.findall(NS + "g[@class='mark']")), 2)
        self.assertEqual(len(root.findall(NS + "rect[@class='count']")), 3)

    def test_no_log(self):
        p = run([SVG, "--timeline", self.csv, "--out", self.out])
        self.assertEqual(p.returncode, 0, p.stderr)
        self.assertIn("marks: none", p.stdout)

    def test_bad_timeline(self):
        with open(self.csv, "w") as f:
            f.write("t_ms,latency_us,kind\n1,1,ok\n")
        p = run([SVG, "--timeline", self.csv, "--out", self.out])
        self.assertEqual(p.returncode, 1)
        self.assertIn("t0_wall_us", p.stderr)
        self.assertFalse(os.path.exists(self.out))


if __name__ == "__main__":
    unittest.main()

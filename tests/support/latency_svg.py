#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""latency_svg.py - hold latency over time, as one SVG (Python's standard
library only): p50 and p99 of the durable holds per 100 ms window, the holds
answered per window below them, and PostgreSQL's checkpoints and autovacuum
runs from its log as vertical lines, so a reader sees when the tail stalls
and what the database was doing then.

    latency_svg.py --timeline CSV [--pg-log POSTGRES.LOG] [--title T]
                   [--window-ms 100] --out OUT.svg

CSV is what `escrow-bench escrow --timeline` writes: a comment line with
t0_wall_us (the unix time the measurement window opened), a header
t_ms,latency_us,kind, then one line per answer (kind ok, no or err; only ok
is drawn). POSTGRES.LOG is the server's log with log_line_prefix starting
with %m (tests/support/pg.sh): lines "checkpoint starting", "checkpoint
complete" and "automatic vacuum" inside the window are marked.

Prints one summary line (windows, the worst window's p99, how many windows
had a p99 above 10 ms, the marks). The SVG is parsed back as XML before the
script exits 0; exit 1 on unreadable input, 2 on a usage error.
"""
import argparse
import csv
import datetime
import re
import sys
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

WIDTH, HEIGHT = 980, 520
LEFT, RIGHT, TOP = 70, 24, 64
LAT_H, GAP, RATE_H, BOTTOM = 280, 36, 90, 50
LAT_MIN_MS = 0.1
P99_NOTE_MS = 10.0
MARKS = (("checkpoint starting", "checkpoint", "#c0392b"),
         ("checkpoint complete", "checkpoint done", "#e08a00"),
         ("automatic vacuum", "autovacuum", "#7b4fb0"),
         ("automatic analyze", "autoanalyze", "#178f8f"))
LOG_TIME = re.compile(r"^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?) (\S+)")


def read_timeline(path):
    """(t0_wall_us, [(t_ms, latency_us)] of the ok answers, window end ms)."""
    t0, rows, last = None, [], 0.0
    with open(path) as f:
        first = f.readline()
        m = re.search(r"t0_wall_us=(-?\d+)", first)
        if m is None:
            raise ValueError("%s: no t0_wall_us comment line" % path)
        t0 = int(m.group(1))
        for row in csv.DictReader(f):
            t = float(row["t_ms"])
            last = max(last, t)
            if row["kind"] == "ok":
                rows.append((t, int(row["latency_us"])))
    return t0, rows, last


def quantile(sorted_vals, q):
    if not sorted_vals:
        return None
    i = min(len(sorted_vals) - 1, max(0, int(q * len(sorted_vals) + 0.5) - 1))
    return sorted_vals[i]


def windows(rows, window_ms, end_ms):
    """[(start_ms, count, p50_ms, p99_ms)] per window."""
    n = int(end_ms // window_ms) + 1
    buckets = [[] for _ in range(n)]
    for t, lat in rows:
        buckets[min(n - 1, int(t // window_ms))].append(lat)
    out = []
    for i, b in enumerate(buckets):
        b.sort()
        p50, p99 = quantile(b, 0.50), quantile(b, 0.99)
        out.append((i * window_ms, len(b), p50 / 1000.0 if b else None,
                    p99 / 1000.0 if b else None))
    return out


def read_marks(path, t0_wall_us, end_ms):
    """[(t_ms, label, color)] of the log lines inside 0..end_ms."""
    marks = []
    if not path:
        return marks
    try:
        f = open(path, errors="replace")
    except OSError:
        return marks
    with f:
        for line in f:
            for needle, label, color in MARKS:
                if needle not in line:
                    continue
                m = LOG_TIME.match(line)
                if m is None:
                    break
                ts = datetime.datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S.%f"
                                                if "." in m.group(1) else "%Y-%m-%d %H:%M:%S")
                if m.group(2) not in ("UTC", "GMT"):
                    break  # the private cluster logs UTC; another zone is not guessed
                ts = ts.replace(tzinfo=datetime.timezone.utc)
                t_ms = (ts.timestamp() * 1e6 - t0_wall_us) / 1000.0
                if 0 <= t_ms <= end_ms:
                    marks.append((t_ms, label, color))
                break
    return marks


def log_y(ms, top_ms):
    import math
    ms = max(ms, LAT_MIN_MS)
    lo, hi = math.log10(LAT_MIN_MS), math.log10(top_ms)
    return TOP + LAT_H * (1 - (math.log10(ms) - lo) / (hi - lo))


def runs(wins, idx):
    """The windows with a value at idx, split where one has none."""
    out, cur = [], []
    for w in wins:
        if w[idx] is None:
            if cur:
                out.append(cur)
            cur = []
        else:
            cur.append(w)
    if cur:
        out.append(cur)
    return out


def render(title, wins, marks, end_ms, window_ms):
    import math
    worst = max((w[3] for w in wins if w[3] is not None), default=1.0)
    top_ms = 10 ** math.ceil(math.log10(max(worst, 10.0)))
    plot_w = WIDTH - LEFT - RIGHT
    x = lambda t: LEFT + plot_w * (t / max(end_ms, 1.0))
    rate_top = TOP + LAT_H + GAP
    max_count = max((w[1] for w in wins), default=1) or 1
    out = ['<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" '
           'viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">'
           % (WIDTH, HEIGHT, WIDTH, HEIGHT),
           '<rect width="100%" height="100%" fill="white"/>',
           '<text x="%d" y="24" font-size="15">%s</text>' % (LEFT, escape(title)),
           '<text x="%d" y="44" fill="#555">durable hold latency per %d ms window (log scale):'
           ' <tspan fill="#3b6fb6">p50</tspan>, <tspan fill="#c0392b">p99</tspan>;'
           ' holds answered per window below</text>' % (LEFT, window_ms)]
    decade = LAT_MIN_MS
    while decade <= top_ms * 1.0001:
        y = log_y(decade, top_ms)
        out.append('<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>'
                   % (LEFT, WIDTH - RIGHT, y, y))
        out.append('<text x="%d" y="%.1f" text-anchor="end">%g ms</text>' % (LEFT - 6, y + 4, decade))
        decade *= 10
    y10 = log_y(P99_NOTE_MS, top_ms)
    out.append('<line class="target" x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#2a9d4a" '
               'stroke-dasharray="6 4"/>' % (LEFT, WIDTH - RIGHT, y10, y10))
    for key, idx, color in (("p50", 2, "#3b6fb6"), ("p99", 3, "#c0392b")):
        # a window without answers breaks the line: a stall shows as a gap
        for run in runs(wins, idx):
            pts = " ".join("%.1f,%.1f" % (x(w[0] + window_ms / 2), log_y(w[idx], top_ms))
                           for w in run)
            out.append('<polyline class="%s" fill="none" stroke="%s" stroke-width="1.5" '
                       'points="%s"/>' % (key, color, pts))
    bar_w = max(plot_w * window_ms / max(end_ms, 1.0) - 0.5, 0.5)
    for w in wins:
        h = RATE_H * w[1] / max_count
        out.append('<rect class="count" x="%.1f" y="%.1f" width="%.1f" height="%.1f" fill="#9bb6dc"/>'
                   % (x(w[0]), rate_top + RATE_H - h, bar_w, h))
    out.append('<text x="%d" y="%d" text-anchor="end">%d</text>' % (LEFT - 6, rate_top + 10, max_count))
    out.append('<text x="%d" y="%d" text-anchor="end">0</text>' % (LEFT - 6, rate_top + RATE_H))
    for t_ms, label, color in marks:
        out.append('<g class="mark"><line x1="%.1f" x2="%.1f" y1="%d" y2="%d" stroke="%s" '
                   'stroke-dasharray="3 3"/><text x="%.1f" y="%d" fill="%s" font-size="10" '
                   'transform="rotate(-90 %.1f %d)">%s</text></g>'
                   % (x(t_ms), x(t_ms), TOP, rate_top + RATE_H, color, x(t_ms) + 3, TOP + 80,
                      color, x(t_ms) + 3, TOP + 80, escape(label)))
    axis_y = rate_top + RATE_H + 16
    step = 1000 if end_ms <= 20000 else 5000
    t = 0
    while t <= end_ms:
        out.append('<text x="%.1f" y="%d" text-anchor="middle">%g s</text>' % (x(t), axis_y, t / 1000))
        t += step
    out.append('<text x="%d" y="%d" fill="#555">dashed green: p99 = %g ms; time since the '
               'measurement window opened</text>' % (LEFT, axis_y + 22, P99_NOTE_MS))
    out.append("</svg>")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--timeline", required=True)
    ap.add_argument("--pg-log")
    ap.add_argument("--title", default="escrow: hold latency over time")
    ap.add_argument("--window-ms", type=int, default=100)
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.window_ms < 1:
        ap.error("--window-ms must be >= 1")
    try:
        t0, rows, end_ms = read_timeline(a.timeline)
    except (OSError, ValueError, KeyError) as e:
        print("latency_svg.py: %s" % e, file=sys.stderr)
        return 1
    wins = windows(rows, a.window_ms, end_ms)
    marks = read_marks(a.pg_log, t0, end_ms)
    svg = render(a.title, wins, marks, end_ms, a.window_ms)
    ET.fromstring(svg)  # well-formed, or this raises
    with open(a.out, "w") as f:
        f.write(svg)
    p99s = [w[3] for w in wins if w[3] is not None]
    print("latency plot %s: %d windows of %d ms, worst p99 %.1f ms, %d windows with p99 > %g ms;"
          " marks: %s" % (a.out, len(wins), a.window_ms, max(p99s, default=0.0),
                          sum(p > P99_NOTE_MS for p in p99s), P99_NOTE_MS,
                          ", ".join("%s at %.1f s" % (m[1], m[0] / 1000) for m in marks) or "none"))
    return 0


if __name__ == "__main__":
    sys.exit(main())

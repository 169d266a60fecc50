#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""timeline_svg.py - the demo's timeline picture: every segment's available,
held and sold over the sale, the transfers between segments and the
collapse, as one SVG (Python's standard library only).

    timeline_svg.py render --samples TIMELINE.jsonl --transfers TRANSFERS.csv
                           --events EVENTS.csv --tenant T --item I --out OUT.svg
    timeline_svg.py check OUT.svg --segments N --samples S --transfers X --collapses C

render reads:
  TIMELINE.jsonl  `escrowctl top --batch --json` lines (docs/operating.md):
                  at_ms and, per segment of the item, available/held/sold,
                  state, owner and whether it is the tail;
  TRANSFERS.csv   transfer_id, from_segment, to_segment, qty, reason, state,
                  created_ms, sent_ms, received_ms (empty = NULL);
  EVENTS.csv      kind ('collapsed' or 'split'), segment_id, at_ms.
All times are unix milliseconds on the database's clock. The picture has one
panel per segment (in seg_no order) with three lines (available, held,
sold) on one scale shared by every panel, an arrow per transfer that was
sent (at its sent time, from the giving panel to the receiving one), and a
dashed line at each collapse (and split).

check parses the SVG (it must be well-formed XML) and compares it with
counts its caller takes from the database: N groups class="segment", each
with exactly one polyline of class available, held and sold, each of S
points; X groups class="transfer"; C lines class="collapse". Exit 0 if all
match, 1 with the differences otherwise, 2 on a usage error.
"""
import argparse
import csv
import json
import sys
import xml.etree.ElementTree as ET
from xml.sax.saxutils import escape

SVG_NS = "http://www.w3.org/2000/svg"
SERIES = (("available", "#2a9d4a"), ("held", "#e08a00"), ("sold", "#3b6fb6"))
REASON_COLORS = {"rebalance": "#7b4fb0", "refill": "#178f8f", "collapse": "#c0392b",
                 "forward": "#8e2a1f", "restock": "#666666", "reduce": "#666666",
                 "split": "#666666"}

WIDTH = 980
LEFT = 130     # segment labels
RIGHT = 24
TOP = 104      # title and legend
PANEL_H = 64
PANEL_GAP = 8
BOTTOM = 58    # time axis and the note


# ---- input ------------------------------------------------------------------

def read_samples(path, tenant, item):
    """[(at_ms, {segment_id: segment dict})] in time order, and the item's
    total as the last sample has it (None if it has none)."""
    samples, total = [], None
    with open(path) as f:
        for no, line in enumerate(f, 1):
            if not line.strip():
                continue
            try:
                snap = json.loads(line)
            except ValueError as e:
                raise SystemExit(f"{path}:{no}: not JSON: {e}")
            segs = {}
            for it in snap.get("items", []):
                if it["tenant"] == tenant and it["item"] == item:
                    segs = {s["segment_id"]: s for s in it["segments"]}
                    total = it.get("total", total)
            samples.append((snap["at_ms"], segs))
    samples.sort(key=lambda s: s[0])
    return samples, total


def opt_int(v):
    return int(v) if v not in ("", None) else None


def read_transfers(path):
    with open(path, newline="") as f:
        return [{k: (opt_int(v) if k.endswith(("_ms", "_segment", "_id")) or k == "qty" else v)
                 for k, v in row.items()} for row in csv.DictReader(f)]


def read_events(path):
    with open(path, newline="") as f:
        return [{"kind": r["kind"], "segment_id": opt_int(r["segment_id"]),
                 "at_ms": int(r["at_ms"])} for r in csv.DictReader(f)]


# ---- layout -----------------------------------------------------------------

def nice_step(span, ticks):
    """A 1-2-5 step giving about `ticks` ticks over span."""
    raw = span / max(ticks, 1)
    mag = 1
    while mag * 10 <= raw:
        mag *= 10
    while mag > raw and mag > 1:
        mag //= 10
    for m in (1, 2, 5, 10):
        if m * mag >= raw:
            return m * mag
    return 10 * mag


def nice_max(v):
    step = nice_step(max(v, 1), 4)
    return ((max(v, 1) + step - 1) // step) * step


class Frame:
    """Maps times and values to pixels; panels are stacked top to bottom."""

    def __init__(self, t0, t1, vmax, npanels):
        self.t0, self.t1 = t0, max(t1, t0 + 1)
        self.vmax = vmax
        self.plot_w = WIDTH - LEFT - RIGHT
        self.height = TOP + npanels * (PANEL_H + PANEL_GAP) + BOTTOM

    def x(self, t):
        t = min(max(t, self.t0), self.t1)
        return LEFT + (t - self.t0) * self.plot_w / (self.t1 - self.t0)

    def panel_top(self, i):
        return TOP + i * (PANEL_H + PANEL_GAP)

    def y(self, i, v):
        bottom = self.panel_top(i) + PANEL_H
        return bottom - v * (PANEL_H - 6) / self.vmax

    def mid(self, i):
        return self.panel_top(i) + PANEL_H / 2


def segment_order(samples):
    """Segment ids in seg_no order, with their last known row."""
    last = {}
    for _, segs in samples:
        last.update(segs)
    return sorted(last, key=lambda sid: (last[sid]["seg_no"], sid)), last


# ---- drawing ----------------------------------------------------------------

def fmt(v):
    return f"{v:.1f}".rstrip("0").rstrip(".")


def draw_panel(out, fr, i, sid, row, samples):
    top = fr.panel_top(i)
    out.append(f'<g class="segment" data-segment="{sid}">')
    out.append(f'<rect x="{LEFT}" y="{top}" width="{fr.plot_w}" height="{PANEL_H}" '
               f'fill="#f7f7f7"/>')
    draining = next((t for t, segs in samples if segs.get(sid, {}).get("state") == "draining"),
                    None)
    if draining is not None:
        x = fr.x(draining)
        out.append(f'<rect x="{fmt(x)}" y="{top}" width="{fmt(LEFT + fr.plot_w - x)}" '
                   f'height="{PANEL_H}" fill="#e6e6e6"><title>draining</title></rect>')
    label = f"seg {sid}  #{row['seg_no']}"
    owner = row.get("node") or "-"
    tail = " TAIL" if row.get("tail") else ""
    out.append(f'<text x="{LEFT - 8}" y="{fmt(top + 24)}" text-anchor="end" '
               f'font-weight="bold">{escape(label)}</text>')
    out.append(f'<text x="{LEFT - 8}" y="{fmt(top + 42)}" text-anchor="end" '
               f'fill="#555">{escape(owner + tail)}</text>')
    for name, color in SERIES:
        pts = " ".join(f"{fmt(fr.x(t))},{fmt(fr.y(i, segs[sid][name]))}"
                       for t, segs in samples if sid in segs)
        out.append(f'<polyline class="{name}" fill="none" stroke="{color}" stroke-width="1.6" '
                   f'stroke-linejoin="round" points="{pts}"/>')
    out.append("</g>")


def draw_transfers(out, fr, panel_of, transfers):
    out.append('<g class="transfers">')
    for x in transfers:
        if x["sent_ms"] is None:
            continue  # planned and cancelled: no unit ever left
        color = REASON_COLORS.get(x["reason"], "#666666")
        px = fmt(fr.x(x["sent_ms"]))
        src, dst = panel_of.get(x["from_segment"]), panel_of.get(x["to_segment"])
        out.append(f'<g class="transfer" data-transfer="{x["transfer_id"]}" '
                   f'data-reason="{escape(x["reason"])}" stroke="{color}" fill="{color}">'
                   f'<title>transfer {x["transfer_id"]}: {x["qty"]} units, '
                   f'{escape(x["reason"])}, seg {x["from_segment"] or "unallocated"} to '
                   f'seg {x["to_segment"] or "unallocated"}</title>')
        if src is not None and dst is not None:
            y1, y2 = fr.mid(src), fr.mid(dst)
            head = -5 if y2 < y1 else 5
            out.append(f'<line x1="{px}" y1="{fmt(y1)}" x2="{px}" y2="{fmt(y2)}" '
                       f'stroke-width="1.2" opacity="0.55"/>'
                       f'<path d="M{px},{fmt(y2)} l-3.5,{-head} l7,0 z" stroke="none"/>')
        else:
            one = src if src is not None else dst
            y = fr.mid(one) if one is not None else TOP
            out.append(f'<circle cx="{px}" cy="{fmt(y)}" r="3" opacity="0.7"/>')
        out.append("</g>")
    out.append("</g>")


def draw_events(out, fr, events, sold_out_ms):
    bottom = fr.height - BOTTOM - PANEL_GAP
    if sold_out_ms is not None:
        x = fmt(fr.x(sold_out_ms))
        out.append(f'<line class="sold-out" x1="{x}" y1="{TOP - 6}" x2="{x}" y2="{fmt(bottom)}" '
                   f'stroke="#333" stroke-width="1" stroke-dasharray="1,3"/>'
                   f'<text x="{x}" y="{TOP - 10}" text-anchor="middle" fill="#333">'
                   f'sold out</text>')
    for e in events:
        x = fmt(fr.x(e["at_ms"]))
        if e["kind"] == "collapsed":
            out.append(f'<line class="collapse" data-segment="{e["segment_id"]}" x1="{x}" '
                       f'y1="{TOP - 6}" x2="{x}" y2="{fmt(bottom)}" stroke="#c0392b" '
                       f'stroke-width="2" stroke-dasharray="6,4"/>')
            out.append(f'<text x="{x}" y="{TOP - 10}" text-anchor="middle" fill="#c0392b" '
                       f'font-weight="bold">collapse into seg {e["segment_id"]}</text>')
        elif e["kind"] == "split":
            out.append(f'<line class="split" x1="{x}" y1="{TOP - 6}" x2="{x}" '
                       f'y2="{fmt(bottom)}" stroke="#666" stroke-dasharray="2,3"/>')


def sold_out_at(samples):
    """The first sample where every unit of the item is sold."""
    for t, segs in samples:
        rows = segs.values()
        if rows and all(s["available"] == 0 and s["held"] == 0 for s in rows) \
                and sum(s["sold"] for s in rows) > 0:
            return t
    return None


def draw_axis(out, fr, nsamples, interval_ms):
    y = fr.height - BOTTOM + 4
    span_s = (fr.t1 - fr.t0) / 1000
    step = nice_step(max(span_s, 1), 10)
    out.append(f'<line x1="{LEFT}" y1="{y}" x2="{LEFT + fr.plot_w}" y2="{y}" stroke="#333"/>')
    t = 0
    while t <= span_s + 1e-9:
        x = fmt(fr.x(fr.t0 + t * 1000))
        out.append(f'<line x1="{x}" y1="{y}" x2="{x}" y2="{y + 5}" stroke="#333"/>'
                   f'<text x="{x}" y="{y + 18}" text-anchor="middle">{t:g} s</text>')
        t += step
    out.append(f'<text x="{LEFT}" y="{fr.height - 10}" fill="#555">every panel 0 to {fr.vmax} '
               f'units; {nsamples} samples of escrowctl top --json, every {interval_ms} ms; '
               f'transfers and the collapse from PostgreSQL</text>')


def draw_head(out, tenant, item, nsegs, total):
    out.append(f'<text x="{LEFT}" y="24" font-size="16" font-weight="bold">'
               f'{escape(tenant)}/{escape(item)}: {total:,} units in {nsegs} segments, '
               f'each segment over the sale</text>')
    x = LEFT
    for name, color in SERIES:
        out.append(f'<line x1="{x}" y1="46" x2="{x + 22}" y2="46" stroke="{color}" '
                   f'stroke-width="3"/><text x="{x + 28}" y="50">{name}</text>')
        x += 100
    out.append(f'<rect x="{x}" y="40" width="22" height="12" fill="#e6e6e6"/>'
               f'<text x="{x + 28}" y="50">draining (collapsed into the tail)</text>')
    x = LEFT
    color = REASON_COLORS["refill"]
    out.append(f'<line x1="{x + 11}" y1="76" x2="{x + 11}" y2="62" stroke="{color}"/>'
               f'<path d="M{x + 11},60 l-3.5,5 l7,0 z" fill="{color}"/>'
               f'<text x="{x + 28}" y="72">transfer, from the giving segment to the receiving '
               f'one, by reason: ')
    parts = [f'<tspan fill="{REASON_COLORS[r]}">{r}</tspan>'
             for r in ("rebalance", "refill", "collapse", "forward")]
    out.append(", ".join(parts) + "</text>")


def render(args):
    samples, total = read_samples(args.samples, args.tenant, args.item)
    samples = [s for s in samples if s[1]]
    if len(samples) < 2:
        raise SystemExit(f"{args.samples}: fewer than two samples of {args.tenant}/{args.item}")
    transfers = read_transfers(args.transfers)
    events = read_events(args.events)
    order, last = segment_order(samples)
    vmax = nice_max(max(max(s[n] for n, _ in SERIES) for _, segs in samples
                        for s in segs.values()))
    fr = Frame(samples[0][0], samples[-1][0], vmax, len(order))
    if total is None:
        total = sum(last[sid]["available"] + last[sid]["held"] + last[sid]["sold"]
                    for sid in order)
    with open(args.samples) as f:
        first = json.loads(next(line for line in f if line.strip()))
    out = [f'<svg xmlns="{SVG_NS}" width="{WIDTH}" height="{fr.height}" '
           f'viewBox="0 0 {WIDTH} {fr.height}" font-family="sans-serif" font-size="12">',
           f'<rect width="{WIDTH}" height="{fr.height}" fill="white"/>']
    draw_head(out, args.tenant, args.item, len(order), total)
    panel_of = {}
    for i, sid in enumerate(order):
        panel_of[sid] = i
        draw_panel(out, fr, i, sid, last[sid], samples)
    draw_transfers(out, fr, panel_of, transfers)
    draw_events(out, fr, events, sold_out_at(samples))
    draw_axis(out, fr, len(samples), first.get("interval_ms", 0))
    out.append("</svg>")
    with open(args.out, "w") as f:
        f.write("\n".join(out) + "\n")


# ---- check ------------------------------------------------------------------

def check(args):
    try:
        root = ET.parse(args.svg).getroot()
    except ET.ParseError as e:
        print(f"{args.svg}: not well-formed XML: {e}", file=sys.stderr)
        return 1
    errors = []
    if root.tag != f"{{{SVG_NS}}}svg":
        errors.append(f"the root element is {root.tag}, not svg")
    groups = [g for g in root.iter(f"{{{SVG_NS}}}g") if g.get("class") == "segment"]
    if len(groups) != args.segments:
        errors.append(f"{len(groups)} segment series, expected {args.segments}")
    for g in groups:
        lines = [p for p in g.iter(f"{{{SVG_NS}}}polyline")]
        names = sorted(p.get("class") for p in lines)
        if names != sorted(n for n, _ in SERIES):
            errors.append(f"segment {g.get('data-segment')}: lines {names}")
        for p in lines:
            points = len(p.get("points", "").split())
            if points != args.samples:
                errors.append(f"segment {g.get('data-segment')} {p.get('class')}: {points} "
                              f"points, expected {args.samples}")
    transfers = [g for g in root.iter(f"{{{SVG_NS}}}g") if g.get("class") == "transfer"]
    if len(transfers) != args.transfers:
        errors.append(f"{len(transfers)} transfer markers, expected {args.transfers}")
    collapses = [x for x in root.iter(f"{{{SVG_NS}}}line") if x.get("class") == "collapse"]
    if len(collapses) != args.collapses:
        errors.append(f"{len(collapses)} collapse markers, expected {args.collapses}")
    for e in errors:
        print(f"{args.svg}: {e}", file=sys.stderr)
    if not errors:
        print(f"{args.svg}: well-formed; {len(groups)} segments x {len(SERIES)} series of "
              f"{args.samples} points, {len(transfers)} transfers, {len(collapses)} collapse")
    return 1 if errors else 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    r = sub.add_parser("render")
    for name in ("samples", "transfers", "events", "tenant", "item", "out"):
        r.add_argument(f"--{name}", required=True)
    c = sub.add_parser("check")
    c.add_argument("svg")
    for name in ("segments", "samples", "transfers", "collapses"):
        c.add_argument(f"--{name}", type=int, required=True)
    args = p.parse_args()
    if args.cmd == "render":
        render(args)
        return 0
    return check(args)


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""regions_conf.py - copies a directory of region INI files (examples/regions)
for a local run: every dsn points at the private PostgreSQL (one database per
region, escrow_<region>), every tcp port becomes a free one (the same old
port maps to the same new port in every file, so peers stay consistent) and,
with --proxy, every [peers] link goes through a fault proxy of its own
(tests/support/faultproxy.py) so that a test can cut it.

    regions_conf.py SRC_DIR OUT_DIR --pg-port P --pg-user U [--proxy]

Prints shell assignments (for cluster.sh's env file):
    ESC_REGIONS="eu us"
    ESC_REGION_CONFIG_<r>, ESC_REGION_DSN_<r>, ESC_REGION_DB_<r>,
    ESC_REGION_COORD_<r>, ESC_REGION_PUBLISH_<r>, ESC_REGION_NODES_<r>="id id", ESC_NODE_EP_<n>
    ESC_PROXIES="eu_us ...", ESC_PROXY_LISTEN_<l>, ESC_PROXY_TARGET_<l>,
    ESC_PROXY_MODE_<l> (the mode file: see faultproxy.py)
where <r>, <n> and <l> are names with every byte outside [A-Za-z0-9] as '_'.
Standard library only; the files are re-read by the daemons, which validate
them (this script only rewrites values it recognises).
"""
import argparse
import os
import re
import shlex
import socket
import sys


def var(name):
    return re.sub(r"[^A-Za-z0-9]", "_", name)


class Ports:
    def __init__(self):
        self.map = {}
        self.socks = []

    def fresh(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        self.socks.append(s)  # held until the end: no port is handed out twice
        return s.getsockname()[1]

    def get(self, old):
        if old not in self.map:
            self.map[old] = self.fresh()
        return self.map[old]

    def release(self):
        for s in self.socks:
            s.close()


def parse(path):
    """[(section, key, value, line_index)] and the lines."""
    with open(path) as f:
        lines = f.read().split("\n")
    out, section = [], None
    for i, line in enumerate(lines):
        s = line.strip()
        if not s or s[0] in ";#":
            continue
        if s.startswith("["):
            section = s[1:s.index("]")]
            continue
        if "=" in s:
            k, v = s.split("=", 1)
            v = re.split(r"\s;", v, 1)[0]
            out.append((section, k.strip(), v.strip(), i))
    return out, lines


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("src")
    ap.add_argument("out")
    ap.add_argument("--pg-port", required=True)
    ap.add_argument("--pg-user", required=True)
    ap.add_argument("--proxy", action="store_true")
    a = ap.parse_args()
    ports = Ports()
    files = sorted(f for f in os.listdir(a.src) if f.endswith(".ini"))
    if not files:
        sys.exit("regions_conf.py: no .ini files in %s" % a.src)
    env, regions, proxies = [], [], []
    parsed = {}
    for f in files:
        entries, lines = parse(os.path.join(a.src, f))
        name = next((v for s, k, v, _ in entries if s == "region" and k == "name"), None)
        if name is None:
            sys.exit("regions_conf.py: %s has no [region] name" % f)
        parsed[f] = (name, entries, lines)
    # coordinators first, so that a peer's target is known when we get to it
    coord_of = {}
    for f, (name, entries, lines) in parsed.items():
        for s, k, v, _ in entries:
            if s == "region" and k == "coordinator":
                m = re.match(r"tcp://([^:]+):(\d+)$", v)
                coord_of[name] = "127.0.0.1:%d" % ports.get(int(m.group(2)))
    for f, (name, entries, lines) in parsed.items():
        regions.append(name)
        r = var(name)
        db = "escrow_" + r
        dsn = "host=127.0.0.1 port=%s dbname=%s user=%s" % (a.pg_port, db, a.pg_user)
        nodes = []
        for s, k, v, i in entries:
            new = None
            if s == "region" and k == "dsn":
                new = dsn
            elif s == "peers" and a.proxy:
                link = "%s_%s" % (r, var(k))
                listen = "127.0.0.1:%d" % ports.fresh()
                proxies.append(link)
                env += ["ESC_PROXY_LISTEN_%s=%s" % (link, listen),
                        "ESC_PROXY_TARGET_%s=%s" % (link, coord_of[k]),
                        "ESC_PROXY_MODE_%s=%s" % (link, shlex.quote(
                            os.path.join(a.out, "link-%s-%s.mode" % (name, k))))]
                new = "tcp://" + listen
            else:
                m = re.match(r"tcp://([^:]+):(\d+)$", v)
                if m:
                    new = "tcp://127.0.0.1:%d" % ports.get(int(m.group(2)))
                elif s == "region" and k == "metrics":
                    m = re.match(r"(?:([^:]*):)?(\d+)$", v)
                    if m:
                        new = "127.0.0.1:%d" % ports.get(int(m.group(2)))
            if s == "nodes":
                nodes.append(k)
            if new is not None:
                lines[i] = "%s = %s" % (k, new)
                if s == "region" and k in ("coordinator", "publish"):
                    env.append("ESC_REGION_%s_%s=%s" % (
                        "COORD" if k == "coordinator" else "PUBLISH", r, shlex.quote(new)))
                if s == "nodes":
                    env.append("ESC_NODE_EP_%s=%s" % (var(k), shlex.quote(new)))
        path = os.path.join(a.out, f)
        with open(path, "w") as out:
            out.write("\n".join(lines))
        env += ["ESC_REGION_CONFIG_%s=%s" % (r, shlex.quote(path)),
                "ESC_REGION_DSN_%s=%s" % (r, shlex.quote(dsn)),
                "ESC_REGION_DB_%s=%s" % (r, db),
                "ESC_REGION_NODES_%s=%s" % (r, shlex.quote(" ".join(nodes)))]
    ports.release()
    print("ESC_REGIONS=%s" % shlex.quote(" ".join(regions)))
    print("ESC_PROXIES=%s" % shlex.quote(" ".join(proxies)))
    for e in env:
        print(e)


if __name__ == "__main__":
    main()

# SPDX-License-Identifier: Apache-2.0
"""clusterlib.py - the cluster these tests run against, from the environment
that tests/integration/python.sh sets after starting it (a private
PostgreSQL, a coordinator and two segment nodes with --auth on):

  ESCROW_TEST_COORDINATOR, ESCROW_TEST_ROUTES   the coordinator's endpoints
  ESCROW_TEST_TENANT, ESCROW_TEST_KEY           a tenant and its key
  ESCROW_TEST_ADMIN_KEY_FILE                    the admin key (escrowctl)
  ESCROW_DSN, ESC_BIN, ESC_PG_BINDIR            the database, escrowctl, psql

Without them the tests fail (they never skip): run them through ctest
(ctest -R '^python$') or python.sh.
"""

import itertools
import os
import subprocess
import time

import pytest

import escrow

_ids = itertools.count(1)
# The tools this runs (psql, escrowctl) get the environment without the
# sanitizer runtime python.sh may preload for a sanitizer build of libescrow
# (psql deadlocks under it).
_TOOL_ENV = {k: v for k, v in os.environ.items() if k not in ("LD_PRELOAD", "ASAN_OPTIONS")}


def _env(name):
    value = os.environ.get(name)
    if not value:
        raise pytest.UsageError(f"{name} is not set: run these tests through tests/integration/python.sh")
    return value


class Cluster:
    def __init__(self):
        self.coordinator = _env("ESCROW_TEST_COORDINATOR")
        self.routes = _env("ESCROW_TEST_ROUTES")
        self.tenant = _env("ESCROW_TEST_TENANT")
        self.key = _env("ESCROW_TEST_KEY")
        self.admin_key_file = _env("ESCROW_TEST_ADMIN_KEY_FILE")
        self.dsn = _env("ESCROW_DSN")
        self.bin = _env("ESC_BIN")
        self.psql = os.path.join(_env("ESC_PG_BINDIR"), "psql")
        self.run_id = os.getpid()

    def options(self, **over):
        o = dict(coordinator=self.coordinator, routes=self.routes, tenant=self.tenant,
                 credential=self.key, deadline_ms=10000)
        o.update(over)
        return o

    def sql(self, query):
        """One value (or rows joined by newlines) from PostgreSQL."""
        out = subprocess.run([self.psql, self.dsn, "-At", "-X", "-q", "-v", "ON_ERROR_STOP=1"],
                             input=query, capture_output=True, text=True, check=True, env=_TOOL_ENV)
        return out.stdout.strip()

    def ctl(self, *args, admin=False):
        cmd = [os.path.join(self.bin, "escrowctl")]
        if admin:
            cmd += ["--credential", self.admin_key_file]
        out = subprocess.run(cmd + list(args), capture_output=True, text=True, env=_TOOL_ENV)
        if out.returncode != 0:
            raise AssertionError(f"escrowctl {' '.join(args)}: {out.stdout}{out.stderr}")
        return out.stdout

    def new_item(self, total, segments=2, **limits):
        """A fresh item of this tenant, placed on live nodes; its name."""
        item = f"py{self.run_id}-{next(_ids)}"
        args = ["item", "create", self.tenant, item, "--total", str(total),
                "--segments", str(segments)]
        for flag, value in limits.items():
            args += ["--" + flag.replace("_", "-"), str(value)]
        self.ctl(*args)
        wait_for(lambda: self.sql(
            f"SELECT count(*) FILTER (WHERE n.state IS DISTINCT FROM 'up' OR s.epoch = 0) "
            f"FROM segments s LEFT JOIN nodes n USING (node_id) "
            f"WHERE s.tenant_id = '{self.tenant}' AND s.item_id = '{item}'") == "0",
            f"the segments of {item} placed on live nodes")
        return item

    def counters(self, item):
        """(sold, held, available) of item, from PostgreSQL."""
        row = self.sql(f"SELECT sum(sold), sum(held), sum(available) FROM segments "
                       f"WHERE tenant_id = '{self.tenant}' AND item_id = '{item}'")
        return tuple(int(v) for v in row.split("|"))


def wait_for(cond, what, timeout_s=60):
    """Polls cond() until it is true; the timeout only bounds a hang."""
    deadline = time.monotonic() + timeout_s
    while not cond():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {timeout_s} s for {what}")
        time.sleep(0.1)


# How long a racing buyer keeps retrying: it only bounds a hang (a broken
# binding that never sells would otherwise retry TRY_LATER for ever).
RACE_S = 120


def reserve_until_final(client, item, buyer, key, until):
    """reserve as a shop would: TryLater (units held by others may come back)
    and Retryable (TimedOut: outcome unknown) are retried with the SAME key
    until time.monotonic() passes until. The hold, or SoldOut."""
    while time.monotonic() < until:
        try:
            return client.reserve(item, buyer, key)
        except escrow.TryLater:
            time.sleep(0.05)
        except escrow.Retryable:
            pass
    raise AssertionError(f"{key}: no final answer within {RACE_S} s")


def confirm_until_final(client, hold, tries=100):
    """confirm, retried after Retryable; a retry whose first copy did sell
    answers NotHeld with the converted hold: that is the sale."""
    for _ in range(tries):
        try:
            return client.confirm(hold)
        except escrow.Retryable:
            pass
        except escrow.NotHeld as e:
            if e.hold is not None and e.hold.state is escrow.HoldState.CONVERTED:
                return e.hold
            raise
    raise AssertionError(f"hold {hold.hold_id}: no final answer after {tries} tries")

# SPDX-License-Identifier: Apache-2.0
"""test_offline.py - the binding without a cluster: the answer table against
the library's, the one version everywhere, arguments refused before
anything is sent, hold values, the library lookup, and both clients' call
machinery (many threads, thousands of asyncio calls, close with calls
pending) against an endpoint where nobody listens."""

import asyncio
import concurrent.futures
import ctypes
import ctypes.util
import os
import pathlib
import re

import pytest

import escrow
from escrow import _native, errors

ROOT = pathlib.Path(__file__).resolve().parents[4]
NOBODY = "ipc:///tmp/escrow-python-test-nobody-listens.sock"


def test_every_code_of_the_library_has_a_family():
    lib = _native.load()
    named = {}
    for code in range(-1, -100, -1):
        name = lib.esc_err_name(code).decode()
        if name != "UNKNOWN":
            named[name] = code
    assert named == errors.CODES
    assert set(errors.FAMILIES) == set(errors.CODES)
    e = errors.error_for(errors.CODES["SOLD_OUT"], "m")
    assert isinstance(e, escrow.SoldOut) and e.code == -1 and e.name == "SOLD_OUT"
    assert isinstance(errors.error_for(-99), escrow.ClientError)
    assert isinstance(errors.error_for(-30), escrow.CartEnded)
    assert issubclass(escrow.TimedOut, escrow.Retryable)
    assert issubclass(escrow.InvalidArgument, ValueError)


def test_one_version():
    cmake = (ROOT / "CMakeLists.txt").read_text()
    project = re.search(r"project\(escrow VERSION ([0-9.]+)", cmake).group(1)
    pyproject = (ROOT / "client/python/pyproject.toml").read_text()
    assert re.search(r'^version = "([0-9.]+)"', pyproject, re.M).group(1) == project
    assert escrow.__version__ == project
    assert escrow.library_version() == project


def test_arguments_refused_before_sending():
    with escrow.Client(endpoint=NOBODY, tenant="t1", deadline_ms=200) as c:
        for bad in [dict(item=7), dict(item="t\u00e9e"), dict(qty=True), dict(qty=2**63),
                    dict(key=None), dict(ttl_ms=-1), dict(deadline_ms=2**32)]:
            args = dict(item="tee", buyer="b1", key="k1")
            args.update(bad)
            with pytest.raises(escrow.InvalidArgument):
                c.reserve(**args)
        with pytest.raises(escrow.InvalidArgument):
            c.reserve("tee", "b1", "k 1")  # refused by libescrow: not a valid key
        for hold in (0, -5, "123", 2**64):
            with pytest.raises(escrow.InvalidArgument):
                c.confirm(hold)
        with pytest.raises(escrow.InvalidArgument):
            c.reserve_cart("b1", [("tee",)], key="c1")
    with pytest.raises(escrow.InvalidArgument):
        escrow.Client(tenant="bad tenant", endpoint=NOBODY)
    with pytest.raises(escrow.InvalidArgument):
        escrow.Client(tenant="t1")  # neither endpoint nor coordinator


def test_hold_value():
    s = _native.HoldStruct(hold_id=(7 << 40) | 2**60, segment_id=7, item_id=b"tee",
                           buyer_id=b"b1", qty=2, qty_sold=1, state=2,
                           expires_at_ms=1_700_000_000_000, extended=True)
    h = escrow.Hold._from_struct(s)
    assert h.hold_id == (7 << 40) | 2**60 and h.hold_id > 2**53  # exact, no float
    assert h.state is escrow.HoldState.CONVERTED and str(h.state) == "converted"
    assert not h.held and h.item == "tee" and h.expires_at.year == 2023
    assert escrow.Hold._from_struct(_native.HoldStruct(state=99)).state is escrow.HoldState.UNKNOWN


def test_library_lookup(tmp_path):
    with pytest.raises(escrow.LibraryNotFound, match="ESCROW_LIBRARY"):
        _native.load(str(tmp_path / "libescrow.so.0"))
    with pytest.raises(escrow.LibraryNotFound, match="lacks"):
        _native.load(ctypes.util.find_library("c"))  # a library, but not libescrow


def test_many_threads_share_one_client():
    with escrow.Client(endpoint=NOBODY, tenant="t1", deadline_ms=300) as c:

        def call(i):
            try:
                c.reserve("tee", f"b{i}", f"k{i}")
            except escrow.TimedOut:
                return "timedout"
            return "answered?"

        with concurrent.futures.ThreadPoolExecutor(32) as pool:
            assert list(pool.map(call, range(200))) == ["timedout"] * 200
        assert set(c.stats()) == {"frames_sent", "sold_out_cached", "route_fetches",
                                  "route_pushes", "retargets", "resolves"}


def test_asyncio_thousands_in_flight_and_close():
    async def main():
        ac = escrow.AsyncClient(endpoint=NOBODY, tenant="t1", deadline_ms=300)
        results = await asyncio.gather(*(ac.reserve("tee", f"b{i}", f"k{i}") for i in range(3000)),
                                       return_exceptions=True)
        assert all(isinstance(r, escrow.TimedOut) for r in results)
        ac2 = escrow.AsyncClient(endpoint=NOBODY, tenant="t1", deadline_ms=60000)
        pending = [asyncio.ensure_future(ac2.reserve("tee", "b", f"p{i}")) for i in range(50)]
        await asyncio.sleep(0.05)
        await ac2.close()
        done = await asyncio.gather(*pending, return_exceptions=True)
        assert all(isinstance(r, escrow.Closed) for r in done)
        with pytest.raises(escrow.Closed):
            await ac2.get(1 << 40 | 1)
        await ac.close()

    asyncio.run(main())


def test_environment_names_the_library():
    assert os.environ.get("ESCROW_LIBRARY"), "run through tests/integration/python.sh"

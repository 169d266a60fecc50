# SPDX-License-Identifier: Apache-2.0
"""test_calls.py - the calls and their answers against the cluster: the same
key gives the same hold (threads, asyncio, two clients), partial confirm,
extend, carts (whole, and all-or-nothing when a line fails), and every
exception raised by the answer that maps to it."""

import asyncio
import time

import pytest

import escrow
from clusterlib import wait_for


def test_same_key_same_hold(cluster, client):
    item = cluster.new_item(10)
    first = client.reserve(item, "b1", f"{item}-k")
    again = client.reserve(item, "b1", f"{item}-k")
    assert again.hold_id == first.hold_id and again.qty == 1

    async def from_asyncio():
        async with escrow.AsyncClient(**cluster.options()) as ac:
            return await asyncio.gather(*(ac.reserve(item, "b1", f"{item}-k") for _ in range(20)))

    assert {h.hold_id for h in asyncio.run(from_asyncio())} == {first.hold_id}
    with escrow.Client(**cluster.options()) as other:
        assert other.reserve(item, "b1", f"{item}-k").hold_id == first.hold_id
    assert cluster.counters(item) == (0, 1, 9)


def test_partial_confirm_extend_get(cluster, client):
    item = cluster.new_item(10)
    hold = client.reserve(item, "b1", f"{item}-k", qty=3, ttl_ms=60000)
    assert hold.held and hold.qty == 3 and hold.item == item and hold.buyer == "b1"
    assert hold.hold_id > 2**40  # ids name their segment: beyond a double's 2**53 soon
    longer = client.extend(hold, ttl_ms=120000)
    assert longer.extended and longer.expires_at_ms > hold.expires_at_ms
    sold = client.confirm(hold, qty=2)
    assert sold.state is escrow.HoldState.CONVERTED and sold.qty_sold == 2
    assert client.get(hold.hold_id) == sold
    assert cluster.counters(item) == (2, 0, 8)


def test_cart(cluster, client):
    # one segment each: with two, the coordinator may move a tiny item's
    # units between its segments at any moment, and a reserve that meets
    # the units in transit is answered TRY_LATER (right, but not this test)
    a, b = cluster.new_item(5, segments=1), cluster.new_item(5, segments=1, max_per_order=3)
    holds = client.reserve_cart("b1", {a: 1, b: 2}, key=f"{a}-cart")
    assert [(h.item, h.qty) for h in holds] == [(a, 1), (b, 2)]
    assert client.reserve_cart("b1", [(a, 1), (b, 2)], key=f"{a}-cart") == holds  # same key
    for h in holds:
        client.confirm(h)
    with pytest.raises(escrow.CartEnded) as e:  # the key's holds are sold: it is spent
        client.reserve_cart("b1", [(a, 1), (b, 2)], key=f"{a}-cart")
    assert e.value.code == -30 and e.value.name == "CART_ENDED"
    assert [client.get(h.hold_id).state for h in holds] == [escrow.HoldState.CONVERTED] * 2
    with pytest.raises(escrow.UnknownItem) as e:
        client.reserve_cart("b2", [(a, 1), ("no-such-item", 1)], key=f"{a}-cart2")
    assert e.value.line == 1
    wait_for(lambda: cluster.counters(a) == (1, 0, 4), "the failed cart's hold on a released")

    async def async_cart():
        async with escrow.AsyncClient(**cluster.options()) as ac:
            ok = await ac.reserve_cart("b3", {a: 2, b: 1}, key=f"{a}-cart3")
            with pytest.raises(escrow.LimitExceeded) as e:
                await ac.reserve_cart("b4", [(a, 1), (b, 4)], key=f"{a}-cart4")
            return ok, e.value.line

    ok, line = asyncio.run(async_cart())
    assert [(h.item, h.qty) for h in ok] == [(a, 2), (b, 1)] and line == 1


def test_sold_out_and_try_later(cluster, client):
    item = cluster.new_item(1, segments=1)
    hold = client.reserve(item, "b1", f"{item}-1")
    with pytest.raises(escrow.TryLater):  # the one unit is in someone's cart
        client.reserve(item, "b2", f"{item}-2")
    client.confirm(hold)

    def sold_out():
        try:
            client.reserve(item, "b3", f"{item}-3")
        except escrow.SoldOut as e:
            assert e.code == escrow.CODES["SOLD_OUT"] and e.name == "SOLD_OUT"
            return True
        except escrow.TryLater:
            return False  # until the sale of the last unit is known everywhere
        raise AssertionError("a unit was reserved after the last one was sold")

    wait_for(sold_out, "SOLD_OUT")


def test_hold_answers(cluster, client):
    item = cluster.new_item(10, max_per_order=2, max_per_buyer=3)
    with pytest.raises(escrow.LimitExceeded) as e:
        client.reserve(item, "b1", f"{item}-big", qty=3)
    assert e.value.name == "ORDER_LIMIT"
    client.reserve(item, "b1", f"{item}-1", qty=2)
    with pytest.raises(escrow.LimitExceeded) as e:
        client.reserve(item, "b1", f"{item}-2", qty=2)
    assert e.value.name == "BUYER_LIMIT"
    with pytest.raises(escrow.IdempotencyMismatch):
        client.reserve(item, "b1", f"{item}-1", qty=1)  # the same key, other parameters

    hold = client.reserve(item, "b2", f"{item}-3")
    client.extend(hold)
    with pytest.raises(escrow.AlreadyExtended):
        client.extend(hold)
    client.confirm(hold)
    with pytest.raises(escrow.NotHeld) as e:
        client.release(hold)
    assert e.value.hold.state is escrow.HoldState.CONVERTED  # the answer shows how it ended
    with pytest.raises(escrow.NotFound):
        client.get(hold.hold_id + 1000)

    short = client.reserve(item, "b4", f"{item}-4", ttl_ms=50)
    time.sleep(0.2)
    wait_for(lambda: client.get(short).state is escrow.HoldState.EXPIRED, "the hold expired")
    with pytest.raises((escrow.Expired, escrow.NotHeld)) as e:
        client.confirm(short)
    assert e.value.hold is None or e.value.hold.state is escrow.HoldState.EXPIRED
    with pytest.raises(escrow.UnknownItem):
        client.reserve("no-such-item", "b1", f"{item}-5")
    with pytest.raises(escrow.InvalidArgument):
        client.reserve(item, "b1", f"{item}-6", qty=0)


def test_paused(cluster, client):
    item = cluster.new_item(10)
    cluster.ctl("item", "pause", cluster.tenant, item, admin=True)

    def paused():
        try:
            client.reserve(item, "b1", f"{item}-p")
        except escrow.Paused:
            return True
        raise AssertionError("reserved on a paused item")

    wait_for(paused, "PAUSED")


def test_auth_timeout_closed(cluster):
    bad = cluster.options(credential="esk_0123456789abcdef_" + "A" * 43)
    with escrow.Client(**bad) as c, pytest.raises(escrow.AuthError):
        c.reserve("anything", "b1", "k-auth")
    with escrow.Client(**cluster.options(credential=None)) as c, pytest.raises(escrow.AuthError):
        c.reserve("anything", "b1", "k-auth")
    nobody = cluster.options(coordinator="tcp://127.0.0.1:9", routes=None, deadline_ms=300)
    c = escrow.Client(**nobody)
    with pytest.raises(escrow.TimedOut) as e:
        c.reserve("anything", "b1", "k-timeout")
    assert isinstance(e.value, escrow.Retryable)
    c.close()
    with pytest.raises(escrow.Closed):
        c.reserve("anything", "b1", "k-closed")

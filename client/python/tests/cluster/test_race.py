# SPDX-License-Identifier: Apache-2.0
"""test_race.py - many buyers race for 100 units through the Python binding,
from many threads (one shared Client) and from many asyncio tasks (one
AsyncClient, thousands of calls in flight): exactly 100 are sold, as
PostgreSQL counts them, every winner holds a distinct hold, and the losers
hear SOLD_OUT. Buyers behave as a shop should: TRY_LATER and a timeout are
retried with the same key, so a slow machine changes the time, not the
count."""

import asyncio
import concurrent.futures
import time

import escrow
from clusterlib import RACE_S, confirm_until_final, reserve_until_final

UNITS = 100


def check_sale(cluster, item, holds, sold_out, buyers):
    assert len(holds) == UNITS
    assert len({h.hold_id for h in holds}) == UNITS
    assert all(h.state is escrow.HoldState.CONVERTED and h.qty_sold == 1 for h in holds)
    assert sold_out == buyers - UNITS
    assert cluster.counters(item) == (UNITS, 0, 0)
    assert cluster.sql(f"SELECT count(*) FROM holds WHERE item_id = '{item}' "
                       f"AND state = 'converted'") == str(UNITS)
    cluster.ctl("check")  # conservation and the counters against the holds


def test_threads_sell_exactly_the_stock(cluster, client):
    item = cluster.new_item(UNITS, segments=4)
    buyers, threads = 600, 32
    until = time.monotonic() + RACE_S

    def buy(i):
        try:
            hold = reserve_until_final(client, item, f"buyer-{i}", f"{item}-t-{i}", until)
        except escrow.SoldOut:
            return None
        return confirm_until_final(client, hold)

    with concurrent.futures.ThreadPoolExecutor(threads) as pool:
        results = list(pool.map(buy, range(buyers)))
    holds = [h for h in results if h is not None]
    check_sale(cluster, item, holds, results.count(None), buyers)


async def _buy_async(ac, item, i, until):
    """One buyer on asyncio, retrying as reserve_until_final and
    confirm_until_final do."""
    key = f"{item}-a-{i}"
    while time.monotonic() < until:
        try:
            hold = await ac.reserve(item, f"buyer-{i}", key)
            break
        except escrow.SoldOut:
            return None
        except escrow.TryLater:
            await asyncio.sleep(0.05)  # units held by others may come back
        except escrow.Retryable:
            pass
    else:
        raise AssertionError(f"{key}: no final answer within {RACE_S} s")
    for _ in range(100):
        try:
            return await ac.confirm(hold)
        except escrow.Retryable:
            pass
        except escrow.NotHeld as e:
            if e.hold is not None and e.hold.state is escrow.HoldState.CONVERTED:
                return e.hold
            raise
    raise AssertionError(f"{key}: confirm has no final answer")


async def _async_sale(cluster, item, buyers):
    async with escrow.AsyncClient(**cluster.options(deadline_ms=30000)) as ac:
        until = time.monotonic() + RACE_S
        return await asyncio.gather(*(_buy_async(ac, item, i, until) for i in range(buyers)))


def test_asyncio_sells_exactly_the_stock(cluster):
    item = cluster.new_item(UNITS, segments=4)
    buyers = 3000  # all in flight at once from one thread
    results = asyncio.run(_async_sale(cluster, item, buyers))
    holds = [h for h in results if h is not None]
    check_sale(cluster, item, holds, results.count(None), buyers)

# SPDX-License-Identifier: Apache-2.0
"""aio.py - AsyncClient: the same calls as coroutines, for asyncio.

Thousands of calls in flight without a thread per call: each call is queued
to libescrow's threaded client (its own I/O thread) with a tag, and returns
a future. The client's descriptor is readable while answers wait; the event
loop watches it (add_reader) and drains the answers in batches, resolving
the futures on the loop's own thread. No Python code runs on libescrow's
thread.

Use one AsyncClient per event loop, from that loop only. A task cancelled
while it awaits a reserve does not cancel the reserve: the hold may still be
taken, and a retry with the same key finds it.
"""

import asyncio
import ctypes

from . import _calls, _native
from .errors import CODES, Closed, error_for
from .hold import Hold

BATCH = 256  # completions taken per poll


class AsyncClient:
    """AsyncClient(coordinator=..., routes=..., tenant=..., credential=...,
    deadline_ms=...): the arguments of Client; every call is a coroutine."""

    def __init__(self, *, coordinator=None, routes=None, tenant, credential=None,
                 deadline_ms=None, endpoint=None, resend_ms=None, library=None):
        self._lib = _native.load(library)
        self._t = _calls.open_threaded(
            self._lib, coordinator=coordinator, routes=routes, tenant=tenant,
            credential=credential, deadline_ms=deadline_ms, endpoint=endpoint,
            resend_ms=resend_ms)
        self._fd = self._lib.esc_threaded_fd(self._t)
        self._loop = None
        self._pending = {}  # tag -> (future, None or (cart holds array, nlines))
        self._next_tag = 1
        self._batch = (_native.CompletionStruct * BATCH)()

    # ---- the calls ---------------------------------------------------------

    async def reserve(self, item, buyer, key, qty=1, ttl_ms=0, deadline_ms=None):
        req = _calls.reserve_req(item, buyer, key, qty, ttl_ms)
        return await self._submit(self._lib.esc_threaded_submit_reserve, ctypes.byref(req),
                                  _calls.u32(deadline_ms, "deadline_ms"))

    async def confirm(self, hold, qty=0, deadline_ms=None):
        return await self._submit(self._lib.esc_threaded_submit_confirm,
                                  _calls.hold_id_of(hold), _calls.i64(qty, "qty"),
                                  _calls.u32(deadline_ms, "deadline_ms"))

    async def release(self, hold, deadline_ms=None):
        return await self._submit(self._lib.esc_threaded_submit_release,
                                  _calls.hold_id_of(hold), _calls.u32(deadline_ms, "deadline_ms"))

    async def extend(self, hold, ttl_ms=0, deadline_ms=None):
        return await self._submit(self._lib.esc_threaded_submit_extend,
                                  _calls.hold_id_of(hold), _calls.u32(ttl_ms, "ttl_ms"),
                                  _calls.u32(deadline_ms, "deadline_ms"))

    async def get(self, hold, deadline_ms=None):
        return await self._submit(self._lib.esc_threaded_submit_get,
                                  _calls.hold_id_of(hold), _calls.u32(deadline_ms, "deadline_ms"))

    async def reserve_cart(self, buyer, lines, key, ttl_ms=0, deadline_ms=None):
        arr, n = _calls.cart_lines(lines)
        holds = (_native.HoldStruct * max(n, 1))()  # written by libescrow: kept until answered
        return await self._submit(self._lib.esc_threaded_submit_reserve_cart,
                                  _calls.encode(buyer, "buyer"), arr, n,
                                  _calls.encode(key, "key"), _calls.u32(ttl_ms, "ttl_ms"),
                                  _calls.u32(deadline_ms, "deadline_ms"), holds,
                                  cart=(holds, n))

    # ---- life cycle --------------------------------------------------------

    async def close(self):
        """Frees the client; calls still pending fail with Closed. Idempotent."""
        t, self._t = self._t, None
        if t is None:
            return
        if self._loop is not None:
            self._loop.remove_reader(self._fd)
        self._lib.esc_threaded_free(t)
        pending, self._pending = self._pending, {}
        for fut, _ in pending.values():
            if not fut.done():
                fut.set_exception(Closed(CODES["CLOSED"], "the client was closed"))

    async def __aenter__(self):
        return self

    async def __aexit__(self, *exc):
        await self.close()

    def stats(self):
        """The client's counters (as Client.stats; answers at once)."""
        if self._t is None:
            raise Closed(CODES["CLOSED"], "the client was closed")
        s = _native.StatsStruct()
        rc = self._lib.esc_threaded_stats(self._t, ctypes.byref(s))
        if rc != 0:
            raise error_for(rc, _calls.message_of(self._lib, rc))
        return _calls.stats_dict(s)

    def __del__(self):
        # Reached only once the loop dropped its reader (it refers to self).
        if getattr(self, "_t", None) is not None:
            self._lib.esc_threaded_free(self._t)
            self._t = None

    # ---- plumbing ----------------------------------------------------------

    def _attach(self):
        loop = asyncio.get_running_loop()
        if self._loop is None:
            loop.add_reader(self._fd, self._drain)
            self._loop = loop
        elif loop is not self._loop:
            raise RuntimeError("an AsyncClient serves the event loop it was first used on")
        return loop

    def _submit(self, fn, *args, cart=None):
        if self._t is None:
            raise Closed(CODES["CLOSED"], "the client was closed")
        loop = self._attach()
        tag = self._next_tag
        self._next_tag += 1
        rc = fn(self._t, *args, tag)
        if rc != 0:
            raise error_for(rc, _calls.message_of(self._lib, rc))
        fut = loop.create_future()
        self._pending[tag] = (fut, cart)
        return fut

    def _drain(self):
        """The descriptor is readable: resolve every waiting answer."""
        while self._t is not None:
            n = self._lib.esc_threaded_poll(self._t, self._batch, BATCH)
            for i in range(n):
                self._deliver(self._batch[i])
            if n < BATCH:
                return

    def _deliver(self, c):
        entry = self._pending.pop(c.tag, None)
        if entry is None:
            return
        fut, cart = entry
        if fut.done():  # the awaiting task was cancelled
            return
        try:
            if cart is not None:
                holds, nlines = cart
                result = _calls.cart_result(self._lib, c.status, holds, c.nholds,
                                            c.failed_line, nlines)
            elif c.status == 0:
                result = Hold._from_struct(c.hold)
            else:
                raise error_for(c.status, _calls.message_of(self._lib, c.status),
                                Hold._from_struct(c.hold) if c.has_hold else None)
        except Exception as e:  # the answer's exception, for the awaiting task
            fut.set_exception(e)
        else:
            fut.set_result(result)

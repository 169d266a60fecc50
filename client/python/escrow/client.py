# SPDX-License-Identifier: Apache-2.0
"""client.py - Client: blocking calls, safe from any number of threads.

One Client per process is enough: it runs libescrow's threaded client (its
own I/O thread, its own sockets and routing table), every call from every
thread shares it, and each call releases the GIL while it waits. Give each
checkout an idempotency key that names it (an order id): a retry with the
same key gets the first answer, never a second unit.
"""

import ctypes
import threading

from . import _calls, _native
from .errors import CODES, Closed


class Client:
    """Client(coordinator=..., routes=..., tenant=..., credential=..., deadline_ms=...)

    coordinator: the coordinator's request endpoint ("tcp://10.0.0.5:7000");
    routes: its route PUB endpoint (optional: routing changes and "sold out"
    are pushed); or endpoint= one segment node instead of a coordinator.
    tenant: the shop's tenant id. credential: the tenant's key (escrowctl key
    create), when the cluster runs with --auth on. deadline_ms: the default
    per-call deadline (None: the library's, 5 s). library: a path to
    libescrow.so.0 (else $ESCROW_LIBRARY, else the system's).
    """

    def __init__(self, *, coordinator=None, routes=None, tenant, credential=None,
                 deadline_ms=None, endpoint=None, resend_ms=None, library=None):
        self._lib = _native.load(library)
        self._t = _calls.open_threaded(
            self._lib, coordinator=coordinator, routes=routes, tenant=tenant,
            credential=credential, deadline_ms=deadline_ms, endpoint=endpoint,
            resend_ms=resend_ms)
        self._cv = threading.Condition()
        self._active = 0
        self._closing = False

    # ---- the calls ---------------------------------------------------------

    def reserve(self, item, buyer, key, qty=1, ttl_ms=0, deadline_ms=None):
        """Holds qty units of item for buyer under idempotency key; returns the
        Hold. The same key again answers with the same hold."""
        req = _calls.reserve_req(item, buyer, key, qty, ttl_ms)
        out = _native.HoldStruct()
        rc = self._run(self._lib.esc_threaded_reserve, ctypes.byref(req),
                       _calls.u32(deadline_ms, "deadline_ms"), ctypes.byref(out))
        return _calls.hold_result(self._lib, rc, out)

    def confirm(self, hold, qty=0, deadline_ms=None):
        """Sells the hold (qty 0: all of it; fewer: that many, the rest returns)."""
        return self._hold_call(self._lib.esc_threaded_confirm, hold,
                               _calls.i64(qty, "qty"), deadline_ms)

    def release(self, hold, deadline_ms=None):
        """Gives the hold's units back (cancelled)."""
        return self._hold_call(self._lib.esc_threaded_release, hold, None, deadline_ms)

    def extend(self, hold, ttl_ms=0, deadline_ms=None):
        """Buys a slow payer time, once per hold (ttl_ms 0: the item's ttl)."""
        return self._hold_call(self._lib.esc_threaded_extend, hold,
                               _calls.u32(ttl_ms, "ttl_ms"), deadline_ms)

    def get(self, hold, deadline_ms=None):
        """The hold as it is now."""
        return self._hold_call(self._lib.esc_threaded_get, hold, None, deadline_ms)

    def reserve_cart(self, buyer, lines, key, ttl_ms=0, deadline_ms=None):
        """All or nothing: one hold per distinct item (lines: {item: qty} or
        (item, qty) pairs; keys "<key>/<item>"). On failure the holds taken are
        released and the exception's .line names the failing line."""
        arr, n = _calls.cart_lines(lines)
        holds = (_native.HoldStruct * max(n, 1))()
        nholds = ctypes.c_size_t(0)
        failed = ctypes.c_size_t(n)
        rc = self._run(self._lib.esc_threaded_reserve_cart,
                       _calls.encode(buyer, "buyer"), arr, n, _calls.encode(key, "key"),
                       _calls.u32(ttl_ms, "ttl_ms"), _calls.u32(deadline_ms, "deadline_ms"),
                       holds, ctypes.byref(nholds), ctypes.byref(failed))
        return _calls.cart_result(self._lib, rc, holds, nholds.value, failed.value, n)

    def stats(self):
        """The client's counters (frames_sent, sold_out_cached, route_fetches, ...)."""
        s = _native.StatsStruct()
        rc = self._run(self._lib.esc_threaded_stats, ctypes.byref(s))
        if rc != 0:
            raise _calls.error_for(rc, _calls.message_of(self._lib, rc))
        return _calls.stats_dict(s)

    # ---- life cycle --------------------------------------------------------

    def close(self):
        """Refuses new calls, waits for the calls in progress (each ends by its
        deadline), then frees the client. Idempotent."""
        with self._cv:
            if self._t is None:
                return
            self._closing = True
            while self._active > 0:
                self._cv.wait()
            t, self._t = self._t, None
        self._lib.esc_threaded_free(t)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        if getattr(self, "_t", None) is not None and getattr(self, "_active", 1) == 0:
            self._lib.esc_threaded_free(self._t)
            self._t = None

    # ---- plumbing ----------------------------------------------------------

    def _run(self, fn, *args):
        """fn(client, *args) with the GIL released, counted so that close()
        never frees the client under a call."""
        with self._cv:
            if self._closing:
                raise Closed(CODES["CLOSED"], "the client was closed")
            self._active += 1
        try:
            return fn(self._t, *args)
        finally:
            with self._cv:
                self._active -= 1
                if self._active == 0:
                    self._cv.notify_all()

    def _hold_call(self, fn, hold, extra, deadline_ms):
        hold_id = _calls.hold_id_of(hold)
        dl = _calls.u32(deadline_ms, "deadline_ms")
        out = _native.HoldStruct()
        args = (hold_id, dl) if extra is None else (hold_id, extra, dl)
        rc = self._run(fn, *args, ctypes.byref(out))
        return _calls.hold_result(self._lib, rc, out)

# SPDX-License-Identifier: Apache-2.0
"""_calls.py - what Client and AsyncClient share: turning Python arguments
into libescrow's structs (ids are ASCII: anything else is InvalidArgument
before a byte is sent), opening the threaded client, and turning answers
into Holds or exceptions.
"""

import ctypes

from . import _native
from .errors import CODES, InvalidArgument, error_for
from .hold import Hold

EINVAL = CODES["INVAL"]
U32_MAX = 2**32 - 1


def encode(value, what, optional=False):
    """value (str) as ASCII bytes for C; None stays None when optional."""
    if value is None and optional:
        return None
    if not isinstance(value, str):
        raise InvalidArgument(EINVAL, f"{what} must be a str, not {type(value).__name__}")
    try:
        return value.encode("ascii")
    except UnicodeEncodeError:
        raise InvalidArgument(EINVAL, f"{what} must be ASCII: {value!r}") from None


def u32(value, what):
    if value is None:
        return 0
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= U32_MAX:
        raise InvalidArgument(EINVAL, f"{what} must be an int in 0..{U32_MAX}: {value!r}")
    return value


def i64(value, what):
    if not isinstance(value, int) or isinstance(value, bool) or not -(2**63) <= value < 2**63:
        raise InvalidArgument(EINVAL, f"{what} must be a 64-bit int: {value!r}")
    return value


def hold_id_of(hold):
    """A Hold's id, or an int id as is."""
    if isinstance(hold, Hold):
        return hold.hold_id
    if isinstance(hold, int) and not isinstance(hold, bool) and 0 < hold < 2**64:
        return hold
    raise InvalidArgument(EINVAL, f"a Hold or a hold id (int) was expected: {hold!r}")


def open_threaded(lib, *, coordinator, routes, tenant, credential, deadline_ms, endpoint,
                  resend_ms):
    """A new esc_threaded client (a c_void_p), or the exception of its code."""
    opts = _native.OptionsStruct(
        endpoint=encode(endpoint, "endpoint", optional=True),
        coordinator=encode(coordinator, "coordinator", optional=True),
        routes=encode(routes, "routes", optional=True),
        tenant_id=encode(tenant, "tenant"),
        deadline_ms=u32(deadline_ms, "deadline_ms"),
        resend_ms=u32(resend_ms, "resend_ms"),
        credential=encode(credential, "credential", optional=True),
    )
    handle = ctypes.c_void_p()
    rc = lib.esc_threaded_new(ctypes.byref(opts), ctypes.byref(handle))
    if rc != 0:
        raise error_for(rc, message_of(lib, rc))
    return handle


def reserve_req(item, buyer, key, qty, ttl_ms):
    return _native.ReserveReqStruct(
        item_id=encode(item, "item"),
        buyer_id=encode(buyer, "buyer"),
        qty=i64(qty, "qty"),
        idempotency_key=encode(key, "key"),
        ttl_ms=u32(ttl_ms, "ttl_ms"),
    )


def cart_lines(lines):
    """lines: a mapping item -> qty, or (item, qty) pairs; returns the C array
    and its length."""
    pairs = list(lines.items()) if hasattr(lines, "items") else list(lines)
    arr = (_native.CartLineStruct * max(len(pairs), 1))()
    for i, pair in enumerate(pairs):
        try:
            item, qty = pair
        except (TypeError, ValueError):
            raise InvalidArgument(EINVAL, f"cart line {i} is not (item, qty): {pair!r}") from None
        arr[i].item_id = encode(item, f"cart line {i}'s item")
        arr[i].qty = i64(qty, f"cart line {i}'s qty")
    return arr, len(pairs)


def message_of(lib, rc):
    return lib.esc_strerror(rc).decode()


def shown_hold(s):
    """The Hold in s if the call wrote one (hold ids are never 0)."""
    return Hold._from_struct(s) if s.hold_id != 0 else None


def hold_result(lib, rc, s):
    """The Hold of a successful call, or raises the answer's exception
    (carrying the hold's final state when the answer showed it)."""
    if rc == 0:
        return Hold._from_struct(s)
    raise error_for(rc, message_of(lib, rc), shown_hold(s))


def cart_result(lib, rc, holds, nholds, failed_line, nlines):
    if rc == 0:
        return [Hold._from_struct(holds[i]) for i in range(nholds)]
    line = failed_line if failed_line < nlines else None
    raise error_for(rc, message_of(lib, rc), line=line)


def stats_dict(s):
    return {name: getattr(s, name) for name, _ in _native.StatsStruct._fields_}

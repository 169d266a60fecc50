# SPDX-License-Identifier: Apache-2.0
"""_native.py - libescrow through ctypes: finding and loading the library,
its structs, and the prototypes of the calls the binding makes.

Everything here mirrors client/libescrow/include/escrow.h (esc_hold,
esc_options, esc_reserve_req, esc_cart_line, esc_stats, esc_completion and
the esc_threaded_* calls); the binding drives libescrow's threaded client,
whose blocking calls may come from any number of threads and whose queued
calls complete through a file descriptor. ctypes releases the GIL for the
duration of every call, so threads waiting on escrow do not hold it.

The library is looked up in this order: the path given to load(), the
ESCROW_LIBRARY environment variable, then the system's search path for
libescrow.so.0 (an installed library: cmake --install, ldconfig).
"""

import ctypes
import os
import threading

ID_MAX = 128  # ESC_ID_MAX: longest item, buyer or key, in bytes
SONAME = "libescrow.so.0"
# The library's major version this binding speaks (the SONAME's number).
ABI_MAJOR = 0


class HoldStruct(ctypes.Structure):
    _fields_ = [
        ("hold_id", ctypes.c_uint64),
        ("segment_id", ctypes.c_uint64),
        ("item_id", ctypes.c_char * (ID_MAX + 1)),
        ("buyer_id", ctypes.c_char * (ID_MAX + 1)),
        ("qty", ctypes.c_int64),
        ("qty_sold", ctypes.c_int64),
        ("state", ctypes.c_int),
        ("expires_at_ms", ctypes.c_int64),
        ("extended", ctypes.c_bool),
    ]


LOG_FN = ctypes.CFUNCTYPE(None, ctypes.c_int, ctypes.c_char_p, ctypes.c_void_p)


class OptionsStruct(ctypes.Structure):
    _fields_ = [
        ("endpoint", ctypes.c_char_p),
        ("coordinator", ctypes.c_char_p),
        ("routes", ctypes.c_char_p),
        ("tenant_id", ctypes.c_char_p),
        ("deadline_ms", ctypes.c_uint32),
        ("resend_ms", ctypes.c_uint32),
        ("log_fn", LOG_FN),
        ("log_arg", ctypes.c_void_p),
        ("credential", ctypes.c_char_p),
    ]


class ReserveReqStruct(ctypes.Structure):
    _fields_ = [
        ("item_id", ctypes.c_char_p),
        ("buyer_id", ctypes.c_char_p),
        ("qty", ctypes.c_int64),
        ("idempotency_key", ctypes.c_char_p),
        ("ttl_ms", ctypes.c_uint32),
    ]


class CartLineStruct(ctypes.Structure):
    _fields_ = [("item_id", ctypes.c_char_p), ("qty", ctypes.c_int64)]


class StatsStruct(ctypes.Structure):
    _fields_ = [
        ("frames_sent", ctypes.c_uint64),
        ("sold_out_cached", ctypes.c_uint64),
        ("route_fetches", ctypes.c_uint64),
        ("route_pushes", ctypes.c_uint64),
        ("retargets", ctypes.c_uint64),
        ("resolves", ctypes.c_uint64),
    ]


class CompletionStruct(ctypes.Structure):
    _fields_ = [
        ("tag", ctypes.c_uint64),
        ("status", ctypes.c_int),
        ("has_hold", ctypes.c_bool),
        ("hold", HoldStruct),
        ("nholds", ctypes.c_size_t),
        ("failed_line", ctypes.c_size_t),
    ]


class LibraryNotFound(ImportError):
    """libescrow.so.0 could not be loaded (or is not one this binding speaks)."""


_P = ctypes.POINTER
_VOIDP = ctypes.c_void_p
_U32 = ctypes.c_uint32
_U64 = ctypes.c_uint64
_I64 = ctypes.c_int64
_INT = ctypes.c_int
_SIZE = ctypes.c_size_t
_STR = ctypes.c_char_p

# name: (restype, argtypes)
_PROTOTYPES = {
    "esc_version": (_STR, []),
    "esc_err_name": (_STR, [_INT]),
    "esc_strerror": (_STR, [_INT]),
    "esc_threaded_new": (_INT, [_P(OptionsStruct), _P(_VOIDP)]),
    "esc_threaded_free": (None, [_VOIDP]),
    "esc_threaded_stats": (_INT, [_VOIDP, _P(StatsStruct)]),
    "esc_threaded_reserve": (_INT, [_VOIDP, _P(ReserveReqStruct), _U32, _P(HoldStruct)]),
    "esc_threaded_confirm": (_INT, [_VOIDP, _U64, _I64, _U32, _P(HoldStruct)]),
    "esc_threaded_release": (_INT, [_VOIDP, _U64, _U32, _P(HoldStruct)]),
    "esc_threaded_extend": (_INT, [_VOIDP, _U64, _U32, _U32, _P(HoldStruct)]),
    "esc_threaded_get": (_INT, [_VOIDP, _U64, _U32, _P(HoldStruct)]),
    "esc_threaded_reserve_cart": (
        _INT,
        [_VOIDP, _STR, _P(CartLineStruct), _SIZE, _STR, _U32, _U32, _P(HoldStruct),
         _P(_SIZE), _P(_SIZE)],
    ),
    "esc_threaded_submit_reserve": (_INT, [_VOIDP, _P(ReserveReqStruct), _U32, _U64]),
    "esc_threaded_submit_confirm": (_INT, [_VOIDP, _U64, _I64, _U32, _U64]),
    "esc_threaded_submit_release": (_INT, [_VOIDP, _U64, _U32, _U64]),
    "esc_threaded_submit_extend": (_INT, [_VOIDP, _U64, _U32, _U32, _U64]),
    "esc_threaded_submit_get": (_INT, [_VOIDP, _U64, _U32, _U64]),
    "esc_threaded_submit_reserve_cart": (
        _INT,
        [_VOIDP, _STR, _P(CartLineStruct), _SIZE, _STR, _U32, _U32, _P(HoldStruct), _U64],
    ),
    "esc_threaded_fd": (_INT, [_VOIDP]),
    "esc_threaded_poll": (_SIZE, [_VOIDP, _P(CompletionStruct), _SIZE]),
}

_loaded = {}
_lock = threading.Lock()


def _open(path):
    lib = ctypes.CDLL(path)  # CDLL: every call releases the GIL
    missing = [name for name in _PROTOTYPES if not hasattr(lib, name)]
    if missing:
        raise LibraryNotFound(
            f"{path} is not a libescrow this binding can use (it lacks {', '.join(missing)})"
        )
    for name, (restype, argtypes) in _PROTOTYPES.items():
        fn = getattr(lib, name)
        fn.restype = restype
        fn.argtypes = argtypes
    version = lib.esc_version().decode()
    if int(version.split(".")[0]) != ABI_MAJOR:
        raise LibraryNotFound(f"{path} is libescrow {version}; this binding needs {ABI_MAJOR}.x")
    return lib


def load(path=None):
    """The loaded libescrow (loaded once per path). path: a file to load, else
    $ESCROW_LIBRARY, else libescrow.so.0 from the system's library path.
    Raises LibraryNotFound, saying what was tried."""
    where = path or os.environ.get("ESCROW_LIBRARY") or SONAME
    with _lock:
        lib = _loaded.get(where)
        if lib is None:
            try:
                lib = _open(where)
            except OSError as e:
                raise LibraryNotFound(
                    f"cannot load libescrow ({where}): {e}. Install it (cmake --install, "
                    f"then ldconfig) or name it: ESCROW_LIBRARY=/path/to/libescrow.so.0"
                ) from None
            _loaded[where] = lib
        return lib

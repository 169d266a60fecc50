# SPDX-License-Identifier: Apache-2.0
"""escrow - checkout holds that never oversell: the Python client of escrow.

    import escrow
    client = escrow.Client(coordinator="tcp://10.0.0.5:7000", routes="tcp://10.0.0.5:7001",
                           tenant="shop-1", credential=os.environ.get("ESCROW_KEY"))
    try:
        hold = client.reserve("tee", buyer="user-17", key="order-2026-0001")
    except escrow.SoldOut:
        ...  # "sold out"
    except escrow.TryLater:
        ...  # "everything is in someone's cart: try again in a minute"
    client.confirm(hold)  # after the payment; client.release(hold) if it failed

Client is blocking and thread-safe (one per process); AsyncClient has the
same calls as coroutines. Both wrap libescrow (libescrow.so.0) through
ctypes; docs/python.md in the escrow tree has the whole story.
"""

from . import _native
from .aio import AsyncClient
from .client import Client
from .errors import (
    CODES,
    AlreadyExtended,
    AuthError,
    CartEnded,
    ClientError,
    Closed,
    EscrowError,
    Expired,
    IdempotencyMismatch,
    InvalidArgument,
    LimitExceeded,
    NotFound,
    NotHeld,
    Paused,
    Retryable,
    SoldOut,
    TimedOut,
    TryLater,
    Unavailable,
    UnknownItem,
)
from .hold import Hold, HoldState
from ._native import LibraryNotFound

__version__ = "0.1.0"


def library_version(library=None):
    """The version of the libescrow that is loaded ("0.1.0")."""
    return _native.load(library).esc_version().decode()


__all__ = [
    "AsyncClient", "Client", "Hold", "HoldState", "LibraryNotFound", "library_version",
    "CODES", "EscrowError", "SoldOut", "TryLater", "Paused", "LimitExceeded", "Expired",
    "NotHeld", "CartEnded", "AlreadyExtended", "NotFound", "UnknownItem", "IdempotencyMismatch",
    "Retryable", "TimedOut", "Unavailable", "AuthError", "InvalidArgument", "Closed",
    "ClientError",
]

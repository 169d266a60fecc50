# SPDX-License-Identifier: Apache-2.0
"""errors.py - one exception per answer family, each carrying the code.

Every libescrow call answers 0 or a negative code (escrow_errors.h, the same
numbers forever). The binding raises the exception of the code's family;
every exception has .code (the number), .name ("SOLD_OUT"), .hold (the
hold's final state when the answer carries it, e.g. NotHeld after a second
confirm) and .line (for reserve_cart: the index of the failing line).

    SoldOut              nothing left, nothing held could come back: "sold out"
    TryLater             every remaining unit is held by someone: "try again soon"
    Paused               the operator paused the item: "not on sale right now"
    LimitExceeded        ORDER_LIMIT / BUYER_LIMIT of the item
    Expired              the hold lapsed before it was used
    NotHeld              the hold already ended (its .hold shows how)
    CartEnded            a cart retried with a key whose hold was sold or released:
                         start again with a new cart key
    AlreadyExtended      a hold is extended once
    NotFound             no such hold
    UnknownItem          unknown item or tenant
    IdempotencyMismatch  the key was used with other parameters: a bug in the caller
    Retryable            retry with the SAME key:
      TimedOut             outcome unknown (it may have happened)
      Unavailable          nothing was done (storage down, overloaded, moving)
    AuthError            credential missing, unknown, revoked or of another tenant
    InvalidArgument      refused before sending (also a ValueError)
    Closed               the client was closed
    ClientError          anything else (transport, protocol, internal)
"""

# escrow_errors.h, by name; a unit test checks it against the library.
CODES = {
    "SOLD_OUT": -1,
    "TRY_LATER": -2,
    "SEGMENT_EMPTY": -3,
    "EXPIRED": -4,
    "NOT_HELD": -5,
    "IDEMPOTENCY_MISMATCH": -6,
    "BUYER_LIMIT": -7,
    "ORDER_LIMIT": -8,
    "ALREADY_EXTENDED": -9,
    "NOT_FOUND": -10,
    "UNKNOWN_TENANT": -11,
    "UNKNOWN_ITEM": -12,
    "NOT_OWNER": -13,
    "FENCED": -14,
    "PAUSED": -15,
    "INVAL": -16,
    "TOOBIG": -17,
    "PROTO": -18,
    "UNAVAILABLE": -19,
    "TIMEDOUT": -20,
    "NOMEM": -21,
    "IO": -22,
    "INTERNAL": -23,
    "BUSY": -24,
    "CLOSED": -25,
    "DB": -26,
    "CONFIG": -27,
    "AUTH": -28,
    "CONFLICT": -29,
    "CART_ENDED": -30,
}
NAMES = {code: name for name, code in CODES.items()}


class EscrowError(Exception):
    """An answer other than success. code: the negative ESC_E* number; name:
    its name ("SOLD_OUT"); hold: the hold's state when the answer showed it,
    else None; line: for reserve_cart, the index of the failing line."""

    def __init__(self, code, message=None, hold=None, line=None):
        self.code = code
        self.name = NAMES.get(code, "UNKNOWN")
        self.hold = hold
        self.line = line
        super().__init__(f"{self.name}: {message}" if message else self.name)


class SoldOut(EscrowError):
    pass


class TryLater(EscrowError):
    pass


class Paused(EscrowError):
    pass


class LimitExceeded(EscrowError):
    pass


class Expired(EscrowError):
    pass


class NotHeld(EscrowError):
    pass


class CartEnded(EscrowError):
    """A hold of this cart key was already sold or released, so the key is
    spent (every hold the attempt got was released): a retry with the same
    key answers the same; start again with a new cart key."""


class AlreadyExtended(EscrowError):
    pass


class NotFound(EscrowError):
    pass


class UnknownItem(EscrowError):
    pass


class IdempotencyMismatch(EscrowError):
    pass


class Retryable(EscrowError):
    """Retry with the same idempotency key: a retry can never take a second unit."""


class TimedOut(Retryable):
    """The deadline passed first: the outcome is unknown, not "nothing happened"."""


class Unavailable(Retryable):
    """Nothing was done (storage unavailable, a node overloaded or handing over)."""


class AuthError(EscrowError):
    pass


class InvalidArgument(EscrowError, ValueError):
    pass


class Closed(EscrowError):
    pass


class ClientError(EscrowError):
    pass


FAMILIES = {
    "SOLD_OUT": SoldOut,
    "TRY_LATER": TryLater,
    "SEGMENT_EMPTY": TryLater,
    "PAUSED": Paused,
    "ORDER_LIMIT": LimitExceeded,
    "BUYER_LIMIT": LimitExceeded,
    "EXPIRED": Expired,
    "NOT_HELD": NotHeld,
    "ALREADY_EXTENDED": AlreadyExtended,
    "NOT_FOUND": NotFound,
    "UNKNOWN_ITEM": UnknownItem,
    "UNKNOWN_TENANT": UnknownItem,
    "IDEMPOTENCY_MISMATCH": IdempotencyMismatch,
    "TIMEDOUT": TimedOut,
    "UNAVAILABLE": Unavailable,
    "BUSY": Unavailable,
    "NOT_OWNER": Unavailable,
    "FENCED": Unavailable,
    "AUTH": AuthError,
    "INVAL": InvalidArgument,
    "TOOBIG": InvalidArgument,
    "CLOSED": Closed,
    "PROTO": ClientError,
    "NOMEM": ClientError,
    "IO": ClientError,
    "INTERNAL": ClientError,
    "DB": ClientError,
    "CONFIG": ClientError,
    "CONFLICT": ClientError,
    "CART_ENDED": CartEnded,
}


def error_for(code, message=None, hold=None, line=None):
    """The exception for a negative code (ClientError for a code unknown here)."""
    cls = FAMILIES.get(NAMES.get(code), ClientError)
    return cls(code, message, hold, line)

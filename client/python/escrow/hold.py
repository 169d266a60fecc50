# SPDX-License-Identifier: Apache-2.0
"""hold.py - Hold, the value every call answers with, and HoldState.

A hold reserves qty units of an item for one checkout until it expires; it
ends exactly once: converted (sold, qty_sold units of it), cancelled
(released) or expired. Hold ids exceed 2**53: they are Python ints, exact.
"""

import datetime
import enum
from dataclasses import dataclass


class HoldState(str, enum.Enum):
    UNKNOWN = "unknown"
    HELD = "held"
    CONVERTED = "converted"  # sold: qty_sold units, the rest returned
    CANCELLED = "cancelled"  # released by a caller
    EXPIRED = "expired"  # lapsed

    def __str__(self):
        return self.value


# esc_hold_state's numbers (escrow.h)
_STATES = {
    0: HoldState.UNKNOWN,
    1: HoldState.HELD,
    2: HoldState.CONVERTED,
    3: HoldState.CANCELLED,
    4: HoldState.EXPIRED,
}


@dataclass(frozen=True)
class Hold:
    hold_id: int  # names the hold and its segment
    segment_id: int
    item: str
    buyer: str
    qty: int
    qty_sold: int
    state: HoldState
    expires_at_ms: int  # unix time, milliseconds
    extended: bool

    @property
    def held(self):
        """True while the units are reserved (not yet sold, released or expired)."""
        return self.state is HoldState.HELD

    @property
    def expires_at(self):
        """expires_at_ms as an aware datetime (UTC)."""
        return datetime.datetime.fromtimestamp(self.expires_at_ms / 1000, datetime.timezone.utc)

    @classmethod
    def _from_struct(cls, s):
        return cls(
            hold_id=s.hold_id,
            segment_id=s.segment_id,
            item=s.item_id.decode("ascii", "replace"),
            buyer=s.buyer_id.decode("ascii", "replace"),
            qty=s.qty,
            qty_sold=s.qty_sold,
            state=_STATES.get(s.state, HoldState.UNKNOWN),
            expires_at_ms=s.expires_at_ms,
            extended=bool(s.extended),
        )

# SPDX-License-Identifier: Apache-2.0
"""checkout_view.py - a checkout in the style of a Django view, on escrow.

POST /checkout/ with {"order": "2026-0001", "item": "tee", "qty": 1}:
reserve the units under the order's key, take the payment, then sell them
(confirm) or give them back (release). Each answer gets its own response:
"sold out" and "try again in a minute" are different buttons.

In a Django project: put the settings below in settings.py and route
path("checkout/", checkout_view.checkout). Without Django this file still
runs (a small JsonResponse stands in), which is how the tests call it.
"""

import json
import os

import escrow

try:
    from django.http import JsonResponse
except ImportError:  # no Django: the same shape, enough for the tests

    class JsonResponse:
        def __init__(self, data, status=200):
            self.status_code = status
            self.content = json.dumps(data).encode()


# settings.py in a Django project
ESCROW = {
    "coordinator": os.environ.get("ESCROW_COORDINATOR", "tcp://127.0.0.1:7000"),
    "routes": os.environ.get("ESCROW_ROUTES"),
    "tenant": os.environ.get("ESCROW_TENANT", "shop-1"),
    "credential": os.environ.get("ESCROW_KEY"),
    "deadline_ms": 2000,
}

_client = None


def client():
    """One escrow.Client per process, shared by every request thread."""
    global _client
    if _client is None:
        _client = escrow.Client(**ESCROW)
    return _client


def take_payment(order, hold):
    """The payment provider goes here; True when the buyer paid."""
    return True


def checkout(request):
    body = json.loads(request.body)
    order, item, qty = body["order"], body["item"], int(body.get("qty", 1))
    buyer = f"user-{request.user.id}"
    try:
        # The key names the order: a retry (double click, timeout) gets the
        # same hold, never a second one.
        hold = client().reserve(item, buyer, key=f"order-{order}", qty=qty)
    except escrow.SoldOut:
        return JsonResponse({"result": "sold_out"}, status=410)
    except escrow.TryLater:
        return JsonResponse({"result": "try_later", "retry_after_s": 30}, status=409)
    except escrow.Paused:
        return JsonResponse({"result": "not_on_sale"}, status=409)
    except escrow.LimitExceeded as e:
        return JsonResponse({"result": "limit", "which": e.name}, status=422)
    except escrow.Retryable:
        # TimedOut (outcome unknown) or Unavailable: the client retries the
        # SAME order, so the same key.
        return JsonResponse({"result": "retry"}, status=503)
    if not hold.held:  # a retry of an order that already ended
        return JsonResponse({"result": str(hold.state), "hold": str(hold.hold_id)})
    try:
        client().extend(hold)  # the payment may be slow: once per hold
    except escrow.AlreadyExtended:
        pass
    if not take_payment(order, hold):
        client().release(hold)
        return JsonResponse({"result": "payment_failed"}, status=402)
    try:
        hold = client().confirm(hold)
    except escrow.Expired:
        return JsonResponse({"result": "expired"}, status=409)  # took too long: start over
    # Hold ids exceed 2**53: send them as strings to JavaScript.
    return JsonResponse({"result": "sold", "hold": str(hold.hold_id), "qty": hold.qty_sold})

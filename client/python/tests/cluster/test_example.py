# SPDX-License-Identifier: Apache-2.0
"""test_example.py - examples/checkout_view.py, the Django-style view,
against the cluster: a sale, the same order again, a declined payment, a
sold-out item."""

import importlib.util
import json
import os
import types

import pytest

import escrow

EXAMPLE = os.path.join(os.path.dirname(__file__), "..", "..", "examples", "checkout_view.py")


@pytest.fixture(scope="module")
def view(cluster):
    spec = importlib.util.spec_from_file_location("checkout_view", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.ESCROW.update(cluster.options())
    yield module
    if module._client is not None:
        module._client.close()


def post(view, user, **body):
    request = types.SimpleNamespace(body=json.dumps(body).encode(), user=types.SimpleNamespace(id=user))
    response = view.checkout(request)
    return response.status_code, json.loads(response.content)


def test_checkout_view(cluster, view, monkeypatch):
    item = cluster.new_item(2, segments=1)
    status, body = post(view, 17, order="o-1", item=item)
    assert (status, body["result"], body["qty"]) == (200, "sold", 1)
    status, again = post(view, 17, order="o-1", item=item)  # a double click
    assert (status, again["result"], again["hold"]) == (200, "converted", body["hold"])
    assert cluster.counters(item) == (1, 0, 1)

    monkeypatch.setattr(view, "take_payment", lambda order, hold: False)
    status, body = post(view, 18, order="o-2", item=item)
    assert (status, body["result"]) == (402, "payment_failed")
    assert cluster.counters(item) == (1, 0, 1)  # the unit came back
    monkeypatch.undo()

    assert post(view, 19, order="o-3", item=item)[1]["result"] == "sold"
    status, body = post(view, 20, order="o-4", item=item)
    assert status in (409, 410) and body["result"] in ("try_later", "sold_out")
    assert isinstance(view.client(), escrow.Client)

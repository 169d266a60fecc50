# SPDX-License-Identifier: Apache-2.0
"""escrow_gateway.py - a client of escrow-gateway (docs/gateway.md) with
Python's standard library only: one keep-alive HTTPS connection per client
object (give each thread its own), JSON bodies, the Idempotency-Key, and
one exception for every error answer.

    from escrow_gateway import Client, EscrowError
    c = Client("https://127.0.0.1:8443", key=open("shop.key").read().strip(),
               cafile="gateway.crt")
    try:
        hold = c.reserve("tee", "buyer-42", 1, idempotency_key="order-42")
        c.confirm(hold["id"])
    except EscrowError as e:
        if e.code == "sold_out": ...
        elif e.retryable: ...        # retry with the SAME idempotency key

reserve() and cart() retry by themselves what the gateway calls retryable
(try_later, busy, unavailable, timed_out ...) with the same key, after the
Retry-After the answer gives, until `retry_for_s` passed; a lost connection
is retried the same way (the key makes it safe). Everything else raises.
"""

import http.client
import json
import ssl
import time
import urllib.parse


class EscrowError(Exception):
    """An error answer: status, code (stable: switch on it), message,
    retryable, and hold / field / line when the answer has them."""

    def __init__(self, status, body, retry_after=None):
        self.status = status
        self.code = body.get("code", "unknown")
        self.message = body.get("message", "")
        self.retryable = bool(body.get("retryable", False))
        self.hold = body.get("hold")
        self.field = body.get("field")
        self.line = body.get("line")
        self.retry_after = retry_after
        super().__init__(f"{status} {self.code}: {self.message}")


class Client:
    def __init__(self, url, key, cafile=None, timeout_s=30.0, retry_for_s=10.0):
        u = urllib.parse.urlsplit(url)
        self.host, self.port = u.hostname, u.port or (443 if u.scheme == "https" else 80)
        self.https = u.scheme == "https"
        self.ctx = ssl.create_default_context(cafile=cafile) if self.https else None
        self.key = key
        self.timeout_s = timeout_s
        self.retry_for_s = retry_for_s
        self.conn = None
        self.replayed = False  # the last answer carried Idempotent-Replayed: true
        self.status = 0        # the last answer's HTTP status
        self.tries = 0         # requests the last reserve / cart / ... sent (retries included)

    def _connect(self):
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=self.timeout_s,
                                               context=self.ctx)
        return http.client.HTTPConnection(self.host, self.port, timeout=self.timeout_s)

    def request(self, method, path, body=None, idempotency_key=None):
        """One request; returns the decoded JSON of a 2xx answer, raises
        EscrowError for an error answer and OSError / http.client errors
        when the connection failed (the outcome is then unknown)."""
        headers = {"Authorization": "Bearer " + self.key, "Accept": "application/json"}
        data = None
        if body is not None:
            data = json.dumps(body).encode()
            headers["Content-Type"] = "application/json"
        if idempotency_key is not None:
            headers["Idempotency-Key"] = idempotency_key
        if self.conn is None:
            self.conn = self._connect()
        try:
            self.conn.request(method, path, body=data, headers=headers)
            resp = self.conn.getresponse()
            raw = resp.read()
        except (OSError, http.client.HTTPException):
            self.close()
            raise
        if resp.getheader("Connection", "").lower() == "close":
            self.close()
        self.status = resp.status
        self.replayed = resp.getheader("Idempotent-Replayed") == "true"
        doc = json.loads(raw) if raw else {}
        if 200 <= resp.status < 300:
            return doc
        ra = resp.getheader("Retry-After")
        raise EscrowError(resp.status, doc, float(ra) if ra else None)

    def _retrying(self, method, path, body, key):
        """request() again with the same key while the answer is retryable
        or the connection failed, for at most retry_for_s."""
        deadline = time.monotonic() + self.retry_for_s
        self.tries = 0
        while True:
            self.tries += 1
            try:
                return self.request(method, path, body, key)
            except EscrowError as e:
                if not e.retryable or time.monotonic() >= deadline:
                    raise
                time.sleep(min(e.retry_after if e.retry_after else 0.05, 1.0))
            except (OSError, http.client.HTTPException):
                if time.monotonic() >= deadline:
                    raise
                time.sleep(0.05)

    def close(self):
        if self.conn is not None:
            self.conn.close()
            self.conn = None

    # ---- the API ---------------------------------------------------------

    def reserve(self, item, buyer, qty, idempotency_key, ttl_ms=None):
        body = {"item": item, "buyer": buyer, "qty": qty}
        if ttl_ms is not None:
            body["ttl_ms"] = ttl_ms
        return self._retrying("POST", "/v1/holds", body, idempotency_key)

    def cart(self, buyer, lines, idempotency_key, ttl_ms=None):
        body = {"buyer": buyer, "lines": [{"item": i, "qty": q} for i, q in lines]}
        if ttl_ms is not None:
            body["ttl_ms"] = ttl_ms
        return self._retrying("POST", "/v1/carts", body, idempotency_key)["holds"]

    def confirm(self, hold_id, qty=None, idempotency_key=None):
        body = {} if qty is None else {"qty": qty}
        key = idempotency_key or f"confirm-{hold_id}"
        return self._retrying("POST", f"/v1/holds/{hold_id}/confirm", body, key)

    def release(self, hold_id, idempotency_key=None):
        key = idempotency_key or f"release-{hold_id}"
        return self._retrying("POST", f"/v1/holds/{hold_id}/release", {}, key)

    def extend(self, hold_id, ttl_ms=None, idempotency_key=None):
        body = {} if ttl_ms is None else {"ttl_ms": ttl_ms}
        key = idempotency_key or f"extend-{hold_id}"
        return self._retrying("POST", f"/v1/holds/{hold_id}/extend", body, key)

    def get(self, hold_id):
        return self.request("GET", f"/v1/holds/{hold_id}")

    def commit_cursor(self, consumer, event_id):
        return self.request("POST", f"/v1/consumers/{urllib.parse.quote(consumer)}/cursor",
                            {"event_id": str(event_id)})

    def events(self, consumer, item=None, last_event_id=None):
        """Yields (event_id, kind, event) from GET /v1/events until the
        stream ends (or the caller stops iterating; close() then)."""
        q = {"consumer": consumer}
        if item:
            q["item"] = item
        headers = {"Authorization": "Bearer " + self.key, "Accept": "text/event-stream"}
        if last_event_id:
            headers["Last-Event-ID"] = str(last_event_id)
        conn = self._connect()
        try:
            conn.request("GET", "/v1/events?" + urllib.parse.urlencode(q), headers=headers)
            resp = conn.getresponse()
            if resp.status != 200:
                raise EscrowError(resp.status, json.loads(resp.read() or b"{}"))
            fields = {}
            while True:
                line = resp.readline()
                if not line:
                    return
                line = line.decode().rstrip("\n")
                if line == "":
                    if "data" in fields:
                        yield fields.get("id"), fields.get("event"), json.loads(fields["data"])
                    fields = {}
                elif not line.startswith(":"):
                    name, _, value = line.partition(":")
                    fields[name] = value[1:] if value.startswith(" ") else value
        finally:
            conn.close()

#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""gateway_slow_body.py - a reserve whose body comes late: it sends the
request's headers (Content-Length announced), writes 'headers sent' to
READY_FILE, waits until GO_FILE exists, then sends the body and reads the
whole answer. Prints the answer's status code and whether the gateway said
Connection: close; exits non-zero if no complete answer came.

    gateway_slow_body.py HOST PORT KEY_FILE CA_FILE ITEM READY_FILE GO_FILE
"""
import os
import socket
import ssl
import sys
import time


def main():
    host, port, key_file, cafile, item, ready_file, go_file = sys.argv[1:8]
    key = open(key_file).read().strip()
    body = ('{"item":"%s","buyer":"slow-body","qty":1}' % item).encode()
    ctx = ssl.create_default_context(cafile=cafile)
    raw = socket.create_connection((host, int(port)), timeout=120)
    conn = ctx.wrap_socket(raw, server_hostname=host)
    head = (
        "POST /v1/holds HTTP/1.1\r\n"
        f"Host: {host}:{port}\r\n"
        f"Authorization: Bearer {key}\r\n"
        "Idempotency-Key: slow-body-1\r\n"
        "Content-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    conn.sendall(head.encode())
    with open(ready_file, "w") as f:
        f.write("headers sent\n")
    deadline = time.monotonic() + 120
    while not os.path.exists(go_file):
        if time.monotonic() > deadline:
            print("no go file after 120 s")
            return 2
        time.sleep(0.05)
    try:
        conn.sendall(body)
        answer = b""
        while True:
            chunk = conn.recv(65536)
            if not chunk:
                break
            answer += chunk
    except (OSError, ssl.SSLError) as e:
        print(f"000 the connection failed: {e}")
        return 1
    head_end = answer.find(b"\r\n\r\n")
    if not answer.startswith(b"HTTP/1.1 ") or head_end < 0:
        print(f"000 no complete answer ({len(answer)} bytes)")
        return 1
    lines = answer[:head_end].decode("latin-1").split("\r\n")
    close = any(h.lower().replace(" ", "") == "connection:close" for h in lines[1:])
    print(lines[0].split(" ")[1], "close" if close else "keep-alive")
    return 0


if __name__ == "__main__":
    sys.exit(main())

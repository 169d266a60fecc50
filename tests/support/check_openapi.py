#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""check_openapi.py - validates every answer escrow-gateway gave in a test run
against its OpenAPI document.

    check_openapi.py OPENAPI_JSON RECORD_JSONL [--min N]

RECORD_JSONL is what the gateway wrote with ESCROW_GATEWAY_RECORD=FILE
(client/gateway/gw_record.h): one line per answer {route, status,
content_type, headers, body} and one per streamed event {route, event}.
For each answer: the route ("POST /v1/holds/{id}/confirm") must be an
operation of the document, the status one of its responses (listed
explicitly: no "default"), the content type one the response declares,
the body valid against that schema (python3-jsonschema, the document's
own $refs), and every Idempotent-Replayed / Retry-After / Location header
one the response declares, with a valid value (and Allow). Each event must be a valid
components/schemas/Event. Answers of no endpoint (route "other": 404
no_route, 405, a malformed id) are checked against the shared error
responses (components/responses/E<status>). Fails on the first few violations, or when
fewer than N lines (default 1) were checked. Prints a summary.
"""
import json
import sys
import warnings

import jsonschema

warnings.simplefilter("ignore", DeprecationWarning)  # RefResolver on newer jsonschema

CHECKED_HEADERS = ("Idempotent-Replayed", "Retry-After", "Location", "Allow")


def main():
    if len(sys.argv) < 3:
        print(__doc__)
        return 2
    doc = json.load(open(sys.argv[1]))
    at_least = int(sys.argv[sys.argv.index("--min") + 1]) if "--min" in sys.argv else 1
    cls = jsonschema.validators.validator_for({"$schema": "https://json-schema.org/draft/2020-12/schema"})
    resolver = jsonschema.RefResolver.from_schema(doc)

    def validate(instance, schema, where):
        errs = sorted(cls(schema, resolver=resolver).iter_errors(instance), key=str)
        return [f"{where}: {e.message} (at {'/'.join(map(str, e.absolute_path)) or 'top'})" for e in errs]

    def resolve(obj):
        while "$ref" in obj:
            _, obj = resolver.resolve(obj["$ref"])
        return obj

    problems, counts = [], {}
    lines = open(sys.argv[2]).read().splitlines()
    for n, line in enumerate(lines, 1):
        rec = json.loads(line)
        method, _, path = rec["route"].partition(" ")
        op = doc["paths"].get(path, {}).get(method.lower())
        where = f"line {n} {rec['route']}"
        if rec["route"] == "other":
            # no endpoint (404 no_route, 405, a malformed id): the shared responses
            op = {"responses": {k[1:]: {"$ref": "#/components/responses/" + k}
                                for k in doc["components"]["responses"]}}
        if op is None:
            problems.append(f"{where}: no such operation in the document")
            continue
        if "event" in rec:
            problems += validate(json.loads(rec["event"]), {"$ref": "#/components/schemas/Event"},
                                 where + " event")
            counts["event"] = counts.get("event", 0) + 1
            continue
        status = str(rec["status"])
        resp = op["responses"].get(status)
        where += f" {status}"
        if resp is None:
            problems.append(f"{where}: the document does not list this status")
            continue
        resp = resolve(resp)
        ctype = rec["content_type"]
        media = resp.get("content", {}).get(ctype)
        if media is None:
            problems.append(f"{where}: content type {ctype} not declared")
            continue
        if rec.get("body") is not None:
            try:
                body = json.loads(rec["body"])
            except ValueError as e:
                problems.append(f"{where}: the body is not JSON: {e}")
                continue
            problems += validate(body, media["schema"], where)
        declared = resp.get("headers", {})
        for h in CHECKED_HEADERS:
            if h in rec["headers"]:
                if h not in declared:
                    problems.append(f"{where}: header {h} not declared")
                else:
                    problems += validate(rec["headers"][h], resolve(declared[h])["schema"], f"{where} {h}")
        counts[f"{rec['route']} {status}"] = counts.get(f"{rec['route']} {status}", 0) + 1
    total = sum(counts.values())
    for k in sorted(counts):
        print(f"  {counts[k]:6d}  {k}")
    if problems:
        for p in problems[:20]:
            print("FAIL:", p)
        print(f"OPENAPI checked={total} violations={len(problems)}")
        return 1
    if total < at_least:
        print(f"FAIL: only {total} answers recorded, expected at least {at_least}")
        return 1
    print(f"OPENAPI checked={total} violations=0")
    return 0


if __name__ == "__main__":
    sys.exit(main())

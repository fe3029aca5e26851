#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""A validator of OTLP/JSON ExportTraceServiceRequest bodies.

Written from the OTLP specification (docs/specification.md, "JSON Protobuf
Encoding") and opentelemetry/proto/trace/v1/trace.proto, not from a generic
protobuf JSON parser: OTLP/JSON departs from the proto3 JSON mapping
(traceId/spanId are hex, not base64; enums are integers only; keys are
lowerCamelCase). 64-bit integers (fixed64 times, int64 intValue) must be
decimal strings here, as the proto3 mapping writes them; a receiver accepts
numbers too, but our encoder must not rely on it.

validate(payload, external_parents=()) returns a list of errors ([] when
valid). A child's parentSpanId must name a span of the same trace in the
same payload, or be one of external_parents (the span id an incoming
traceparent named). Usable as a script: otlp_validate.py [--parent=SPANID]...
FILE... (one JSON body per line; --parent names an external parent).
"""

import json
import re
import sys

HEX = re.compile(r"^[0-9a-fA-F]*$")
DIGITS = re.compile(r"^[0-9]+$")
INT64 = re.compile(r"^-?[0-9]+$")

# the fields of each message, by their OTLP/JSON (lowerCamelCase) names
FIELDS = {
    "ExportTraceServiceRequest": {"resourceSpans"},
    "ResourceSpans": {"resource", "scopeSpans", "schemaUrl"},
    "Resource": {"attributes", "droppedAttributesCount", "entityRefs"},
    "ScopeSpans": {"scope", "spans", "schemaUrl"},
    "InstrumentationScope": {"name", "version", "attributes", "droppedAttributesCount"},
    "Span": {"traceId", "spanId", "traceState", "parentSpanId", "flags", "name", "kind",
             "startTimeUnixNano", "endTimeUnixNano", "attributes", "droppedAttributesCount",
             "events", "droppedEventsCount", "links", "droppedLinksCount", "status"},
    "Status": {"message", "code"},
    "KeyValue": {"key", "value"},
    "AnyValue": {"stringValue", "boolValue", "intValue", "doubleValue", "arrayValue",
                 "kvlistValue", "bytesValue"},
    "ArrayValue": {"values"},
    "KeyValueList": {"values"},
}
SPAN_REQUIRED = ("traceId", "spanId", "name", "kind", "startTimeUnixNano", "endTimeUnixNano")
SPAN_KINDS = range(0, 6)  # UNSPECIFIED .. CONSUMER
STATUS_CODES = range(0, 3)  # UNSET, OK, ERROR
UINT32_MAX = (1 << 32) - 1


class Checker:
    def __init__(self):
        self.errors = []

    def err(self, where, what):
        self.errors.append("%s: %s" % (where, what))

    def obj(self, where, v, msg):
        if not isinstance(v, dict):
            self.err(where, "%s is not an object" % msg)
            return False
        for k in v:
            if k not in FIELDS[msg]:
                # snake_case keys are the classic proto-name mistake
                self.err(where, "unknown %s field %r" % (msg, k))
        return True

    def arr(self, where, v):
        if not isinstance(v, list):
            self.err(where, "not an array")
            return []
        return v

    def hex_id(self, where, v, n, may_be_empty=False):
        if not isinstance(v, str):
            self.err(where, "id is not a string (%r)" % (v,))
            return False
        if may_be_empty and v == "":
            return True
        if len(v) != n or not HEX.match(v):
            self.err(where, "id %r is not %d hex digits (base64 is proto3 JSON, not OTLP)"
                     % (v, n))
            return False
        if set(v) == {"0"}:
            self.err(where, "all-zero id %r is invalid" % v)
            return False
        return True

    def fixed64(self, where, v):
        if not isinstance(v, str) or not DIGITS.match(v) or int(v) >= 1 << 64:
            self.err(where, "%r is not a 64-bit unsigned integer as a decimal string" % (v,))
            return None
        return int(v)

    def uint32(self, where, v):
        if isinstance(v, bool) or not isinstance(v, int) or not 0 <= v <= UINT32_MAX:
            self.err(where, "%r is not a uint32 number" % (v,))

    def enum(self, where, v, allowed):
        # integers only: OTLP/JSON forbids the enum's name
        if isinstance(v, bool) or not isinstance(v, int):
            self.err(where, "enum %r is not an integer" % (v,))
        elif v not in allowed:
            self.err(where, "enum value %d out of range" % v)

    def any_value(self, where, v):
        if not self.obj(where, v, "AnyValue"):
            return
        if len(v) != 1:
            self.err(where, "AnyValue has %d values, want exactly one" % len(v))
            return
        (k, x), = v.items()
        if k == "stringValue" and not isinstance(x, str):
            self.err(where, "stringValue not a string")
        elif k == "boolValue" and not isinstance(x, bool):
            self.err(where, "boolValue not a boolean")
        elif k == "intValue":
            if not isinstance(x, str) or not INT64.match(x) or not -(1 << 63) <= int(x) < 1 << 63:
                self.err(where, "intValue %r is not an int64 decimal string" % (x,))
        elif k == "doubleValue" and (isinstance(x, bool) or not isinstance(x, (int, float))):
            self.err(where, "doubleValue %r not a number" % (x,))
        elif k == "arrayValue":
            if self.obj(where, x, "ArrayValue"):
                for i, e in enumerate(self.arr(where + ".values", x.get("values", []))):
                    self.any_value("%s.values[%d]" % (where, i), e)
        elif k == "kvlistValue":
            if self.obj(where, x, "KeyValueList"):
                self.attributes(where + ".values", x.get("values", []))
        elif k == "bytesValue" and not isinstance(x, str):
            self.err(where, "bytesValue not a base64 string")

    def attributes(self, where, v):
        keys = set()
        for i, kv in enumerate(self.arr(where, v)):
            w = "%s[%d]" % (where, i)
            if not self.obj(w, kv, "KeyValue"):
                continue
            k = kv.get("key")
            if not isinstance(k, str) or not k:
                self.err(w, "key missing or empty")
            elif k in keys:
                self.err(w, "duplicate attribute key %r" % k)
            keys.add(k)
            if "value" not in kv:
                self.err(w, "value missing")
            else:
                self.any_value(w + ".value", kv["value"])
        return keys

    def span(self, where, s):
        if not self.obj(where, s, "Span"):
            return None
        for k in SPAN_REQUIRED:
            if k not in s:
                self.err(where, "required field %s missing" % k)
        self.hex_id(where + ".traceId", s.get("traceId"), 32)
        self.hex_id(where + ".spanId", s.get("spanId"), 16)
        if "parentSpanId" in s:
            self.hex_id(where + ".parentSpanId", s["parentSpanId"], 16, may_be_empty=True)
        if not isinstance(s.get("name"), str) or not s.get("name"):
            self.err(where, "name missing or empty")
        if "kind" in s:
            self.enum(where + ".kind", s["kind"], SPAN_KINDS)
        t0 = self.fixed64(where + ".startTimeUnixNano", s.get("startTimeUnixNano"))
        t1 = self.fixed64(where + ".endTimeUnixNano", s.get("endTimeUnixNano"))
        if t0 is not None and t1 is not None and t1 < t0:
            self.err(where, "ends before it starts")
        if "flags" in s:
            self.uint32(where + ".flags", s["flags"])
        for k in ("droppedAttributesCount", "droppedEventsCount", "droppedLinksCount"):
            if k in s:
                self.uint32(where + "." + k, s[k])
        if "attributes" in s:
            self.attributes(where + ".attributes", s["attributes"])
        if "status" in s and self.obj(where + ".status", s["status"], "Status"):
            if "code" in s["status"]:
                self.enum(where + ".status.code", s["status"]["code"], STATUS_CODES)
            if "message" in s["status"] and not isinstance(s["status"]["message"], str):
                self.err(where + ".status.message", "not a string")
        return s


def validate(payload, external_parents=()):
    c = Checker()
    spans = []
    if not c.obj("$", payload, "ExportTraceServiceRequest"):
        return c.errors
    for i, rs in enumerate(c.arr("$.resourceSpans", payload.get("resourceSpans"))):
        w = "$.resourceSpans[%d]" % i
        if not c.obj(w, rs, "ResourceSpans"):
            continue
        res = rs.get("resource")
        if res is None:
            c.err(w, "resource missing")
        elif c.obj(w + ".resource", res, "Resource"):
            keys = c.attributes(w + ".resource.attributes", res.get("attributes", []))
            if "service.name" not in keys:
                c.err(w + ".resource", "service.name missing (required of an SDK's resource)")
        for j, ss in enumerate(c.arr(w + ".scopeSpans", rs.get("scopeSpans"))):
            w2 = "%s.scopeSpans[%d]" % (w, j)
            if not c.obj(w2, ss, "ScopeSpans"):
                continue
            if "scope" in ss and c.obj(w2 + ".scope", ss["scope"], "InstrumentationScope"):
                if not isinstance(ss["scope"].get("name", ""), str):
                    c.err(w2 + ".scope.name", "not a string")
            for k, s in enumerate(c.arr(w2 + ".spans", ss.get("spans"))):
                if c.span("%s.spans[%d]" % (w2, k), s) is not None:
                    spans.append(("%s.spans[%d]" % (w2, k), s))
    # parent links: within the same trace of this payload, or the caller's span
    ids = {}
    for w, s in spans:
        key = (s.get("traceId", "").lower(), s.get("spanId", "").lower())
        if key in ids:
            c.err(w, "span id %s repeated in trace %s" % (key[1], key[0]))
        ids[key] = w
    ext = {p.lower() for p in external_parents}
    for w, s in spans:
        p = s.get("parentSpanId", "")
        if not p:
            continue
        if (s.get("traceId", "").lower(), p.lower()) not in ids and p.lower() not in ext:
            c.err(w, "parentSpanId %s names no span of trace %s" % (p, s.get("traceId")))
    return c.errors


def all_spans(payload):
    for rs in payload.get("resourceSpans", []):
        for ss in rs.get("scopeSpans", []):
            for s in ss.get("spans", []):
                yield rs, s


def attr(attrs, key):
    """An attribute's value (its one AnyValue member), or None."""
    for kv in attrs or []:
        if kv.get("key") == key:
            return next(iter(kv["value"].values()))
    return None


def _self_test():
    good = {"resourceSpans": [{"resource": {"attributes": [
        {"key": "service.name", "value": {"stringValue": "s"}}]},
        "scopeSpans": [{"scope": {"name": "x"}, "spans": [
            {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b7",
             "name": "r", "kind": 2, "startTimeUnixNano": "1", "endTimeUnixNano": "2",
             "attributes": [{"key": "n", "value": {"intValue": "5"}}]},
            {"traceId": "4bf92f3577b34da6a3ce929d0e0e4736", "spanId": "00f067aa0ba902b8",
             "parentSpanId": "00f067aa0ba902b7", "name": "c", "kind": 1,
             "startTimeUnixNano": "1", "endTimeUnixNano": "2"}]}]}]}
    assert validate(good) == [], validate(good)
    bad = json.loads(json.dumps(good))
    sp = bad["resourceSpans"][0]["scopeSpans"][0]["spans"]
    sp[0]["kind"] = "SPAN_KIND_SERVER"
    sp[0]["startTimeUnixNano"] = 1
    sp[0]["attributes"][0]["value"]["intValue"] = 5
    sp[1]["traceId"] = "S/kvNXezTaajzpKdDg5HNg=="  # base64: proto3 JSON
    sp[1]["parentSpanId"] = "00f067aa0ba902b9"
    sp[1]["trace_id"] = "x"
    errs = validate(bad)
    for want in ("enum", "decimal string", "intValue", "hex digits", "names no span",
                 "unknown Span field"):
        assert any(want in e for e in errs), (want, errs)


if __name__ == "__main__":
    _self_test()
    bad = 0
    parents = [a[len("--parent="):] for a in sys.argv[1:] if a.startswith("--parent=")]
    paths = [a for a in sys.argv[1:] if not a.startswith("--parent=")]
    for path in paths:
        with open(path) as f:
            lines = [l for l in f if l.strip()]
        if not lines:
            print("%s: no payload" % path)
            bad += 1
        for n, line in enumerate(lines, 1):
            for e in validate(json.loads(line), parents):
                print("%s:%d: %s" % (path, n, e))
                bad += 1
    sys.exit(1 if bad else 0)

#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""configs/grafana/reqtrace.json against docs/metrics.md (no root).

Every metric a PromQL expression of the dashboard names must be one that
docs/metrics.md documents (a "### `name` (type)" heading; a histogram also
as name_bucket/_sum/_count), and every label it groups or filters by must be
in the doc's label table (or Prometheus' own: le, instance, job). So a
renamed metric or label breaks this test, not the dashboard in silence.
Also checks the dashboard's shape: the ${DS_PROMETHEUS} data source on every
panel and target, unique panel ids, and the panels the issue asks for.
"""
import json
import os
import re
import sys

SRC = os.environ.get("RT_SOURCE_DIR") or os.path.join(os.path.dirname(__file__), "..", "..")
DASH = os.path.join(SRC, "configs", "grafana", "reqtrace.json")
DOC = os.path.join(SRC, "docs", "metrics.md")

PROMQL_WORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
                "unless", "offset", "bool", "inf", "nan"}
PROM_LABELS = {"le", "instance", "job", "__name__"}

failures = []


def fail(msg):
    failures.append(msg)


def documented():
    """(metric name -> type, label names) from docs/metrics.md."""
    metrics, labels = {}, set(PROM_LABELS)
    text = open(DOC, encoding="utf-8").read()
    for name, kind in re.findall(r"^### `([a-z_:][a-z0-9_:]*)` \((\w+)\)", text, re.M):
        metrics[name] = kind
    sect = text.split("## Labels, and their bounds", 1)[1].split("\n## ", 1)[0]
    for cell in re.findall(r"^\| ([^|]+) \|", sect, re.M):
        labels.update(re.findall(r"`([a-z_][a-z0-9_]*)`", cell))
    if len(metrics) < 5 or len(labels) < 8:
        sys.exit("docs/metrics.md: found %d metrics, %d labels: has its layout changed?" %
                 (len(metrics), len(labels)))
    return metrics, labels


def strip_strings(expr):
    return re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)


def names_in(expr):
    """(metric names, label names) used by one PromQL expression."""
    e = strip_strings(expr)
    e = re.sub(r"\$\{?\w+\}?", "", e)  # Grafana variables ($__rate_interval, ${x})
    e = re.sub(r"\[[^\]]*\]", "", e)  # range and subquery durations
    labels = set()
    for body in re.findall(r"\{([^}]*)\}", e):  # label matchers
        labels.update(re.findall(r"([a-zA-Z_]\w*)\s*(?:=~|!~|!=|=)", body))
    e = re.sub(r"\{[^}]*\}", " ", e)
    for kw, body in re.findall(r"\b(by|without|on|ignoring|group_left|group_right)\s*\(([^)]*)\)", e):
        labels.update(re.findall(r"[a-zA-Z_]\w*", body))
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\b[a-zA-Z_]\w*\s*\(", "(", e)  # function names
    e = re.sub(r"\b\d+(\.\d+)?([eE][-+]?\d+)?\b", " ", e)  # numbers
    metrics = {w for w in re.findall(r"[a-zA-Z_:][\w:]*", e) if w.lower() not in PROMQL_WORDS}
    return metrics, labels


def check_metric(where, name, metrics):
    if name in metrics:
        return
    for suffix in ("_bucket", "_sum", "_count"):
        base = name[: -len(suffix)] if name.endswith(suffix) else None
        if base and metrics.get(base) == "histogram":
            return
    fail("%s: metric %s is not in docs/metrics.md" % (where, name))


def main():
    metrics, labels = documented()
    dash = json.load(open(DASH, encoding="utf-8"))
    if not 36 <= dash.get("schemaVersion", 0) <= 41:
        fail("schemaVersion %r: expected Grafana 10/11's (36..41)" % dash.get("schemaVersion"))
    if not any(i.get("name") == "DS_PROMETHEUS" and i.get("pluginId") == "prometheus"
               for i in dash.get("__inputs", [])):
        fail("__inputs: no DS_PROMETHEUS prometheus input")
    exprs = []
    for v in dash["templating"]["list"]:
        q = v.get("query")
        q = q.get("query") if isinstance(q, dict) else q
        if v.get("type") == "query":
            m = re.match(r"label_values\((.*),\s*(\w+)\)$", q)
            if not m:
                fail("variable %s: query %r is not label_values(SELECTOR, LABEL)" % (v["name"], q))
                continue
            exprs.append(("variable %s" % v["name"], m.group(1)))
            if m.group(2) not in labels:
                fail("variable %s: label %s is not in docs/metrics.md" % (v["name"], m.group(2)))
    ids = set()
    titles = []
    n_targets = 0
    for p in dash["panels"]:
        if p["id"] in ids:
            fail("panel id %d twice" % p["id"])
        ids.add(p["id"])
        if p["type"] == "row":
            continue
        titles.append(p["title"])
        if p.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
            fail("panel %r: data source is not ${DS_PROMETHEUS}" % p["title"])
        if not p.get("targets"):
            fail("panel %r: no queries" % p["title"])
        for t in p.get("targets", []):
            n_targets += 1
            if t.get("datasource", {}).get("uid") != "${DS_PROMETHEUS}":
                fail("panel %r %s: data source is not ${DS_PROMETHEUS}" % (p["title"], t["refId"]))
            exprs.append(("panel %r %s" % (p["title"], t["refId"]), t["expr"]))
    used = set()
    for where, expr in exprs:
        if expr.count("(") != expr.count(")") or expr.count("{") != expr.count("}"):
            fail("%s: unbalanced brackets: %s" % (where, expr))
        ms, ls = names_in(expr)
        if not ms:
            fail("%s: names no metric: %s" % (where, expr))
        for m in ms:
            check_metric(where, m, metrics)
            used.add(re.sub(r"_(bucket|sum|count)$", "", m) if m not in metrics else m)
        for label in ls - labels:
            fail("%s: label %s is not in docs/metrics.md" % (where, label))
    # what the dashboard is for (issue 12, item 9)
    for want in ("reqtrace_phase_seconds", "gen_ai_server_time_to_first_token_seconds",
                 "gen_ai_server_time_per_output_token_seconds",
                 "gen_ai_server_request_duration_seconds", "reqtrace_gpu_busy_seconds_total",
                 "reqtrace_dropped_total", "reqtrace_events_total"):
        if want not in used:
            fail("no panel uses %s" % want)
    for q in ("0.5", "0.9", "0.99"):
        if not any(("histogram_quantile(%s," % q) in e and "time_to_first_token" in e
                   for _, e in exprs):
            fail("no TTFT quantile %s" % q)
    for f in failures:
        print("FAIL:", f)
    if failures:
        return 1
    print("ok: %d panels, %d queries, %d metrics used, all in docs/metrics.md" %
          (len(titles), n_targets, len(used)))
    return 0


if __name__ == "__main__":
    sys.exit(main())

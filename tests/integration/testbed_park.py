# SPDX-License-Identifier: BSD-2-Clause
"""Where requests wait when the handlers are busy, from the truth log and the
load generator's own clock (one CLOCK_MONOTONIC on both sides).

Two handlers, four streaming clients (more clients than handlers):

  accept   park_idle=0, a new connection per request: the requests that
           wait sit in the accept queue (accept_ns well after send_ns), and
           every request's truth has accept_ns
  park     park_idle=1, keep-alive: all four clients are served (with
           park_idle=0 two of them would wait for a whole connection), and a
           request sent on an idle kept-alive connection while both handlers
           are busy waits in the receive buffer: first_read_ns well after
           send_ns, accept_ns null (the connection was accepted before)

In both: never more than handler_threads requests in service at once, and for
at least half of every long wait both handlers were serving other requests.
"Well after" is half a request's service time as the knobs set it (prefill +
decode steps are real sleeps, so no request is served faster): a bound from
the knobs, not from this machine's speed.
"""

import os

import testbed_common as tc

HANDLERS = 2
CLIENTS = 4
REQUESTS = 16
TOKENS = 8
PREFILL_MS = 8.0
DECODE_MS = 10.0
# the least a request occupies its handler: one prefill and TOKENS - 1 decode steps
SERVICE_MIN_MS = PREFILL_MS + (TOKENS - 1) * DECODE_MS
MS = 1e6


def in_service(truth, t_ns, skip=None):
    """Requests between their first read and their last write at t_ns."""
    return [t for t in truth if t is not skip and t["first_read_ns"] <= t_ns <= t["end_ns"]]


def all_busy_share(truth, t0, t1, skip):
    """The share of [t0, t1] during which HANDLERS other requests were in service."""
    if t1 <= t0:
        return 0.0
    cuts = sorted({t0, t1} | {x for t in truth if t is not skip
                              for x in (t["first_read_ns"], t["end_ns"]) if t0 < x < t1})
    busy = sum(b - a for a, b in zip(cuts, cuts[1:])
               if len(in_service(truth, (a + b) // 2, skip)) >= HANDLERS)
    return busy / (t1 - t0)


def max_overlap(truth):
    edges = sorted([(t["first_read_ns"], 1) for t in truth] + [(t["end_ns"], -1) for t in truth],
                   key=lambda e: (e[0], e[1]))
    depth = best = 0
    for _, d in edges:
        depth += d
        best = max(best, depth)
    return best


def run_case(name, park, keepalive):
    d = tc.tmpdir()
    truth_path = os.path.join(d, "truth.jsonl")
    args = ["--scenario", tc.scenario("healthy"), "--port", "0", "--truth", truth_path,
            "--set", "handler_threads=%d" % HANDLERS, "--set", "park_idle=%d" % park,
            "--set", "prefill_base_ms=%g" % PREFILL_MS, "--set", "decode_base_ms=%g" % DECODE_MS]
    load = ["--concurrency", CLIENTS, "--requests", REQUESTS, "--stream", "--max-tokens", TOKENS,
            "--id-prefix", name + "-"]
    if keepalive:
        load += ["--keepalive", keepalive]
    with tc.Testbed(args, nice=-19) as tb:
        rc, res, summ, _ = tc.run_load(tb.url(), load, timeout=60)
        tc.check(rc == 0 and summ and summ["ok"] == REQUESTS,
                 "%s: all %d requests of %d clients on %d handlers ok (rc %d)"
                 % (name, REQUESTS, CLIENTS, HANDLERS, rc))
        tc.check(tb.stop() == 0, "%s: testbed exits 0" % name)
    truth = tc.read_truth(truth_path)
    tc.truth_ok_keys(truth)
    by_id = {r["request_id"]: r for r in res}
    truth = [t for t in truth if t["request_id"] in by_id]
    if not tc.check(len(truth) == REQUESTS and all(t["outcome"] == "ok" for t in truth),
                    "%s: one ok truth line per request" % name):
        return

    rows = []
    for t in truth:
        c = by_id[t["request_id"]]
        rows.append((t, c, (t["first_read_ns"] - c["send_ns"]) / MS))
    table = "\n".join("  %s send %d connect %s accept %s first_read %d end %d wait %.3f ms"
                      % (t["request_id"], c["send_ns"], c["connect_ns"], t["accept_ns"],
                         t["first_read_ns"], t["end_ns"], w) for t, c, w in rows)
    ok = True
    ok &= tc.check(all(c["send_ns"] == c["start_ns"] for _, c, _ in rows),
                   "%s: the client's send_ns is its start_ns" % name)
    ok &= tc.check(all(t["first_read_ns"] == t["arrival_ns"] for t, _, _ in rows),
                   "%s: the truth's first_read_ns is its arrival_ns" % name)
    # first request on a connection <=> the server stamped its accept
    firsts = [(t, c) for t, c, _ in rows if c["connect_ns"] is not None]
    ok &= tc.check(all((t["accept_ns"] is None) == (c["connect_ns"] is None) for t, c, _ in rows),
                   "%s: accept_ns exactly on the %d requests that opened a connection"
                   % (name, len(firsts)))
    want_conns = REQUESTS if keepalive == 1 else CLIENTS
    ok &= tc.check(len(firsts) == want_conns, "%s: %d connections opened, want %d"
                   % (name, len(firsts), want_conns))
    ok &= tc.check(all(t["accept_ns"] <= t["first_read_ns"] for t, _ in firsts),
                   "%s: accept before the first read" % name)
    # a send precedes its read; the wait is never negative (one clock)
    ok &= tc.check(all(w > 0 for _, _, w in rows), "%s: every first read after its send" % name)
    depth = max_overlap(truth)
    ok &= tc.check(depth <= HANDLERS, "%s: at most %d requests in service at once (saw %d)"
                   % (name, HANDLERS, depth))

    long_wait = SERVICE_MIN_MS / 2
    waited = [(t, c, w) for t, c, w in rows if w > long_wait]
    if keepalive == 1:
        # the wait was before the accept: the connection sat in the accept queue
        waited_where = [(t, c, w) for t, c, w in waited
                        if (t["accept_ns"] - c["send_ns"]) / MS > long_wait]
        where = "in the accept queue (accept_ns - send_ns > %.1f ms)" % long_wait
    else:
        # on a connection accepted earlier: in the receive buffer
        waited_where = [(t, c, w) for t, c, w in waited if t["accept_ns"] is None]
        where = "on an idle kept-alive connection"
    ok &= tc.check(len(waited_where) >= REQUESTS // 4,
                   "%s: %d of %d requests waited > %.1f ms (half the %.1f ms service the knobs "
                   "set) %s; longest %.3f ms"
                   % (name, len(waited_where), REQUESTS, long_wait, SERVICE_MIN_MS, where,
                      max(w for _, _, w in rows)))
    # both handlers were serving others for most of each long wait (a
    # handler that has just finished may take a moment to read the next
    # request on a busy machine: the midpoint alone can fall in that moment)
    busy = [all_busy_share(truth, c["send_ns"], t["first_read_ns"], t) for t, c, w in waited]
    ok &= tc.check(all(b >= 0.5 for b in busy),
                   "%s: during each long wait %d other requests were in service most of the "
                   "time (shares: %s)" % (name, HANDLERS, ["%.2f" % b for b in busy]))
    if not ok:
        tc.log(table)


def main():
    run_case("accept", park=0, keepalive=1)
    run_case("park", park=1, keepalive=0)
    tc.finish()


if __name__ == "__main__":
    main()

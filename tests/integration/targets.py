#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Targets in every shape, one daemon tracing four testbeds found four ways:

  - --comm NAME: a testbed started under a unique command name;
  - --cgroup PATH: a testbed moved into a fresh cgroup (v2), then a second one
    in a child cgroup (members are found recursively);
  - --pid P: a testbed inside its own mount and network namespace
    (`unshare --mount --net`), load sent from inside that namespace;
  - --port N: another testbed in another new network namespace, the listener
    found there (status names the namespace).

Each gives spans for the requests sent to it, in its group. Then members come
and go: the --comm testbed exits (dropped) and a new one is picked up; the
first cgroup member is moved out of the cgroup (it leaves the group while
alive); the --port listener exits and one in a fresh namespace is picked up.
"""

import os
import shutil
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
SCEN = ["--scenario", tb.scenario("healthy"), "--set", "decode_base_ms=5"]
SBIN_PATH = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
NETNS = NSENTER = None  # found in main()
PICKUP_S = 3.0  # the scan runs every 250 ms; leave room for a loaded machine


def cgroup2_root():
    with open("/proc/self/mounts") as f:
        for line in f:
            dev, mnt, fstype = line.split()[:3]
            if fstype == "cgroup2":
                return mnt
    return None


def netns_of(pid):
    return os.stat("/proc/%d/ns/net" % pid).st_ino


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def start_testbed(args, binary=None, wrap=None, name="testbed"):
    """A testbed, optionally under another name (a symlink sets its comm)."""
    saved = tb.TESTBED
    tb.TESTBED = binary or saved
    try:
        return tb.Testbed(SCEN + list(args), wrap=wrap, name=name)
    finally:
        tb.TESTBED = saved


def load(port, prefix, n=6, ns_pid=None):
    """n requests; inside ns_pid's network namespace when given. Returns the ids sent."""
    out = os.path.join(tb.tmpdir(), "load.jsonl")
    cmd = [tb.LOAD, "--url", "http://127.0.0.1:%d/v1/completions" % port, "--concurrency", "2",
           "--requests", str(n), "--stream", "--max-tokens", "4", "--id-prefix", prefix,
           "--out", out]
    if ns_pid:
        cmd = [NSENTER, "--target", str(ns_pid), "--net", "--"] + cmd
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    check(r.returncode == 0, "load %s: %d requests answered%s"
          % (prefix, n, "" if r.returncode == 0 else " (rc %d: %s)" % (r.returncode,
                                                                    r.stderr[-300:])))
    return {x["request_id"] for x in lc.read_jsonl(out)} if os.path.exists(out) else set()


def target(daemon, group):
    for t in daemon.status()["targets"]:
        if t["group"] == group:
            return t
    return None


def listening(t, port, ns):
    """The target's listeners on port in namespace ns (status targets[].listen)."""
    return [x for x in t.get("listen", {}).get("listeners", [])
            if x["port"] == port and x["netns"] == ns]


def wait_for(daemon, group, cond, timeout=PICKUP_S):
    """Seconds until cond(target) holds, or None."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout:
        t = target(daemon, group)
        if t is not None and cond(t):
            return time.monotonic() - t0
        time.sleep(0.05)
    return None


def check_spans(daemon, ids, group, pid, what):
    spans = [s for s in daemon.wait_spans(0, ids=ids) if s["request_id"] in ids]
    got = {s["request_id"] for s in spans}
    check(ids and got == ids, "%s: a span for each request (%d of %d)" % (what, len(got), len(ids)))
    bad = [(s["request_id"], s["group"], s["pid"]) for s in spans
           if s["group"] != group or s["pid"] != pid]
    check(not bad, "%s: spans in group %s from pid %d (off: %s)" % (what, group, pid, bad[:3]))


def picked_up(daemon, group, pid, what):
    dt = wait_for(daemon, group, lambda t: t["active"] and pid in t["pids"])
    check(dt is not None, "%s: pid %d traced in %s%s"
          % (what, pid, group, "" if dt is None else " after %.2f s" % dt))


def dropped(daemon, group, pid, what):
    dt = wait_for(daemon, group, lambda t: pid not in t["pids"])
    check(dt is not None, "%s: pid %d dropped from %s%s"
          % (what, pid, group, "" if dt is None else " after %.2f s" % dt))


def move(pid, cgdir):
    with open(os.path.join(cgdir, "cgroup.procs"), "w") as f:
        f.write(str(pid))


def main():
    lc.require_root()
    root = cgroup2_root()
    if not root:
        lc.cannot_run("no cgroup v2 hierarchy mounted")
    tools = {t: shutil.which(t, path=SBIN_PATH) for t in ("unshare", "nsenter", "ip")}
    if not all(tools.values()):
        lc.cannot_run("needs unshare, nsenter (util-linux) and ip (iproute2): %s" % tools)
    global NETNS, NSENTER
    # a shell that brings up loopback in the new network namespace, then becomes the testbed
    NETNS = [tools["unshare"], "--mount", "--net", "sh", "-c",
             '%s link set lo up && exec "$@"' % tools["ip"], "sh"]
    NSENTER = tools["nsenter"]

    d = tb.tmpdir()
    comm = "rtcomm%d" % (os.getpid() % 100000)
    link = os.path.join(d, comm)
    os.symlink(tb.TESTBED, link)
    cg_rel = "rt-targets-%d" % os.getpid()
    cg = os.path.join(root, cg_rel)
    cg_child = os.path.join(cg, "child")
    os.mkdir(cg)
    os.mkdir(cg_child)
    port_ns = free_port()  # free here, so a listener on it can only be in the new namespace

    procs = []
    daemon = None
    try:
        a = start_testbed([], binary=link, name="comm-a")
        procs.append(a)
        b = start_testbed([], name="cgroup-b")
        procs.append(b)
        move(b.pid, cg)
        c = start_testbed([], wrap=NETNS, name="netns-pid")
        procs.append(c)
        host_ns = netns_of(os.getpid())
        check(netns_of(c.pid) != host_ns, "the --pid testbed has a network namespace of its own")

        daemon = lc.Daemon(["--comm", comm, "--cgroup", cg_rel, "--pid", str(c.pid),
                            "--port", str(port_ns), "--no-inject"])
        g_comm, g_cg, g_pid, g_port = ("comm:" + comm, "cgroup:" + cg_rel, "pid:%d" % c.pid,
                                       "port:%d" % port_ns)
        picked_up(daemon, g_comm, a.pid, "--comm")
        picked_up(daemon, g_cg, b.pid, "--cgroup")
        picked_up(daemon, g_pid, c.pid, "--pid in a netns")
        t = target(daemon, g_cg)
        check(t and t["kind"] == "cgroup" and t["cgroup"] == cg,
              "status names the cgroup kind and directory (%s)" % (t and t.get("cgroup")))

        # the listener appears after the daemon, in a namespace of its own
        e = start_testbed(["--port", str(port_ns)], wrap=NETNS, name="netns-port")
        procs.append(e)
        picked_up(daemon, g_port, e.pid, "--port in a netns")
        t = target(daemon, g_port)
        check(t and t["netns"] == netns_of(e.pid) != host_ns,
              "status: the listener's namespace (%s, testbed's %d, ours %d)"
              % (t and t["netns"], netns_of(e.pid), host_ns))
        # listen-queue health: that listener, read inside its namespace (sock_diag)
        ns_e = netns_of(e.pid)
        dt = wait_for(daemon, g_port, lambda t: listening(t, port_ns, ns_e))
        t = target(daemon, g_port)
        ls = listening(t, port_ns, ns_e) if t else []
        check(dt is not None and ls[0]["pid"] == e.pid and isinstance(ls[0]["limit"], int)
              and ls[0]["limit"] > 0 and ls[0]["queue"] <= ls[0]["queue_max_seen"],
              "status: listener %d in the testbed's namespace (%s)" % (port_ns, ls))
        cnt = [n for n in t["listen"]["netns"] if n["netns"] == ns_e] if t else []
        check(cnt and isinstance(cnt[0]["overflows"], int) and isinstance(cnt[0]["drops"], int),
              "status: that namespace's listen counters (%s)" % cnt)

        check_spans(daemon, load(a.port, "comm-"), g_comm, a.pid, "--comm")
        check_spans(daemon, load(b.port, "cg-"), g_cg, b.pid, "--cgroup")
        check_spans(daemon, load(c.port, "nspid-", ns_pid=c.pid), g_pid, c.pid,
                    "--pid in a netns")
        check_spans(daemon, load(port_ns, "nsport-", ns_pid=e.pid), g_port, e.pid,
                    "--port in a netns")

        # --comm: the process exits, a new one of that name appears
        a.stop()
        dropped(daemon, g_comm, a.pid, "--comm member exited")
        a2 = start_testbed([], binary=link, name="comm-a2")
        procs.append(a2)
        picked_up(daemon, g_comm, a2.pid, "--comm new process")
        check_spans(daemon, load(a2.port, "comm2-"), g_comm, a2.pid, "--comm new process")

        # --cgroup: a member in a child cgroup joins, the first one moves out
        b2 = start_testbed([], name="cgroup-b2")
        procs.append(b2)
        move(b2.pid, cg_child)
        picked_up(daemon, g_cg, b2.pid, "--cgroup member of a child cgroup")
        move(b.pid, root)
        dropped(daemon, g_cg, b.pid, "--cgroup member moved out")
        check(b.alive(), "the moved process still runs")
        check("pid %d left the cgroup" % b.pid in daemon.log_text(), "the daemon logs the leave")
        check_spans(daemon, load(b2.port, "cg2-"), g_cg, b2.pid, "--cgroup child member")
        before = {s["request_id"] for s in daemon.spans()}
        ids = load(b.port, "gone-", n=2)
        time.sleep(1.0)
        after = {s["request_id"] for s in daemon.spans()}
        check(not (ids & (after - before)), "no spans from the process that left the cgroup")

        # --port: the listener exits; one in a fresh namespace takes the port
        e.stop()
        dropped(daemon, g_port, e.pid, "--port listener exited")
        e2 = start_testbed(["--port", str(port_ns)], wrap=NETNS, name="netns-port2")
        procs.append(e2)
        picked_up(daemon, g_port, e2.pid, "--port new listener in a new netns")
        t = target(daemon, g_port)
        check(t and t["netns"] == netns_of(e2.pid), "status follows the listener's namespace")
        check_spans(daemon, load(port_ns, "nsport2-", ns_pid=e2.pid), g_port, e2.pid,
                    "--port new listener")

        check(daemon.alive(), "daemon still running")
        st = daemon.status()
        drops = {k: v for k, v in st["drops"].items() if k.startswith("targets_")}
        check(drops and not any(drops.values()), "no target bound was hit (%s)" % drops)
    finally:
        rc = daemon.stop() if daemon else 0
        for p in procs:
            p.stop(5)
        for dirpath in (cg_child, cg):
            try:
                with open(os.path.join(dirpath, "cgroup.procs")) as f:
                    for pid in f.read().split():
                        move(int(pid), root)
                os.rmdir(dirpath)
            except OSError as ex:
                log("cleanup %s: %s" % (dirpath, ex))
    check(rc == 0, "daemon exits 0 on SIGTERM (got %s)" % rc)
    lc.finish()


if __name__ == "__main__":
    main()

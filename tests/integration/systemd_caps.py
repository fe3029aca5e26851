#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""reqtraced as configs/reqtraced.service starts it, without systemd as PID 1:
setpriv gives it the unit's capability set (CapabilityBoundingSet= and
AmbientCapabilities=, read from the unit file: the one place the list lives),
SecureBits=noroot-locked and no_new_privs. It must come up, announce READY=1
on $NOTIFY_SOCKET, hold exactly that set as CapEff, trace the testbed, and
say STOPPING=1 on SIGTERM. Then as plain root: the daemon's own drop leaves
the same set (effective and bounding). Both times the testbed's marker
library gets its uprobes (uprobes need CAP_SYS_ADMIN on current kernels)."""

import os
import shutil
import socket
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
UNIT = os.path.join(lc.SRC, "configs", "reqtraced.service")
# capability(7) numbers of the names the unit may use
CAP_NUM = {"CAP_CHOWN": 0, "CAP_DAC_OVERRIDE": 1, "CAP_DAC_READ_SEARCH": 2,
           "CAP_SETPCAP": 8, "CAP_NET_ADMIN": 12, "CAP_IPC_LOCK": 14,
           "CAP_SYS_PTRACE": 19, "CAP_SYS_ADMIN": 21, "CAP_SYS_RESOURCE": 24,
           "CAP_PERFMON": 38, "CAP_BPF": 39}


def unit_value(key):
    with open(UNIT) as f:
        vals = [l.split("=", 1)[1].split() for l in f if l.startswith(key + "=")]
    check(len(vals) == 1, "the unit has one %s= line" % key)
    return vals[0]


def mask_of(names):
    m = 0
    for n in names:
        check(n in CAP_NUM, "capability %s is known to this test" % n)
        m |= 1 << CAP_NUM[n]
    return m


def proc_status(pid):
    out = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            out[k] = v.strip()
    return out


def notify_socket():
    d = tempfile.mkdtemp(prefix="rt-notify-")
    tb._tmpdirs.append(d)
    path = os.path.join(d, "notify")
    s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    s.bind(path)
    s.settimeout(20)
    return s, path


def messages(s):
    """Every datagram queued on s (the first waited for), as one string."""
    out = [s.recv(4096).decode()]
    s.setblocking(False)
    try:
        while True:
            out.append(s.recv(4096).decode())
    except BlockingIOError:
        pass
    s.settimeout(20)
    return "\n".join(out)


def check_markers(daemon):
    """The testbed links libreqtrace_marker.so: its uprobes attached (the
    daemon logs each refused one, and a refusal here is the capability set's)."""
    bad = [l for l in daemon.log_text().splitlines() if "marker" in l and "uprobe" in l]
    check(not bad, "the marker uprobes attached (%s)" % (bad[:2] or "no error logged"))


def main():
    lc.require_root()
    setpriv = shutil.which("setpriv", path="/usr/bin:/bin:/usr/sbin:/sbin")
    if not setpriv:
        lc.cannot_run("needs setpriv (util-linux)")
    bounding = unit_value("CapabilityBoundingSet")
    ambient = unit_value("AmbientCapabilities")
    check(bounding == ambient, "CapabilityBoundingSet= and AmbientCapabilities= agree: %s" %
          " ".join(bounding))
    want = mask_of(bounding)
    caps = ",".join("+" + n[len("CAP_"):].lower() for n in bounding)
    wrap = [setpriv, "--reuid=0", "--securebits=+noroot,+noroot_locked",
            "--inh-caps=-all," + caps, "--ambient-caps=-all," + caps,
            "--bounding-set=-all," + caps, "--no-new-privs", "--"]

    server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--set", "decode_base_ms=5"])
    ns, ns_path = notify_socket()
    env = dict(os.environ, NOTIFY_SOCKET=ns_path)
    daemon = lc.Daemon(["--pid", str(server.pid)], env=env, wrap=wrap)
    try:
        ready = messages(ns)
        check("READY=1" in ready.split("\n"), "READY=1 on $NOTIFY_SOCKET (got %r)" % ready)
        st = proc_status(daemon.proc.pid)
        log("unit set %#x; CapEff %s CapPrm %s CapBnd %s CapAmb %s NoNewPrivs %s" %
            (want, st["CapEff"], st["CapPrm"], st["CapBnd"], st["CapAmb"], st["NoNewPrivs"]))
        check(int(st["CapEff"], 16) == want, "CapEff is the unit's set")
        check(int(st["CapPrm"], 16) == want, "CapPrm is the unit's set")
        check(int(st["CapBnd"], 16) == want, "CapBnd is the unit's set")
        check(int(st["CapAmb"], 16) == 0 and int(st["CapInh"], 16) == 0,
              "nothing inheritable or ambient is left (reqtraced executes nothing)")
        check(st["NoNewPrivs"] == "1", "no_new_privs is set")

        res, r = lc.run_load(server.port, "--concurrency", 2, "--requests", 6, "--stream",
                             "--max-tokens", 4, "--id-prefix", "caps-")
        check(r.returncode == 0 and len(res) == 6, "the testbed served 6 requests")
        ids = {x["request_id"] for x in res}
        spans = daemon.wait_spans(0, ids=ids)
        got = {s["request_id"] for s in spans} & ids
        check(got == ids, "a span for each of the 6 requests with only the unit's "
              "capabilities (%d found)" % len(got))
        check(daemon.alive(), "reqtraced still runs")
        check_markers(daemon)
        rc = daemon.stop()
        check(rc == 0, "clean exit on SIGTERM (%s)" % rc)
        stopping = messages(ns)
        check("STOPPING=1" in stopping.split("\n"), "STOPPING=1 on SIGTERM (got %r)" % stopping)
    finally:
        daemon.stop()

    # plain root, full capabilities: the daemon drops the rest itself
    daemon = lc.Daemon(["--pid", str(server.pid)])
    try:
        st = proc_status(daemon.proc.pid)
        log("as root: CapEff %s CapPrm %s CapBnd %s" % (st["CapEff"], st["CapPrm"],
                                                       st["CapBnd"]))
        check(int(st["CapEff"], 16) == want and int(st["CapPrm"], 16) == want,
              "started with every capability, reqtraced keeps only the unit's set")
        check(int(st["CapBnd"], 16) == want, "and its bounding set is the unit's set")
        check(st["NoNewPrivs"] == "1", "no_new_privs is set")
        res, r = lc.run_load(server.port, "--concurrency", 2, "--requests", 4, "--stream",
                             "--max-tokens", 4, "--id-prefix", "root-")
        ids = {x["request_id"] for x in res}
        got = {s["request_id"] for s in daemon.wait_spans(0, ids=ids)} & ids
        check(len(ids) == 4 and got == ids, "still traced after the drop (%d of 4)" % len(got))
        check_markers(daemon)
        check(daemon.stop() == 0, "clean exit")
    finally:
        daemon.stop()
        server.stop()
    lc.finish()


if __name__ == "__main__":
    main()

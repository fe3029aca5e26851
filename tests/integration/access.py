#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-2-Clause
"""Who may use the control socket (design: control socket mode 0660 with a
configured group, every peer checked with SO_PEERCRED).

A system group and two users are created for the test and removed after it:
a member of the group and an outsider. With `reqtraced --socket-group G`:

  - the socket is mode 0660, owned by root:G;
  - the outsider is refused by the socket's mode, and, when the mode is
    loosened by hand (0666), by the daemon itself: a clear message to the
    client and a log line naming its pid and uid;
  - the member reads status and spans with the `reqtrace` CLI, whether G is
    a supplementary group or its primary one;
  - `record` (it writes a file) stays root only: the member is refused and
    no file appears.

Without --socket-group the socket is 0600 and the member is refused too.
"""

import grp
import os
import pwd
import shutil
import stat
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import live_common as lc  # noqa: E402
import testbed_common as tb  # noqa: E402

log, check = lc.log, lc.check
SBIN_PATH = os.environ.get("PATH", "/usr/bin:/bin") + ":/usr/sbin:/sbin"
TOOLS = ("groupadd", "groupdel", "useradd", "userdel", "setpriv")


def run(cmd, **kw):
    return subprocess.run(cmd, capture_output=True, text=True, timeout=60, **kw)


# connect, send nothing, print what the daemon says
RAW_CLIENT = """
import socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.settimeout(10)
s.connect(sys.argv[1])
print(s.recv(65536).decode())
"""


def as_user(user, args, gid=None, groups="init", exe=None):
    """The reqtrace CLI (or exe) as user (setpriv: real and effective ids, no capabilities)."""
    pw = pwd.getpwnam(user)
    cmd = [TOOLS_AT["setpriv"], "--reuid", str(pw.pw_uid),
           "--regid", str(pw.pw_gid if gid is None else gid),
           "--init-groups" if groups == "init" else "--clear-groups", "--"]
    r = run(cmd + (exe or [lc.REQTRACE]) + args, cwd="/")
    log("  %s %s -> rc %d; %s" % (user, " ".join(args[2:] or args), r.returncode,
                                  (r.stderr or r.stdout).strip().splitlines()[-1:] or ""))
    return r


def main():
    lc.require_root()
    global TOOLS_AT
    TOOLS_AT = {t: shutil.which(t, path=SBIN_PATH) for t in TOOLS}
    if not all(TOOLS_AT.values()):
        lc.cannot_run("needs %s (passwd, util-linux): %s" % (", ".join(TOOLS), TOOLS_AT))
    tag = os.getpid() % 100000
    group, member, outsider = "rtacc%d" % tag, "rtmem%d" % tag, "rtout%d" % tag
    created = []
    daemon = server = None
    try:
        for cmd, what in (([TOOLS_AT["groupadd"], "--system", group], ("group", group)),
                          ([TOOLS_AT["useradd"], "--system", "-M", "-N", "-s",
                            "/usr/sbin/nologin", "-G", group, member], ("user", member)),
                          ([TOOLS_AT["useradd"], "--system", "-M", "-N", "-s",
                            "/usr/sbin/nologin", outsider], ("user", outsider))):
            r = run(cmd)
            if r.returncode:
                raise RuntimeError("%s: %s" % (" ".join(cmd), r.stderr))
            created.append(what)
        gid = grp.getgrnam(group).gr_gid
        member_gid = pwd.getpwnam(member).pw_gid
        check(member_gid != gid, "the member has %s as a supplementary group only" % group)

        server = tb.Testbed(["--scenario", tb.scenario("healthy"), "--set", "decode_base_ms=5"])
        daemon = lc.Daemon(["--port", str(server.port), "--socket-group", group, "--no-inject"])
        os.chmod(daemon.dir, 0o755)  # mkdtemp's 0700 would stop everyone before the socket
        sock = ["--socket", daemon.sock]
        st = os.stat(daemon.sock)
        check(stat.S_IMODE(st.st_mode) == 0o660 and st.st_uid == 0 and st.st_gid == gid,
              "socket is 0660 root:%s (mode %o, uid %d, gid %d)"
              % (group, stat.S_IMODE(st.st_mode), st.st_uid, st.st_gid))

        ids, _ = lc.run_load(server.port, "--concurrency", 2, "--requests", 6, "--stream",
                             "--max-tokens", 4, "--id-prefix", "acc-")
        want = {x["request_id"] for x in ids}
        daemon.wait_spans(0, ids=want)

        # the outsider: the socket's mode stops it before the daemon sees it
        r = as_user(outsider, sock + ["status"])
        check(r.returncode != 0 and "Permission denied" in r.stderr,
              "outsider refused by the socket's mode, with a message (%r)" % r.stderr.strip())
        # loosened by hand: the daemon's own SO_PEERCRED check still refuses. It
        # answers at connect time, before any request: a raw client reads that.
        os.chmod(daemon.sock, 0o666)
        r = as_user(outsider, [daemon.sock], exe=[sys.executable, "-c", RAW_CLIENT])
        check('"error":"permission denied' in r.stdout and "configured group" in r.stdout,
              "outsider past the mode: the daemon refuses with a message (%r)" % r.stdout.strip())
        r = as_user(outsider, sock + ["spans", "--json"])
        os.chmod(daemon.sock, 0o660)
        check(r.returncode == 1 and not r.stdout.strip() and "permission denied" in r.stderr,
              "outsider past the mode: the CLI is served nothing and says why (rc %d, %r)"
              % (r.returncode, r.stderr.strip()))
        uid_out = pwd.getpwnam(outsider).pw_uid
        check("control: refused pid" in daemon.log_text()
              and "uid %d" % uid_out in daemon.log_text(),
              "the refusal is logged with the peer's pid and uid")

        # the member: reads status and spans, as a supplementary or the primary group
        r = as_user(member, sock + ["status"])
        check(r.returncode == 0 and "port:%d" % server.port in r.stdout,
              "member (supplementary group) reads status")
        r = as_user(member, sock + ["spans", "--json"])
        got = {l.split('"request_id":"', 1)[1].split('"', 1)[0]
               for l in r.stdout.splitlines() if '"request_id":"' in l}
        check(r.returncode == 0 and want <= got,
              "member reads the spans (%d of %d)" % (len(want & got), len(want)))
        r = as_user(member, sock + ["spans"], gid=gid, groups="clear")
        check(r.returncode == 0 and "acc-" in r.stdout,
              "member by primary group (no supplementary groups) reads spans")

        # writing files (and anything that changes what is traced) is root only
        out = os.path.join(daemon.dir, "member.rtrace")
        r = as_user(member, sock + ["record", "-o", out, "--duration", "1s"])
        check(r.returncode != 0 and "root only" in r.stderr and not os.path.exists(out),
              "member's record is refused, no file made (%r)" % r.stderr.strip())
        check(daemon.alive(), "daemon still running")
        check(daemon.stop() == 0, "daemon exits 0")

        # no --socket-group: root only
        daemon = lc.Daemon(["--port", str(server.port), "--no-inject"])
        os.chmod(daemon.dir, 0o755)
        st = os.stat(daemon.sock)
        check(stat.S_IMODE(st.st_mode) == 0o600, "without --socket-group the socket is 0600 (%o)"
              % stat.S_IMODE(st.st_mode))
        r = as_user(member, ["--socket", daemon.sock, "status"])
        check(r.returncode != 0 and "Permission denied" in r.stderr,
              "without --socket-group the member is refused")
        r = run([lc.REQTRACE, "--socket", daemon.sock, "status"])
        check(r.returncode == 0, "root is served")
    finally:
        if daemon:
            daemon.stop()
        if server:
            server.stop()
        for kind, name in reversed(created):
            r = run([TOOLS_AT["userdel" if kind == "user" else "groupdel"], name])
            if r.returncode:
                log("cleanup: cannot delete %s %s: %s" % (kind, name, r.stderr.strip()))
    check(not any(n in (g.gr_name for g in grp.getgrall()) for n in (group,)),
          "test group removed")
    lc.finish()


TOOLS_AT = {}

if __name__ == "__main__":
    main()

#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# scripts/stress.sh CMD [ARGS...]: runs CMD as a slow, busy machine would.
#
# Beside CMD it starts two CPU-bound processes (one per core on our 2-core
# machines) and one that churns memory (maps, first-touches and unmaps
# RT_STRESS_MB MiB in a loop: page faults and zeroing, as a busy neighbour
# causes). They run at nice 0 in a session of their own (so the kernel's
# autogroup weighs them as one more user, not as part of CMD), are bounded in
# time (RT_STRESS_MAX_S, 90 minutes by default) and are stopped when CMD ends,
# however it ends. Exits with CMD's status.
#
# scripts/test.sh uses it when RT_TEST_STRESS=1. A test that passes alone
# and fails here depends on the machine's speed: fix the test (or the code),
# never its slack.
set -uo pipefail

if [ "$#" -eq 0 ]; then
	echo "usage: $0 CMD [ARGS...]" >&2
	exit 2
fi
max_s=${RT_STRESS_MAX_S:-5400}
mb=${RT_STRESS_MB:-256}

pids=()
stop() {
	# timeout passes the signal on to the process it runs
	if [ "${#pids[@]}" -gt 0 ]; then
		kill "${pids[@]}" 2>/dev/null
		wait "${pids[@]}" 2>/dev/null
	fi
	pids=()
}
trap stop EXIT
trap 'stop; exit 130' INT TERM

for _ in 1 2; do
	timeout "$max_s" setsid sh -c 'while :; do :; done' &
	pids+=("$!")
done
timeout "$max_s" setsid python3 -c '
import mmap, sys
n = int(sys.argv[1]) << 20
while True:
    m = mmap.mmap(-1, n)
    for off in range(0, n, 4096):
        m[off] = 1
    m.close()
' "$mb" &
pids+=("$!")
echo "stress: 2 CPU hogs and a ${mb} MiB memory churner beside: $*" >&2

# in the background so that a signal to this script is handled at once (bash
# runs traps only between foreground commands), and passed on to CMD
"$@" &
cmd=$!
trap 'kill "$cmd" 2>/dev/null; wait "$cmd"; stop; exit 130' INT TERM
wait "$cmd"
rc=$?
stop
echo "stress: stopped (command exited $rc)" >&2
exit "$rc"

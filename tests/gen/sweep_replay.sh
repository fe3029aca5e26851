#!/usr/bin/env bash
# SPDX-License-Identifier: BSD-2-Clause
# Generates fresh fixtures (every scenario in every mode, seeds 2..N) into a
# temp dir and checks `reqtrace replay` against their truth, beyond the
# committed fixtures (pack mode's ambiguous scenarios: against the rules).
# usage: sweep_replay.sh BUILD_DIR [LAST_SEED]
set -euo pipefail
build=$1
last=${2:-6}
here=$(cd "$(dirname "$0")" && pwd)
out=$(mktemp -d)
trap 'rm -rf "$out"' EXIT
for sc in $("$build/rt-gen" --list | awk '{print $1}'); do
	for mode in zero markers; do
		for seed in $(seq 2 "$last"); do
			"$build/rt-gen" --scenario "$sc" --mode "$mode" --seed "$seed" \
				--out "$out/$sc-$mode-$seed.rtrace" --truth "$out/$sc-$mode-$seed.truth.jsonl"
		done
	done
done
# engine-pack mode, except where the pack's joins are ambiguous by design
# (tests/fixtures/README.md, "Engine-pack mode"): a tokenizer thread that
# works through a backlog in one burst (backlog, accept-queue), a handler
# that read two requests before handing one off (pipelined); and comm,
# where probe comm wait is split at the first token, not at prefill's end
# (those go to a directory of their own: there replay is held to the
# documented rules, pack_rules.py, not to the truth)
mkdir "$out/ambiguous"
for sc in $("$build/rt-gen" --list | awk '{print $1}'); do
	dir=$out
	case $sc in backlog | accept-queue | pipelined | comm) dir=$out/ambiguous ;; esac
	for seed in $(seq 2 "$last"); do
		"$build/rt-gen" --scenario "$sc" --mode pack --seed "$seed" \
			--out "$dir/$sc-pack-$seed.rtrace" --truth "$dir/$sc-pack-$seed.truth.jsonl"
	done
done
python3 "$here/pack_rules.py" "$build/reqtrace" "$out"/ambiguous/*.rtrace
python3 "$here/compare_replay.py" "$build/reqtrace" "$out"/*.rtrace

#!/usr/bin/env bash
# hack/test.sh — `make test`: the phases one after the other, each timed, the first
# failure stops the run.
#
# The Kubernetes binaries, etcd, CoreDNS, e2e.test, agnhost and the Ginkgo CLI (the e2e,
# conformance and VM phases' tools, ~25 min of compiling from nothing) are built in the
# background from the start, under nice 19, in the CPU the earlier phases leave idle
# (they wait on processes and the network more than they compute). The phases that need
# them run the same build scripts, which wait on a lock for a build in progress and then
# find it done, or build it themselves (and fail there, naming the cause) when the
# background build failed: the prebuild only moves work earlier, it never stands in for a
# phase. TEST_PREBUILD=0 turns it off; its log is _output/prebuild.log.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
MAKE=${MAKE:-make}
# critest-lazy and "e2e-evented LAZY=1": those suites with minicri's lazy pulls on and every
# test image eStargz (Makefile LAZY; issue 21: the suites pass unchanged with lazy pulls on).
# A phase written "&name" starts in the background and runs beside the phases after it; the
# run waits for it at the end and fails if it failed. Measured on 2026-12-07 (cold): vmtest-ci
# beside conformance-ci made the guest's integration step 1214 s (332 s alone), so the pair
# took longer together than one after the other: both run in the foreground again.
PHASES=(vet lint unit "fuzz FUZZTIME=${TEST_FUZZTIME:-10s}" integration soak-ci critest critest-lazy e2e "e2e-evented LAZY=1" conformance-ci vmtest-ci)
[ $# -eq 0 ] || PHASES=("$@")

prebuild_pid=
bg_pids=()
bg_names=()
bg_starts=()
stop_background() {
	local pid
	for pid in $prebuild_pid "${bg_pids[@]}"; do
		kill -- -"$pid" 2>/dev/null || true
		wait "$pid" 2>/dev/null || true
	done
}
trap stop_background EXIT
trap 'exit 143' TERM INT HUP

if [ "${TEST_PREBUILD:-1}" != 0 ]; then
	mkdir -p _output
	# setsid: its own process group, so that the trap stops every compiler it started.
	setsid nice -n 19 bash -c '
		start=$(date +%s)
		test/cluster/tools.sh >/dev/null && CONFORMANCE_SUBSET=ci test/conformance/tools.sh >/dev/null
		rc=$?
		echo "prebuild: exit $rc after $(( $(date +%s) - start ))s"' >_output/prebuild.log 2>&1 &
	prebuild_pid=$!
	echo "==> prebuild of the e2e, cluster and conformance tools in the background (pid $prebuild_pid, _output/prebuild.log)"
fi

# wait_background: waits for each background phase, prints its log and result; fails
# if one failed.
wait_background() {
	local i rc failed=0
	for i in "${!bg_pids[@]}"; do
		rc=0
		wait "${bg_pids[$i]}" || rc=$?
		echo "==> make ${bg_names[$i]} (in the background, _output/${bg_names[$i]}.log):"
		cat "_output/${bg_names[$i]}.log"
		if [ $rc = 0 ]; then
			echo "<== make ${bg_names[$i]}: ok in $(($(date +%s) - bg_starts[i]))s (in the background)"
		else
			echo "<== make ${bg_names[$i]}: FAILED (exit $rc) after $(($(date +%s) - bg_starts[i]))s (in the background)"
			failed=1
		fi
	done
	bg_pids=()
	return $failed
}

for p in "${PHASES[@]}"; do
	if [ "${p#&}" != "$p" ]; then
		p=${p#&}
		echo "==> make $p: started in the background (_output/${p%% *}.log)"
		mkdir -p _output
		# shellcheck disable=SC2086 # a target and its variables
		setsid $MAKE --no-print-directory $p >"_output/${p%% *}.log" 2>&1 &
		bg_pids+=($!)
		bg_names+=("${p%% *}")
		bg_starts+=("$(date +%s)")
		continue
	fi
	echo "==> make $p"
	start=$(date +%s)
	# shellcheck disable=SC2086 # "fuzz FUZZTIME=20s": a target and its variables
	if $MAKE --no-print-directory $p; then
		echo "<== make $p: ok in $(($(date +%s) - start))s"
	else
		echo "<== make $p: FAILED after $(($(date +%s) - start))s"
		exit 1
	fi
done
wait_background

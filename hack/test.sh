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
PHASES=(vet lint unit "fuzz FUZZTIME=${TEST_FUZZTIME:-10s}" integration soak-ci critest critest-lazy e2e "e2e-evented LAZY=1" conformance-ci vmtest-ci)
[ $# -eq 0 ] || PHASES=("$@")

prebuild_pid=
stop_prebuild() {
	[ -n "$prebuild_pid" ] || return 0
	kill -- -"$prebuild_pid" 2>/dev/null || true
	wait "$prebuild_pid" 2>/dev/null || true
}
trap stop_prebuild EXIT
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

for p in "${PHASES[@]}"; do
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

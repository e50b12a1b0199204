#!/usr/bin/env bash
# hack/bench-ckpt.sh [OUT] — `make bench-ckpt`: checkpoint/restore speed of minicri alone
# (cribench ckpt, issue 15): on a private instance A (hack/instance.sh, offline test
# registry), 5 rounds each of CheckpointContainer to a tar and restore (CreateContainer +
# StartContainer in a new pod of the same namespace) for a busybox counter and a process
# holding 500 MiB; then 5 pod migrations between A and a second private instance B, back
# and forth (CheckpointPod + StopPodSandbox on one, RestorePod + StartContainer on the
# other). BENCH_CKPT_ONE=1: migrations within A. Medians and samples on stdout, JSON in
# OUT (default _output/bench-ckpt/ckpt.json). MINICRI selects the binary.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/_output/bench-ckpt
OUT=${1:-$DIR/ckpt.json}
mkdir -p "$DIR"
rm -f "$DIR/b.endpoint" "$DIR/b.stop"
B_PID=
# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
export INSTANCE_REGISTRY=test INSTANCE_LOG_LEVEL=info INSTANCE_ARTIFACTS=$DIR/minicri

# Instance B lives in a subshell (instance.sh keeps one instance per shell): it writes
# its endpoint and cgroup parent to b.endpoint and stops when b.stop appears.
start_b() {
	(
		INSTANCE_ARTIFACTS=$DIR/minicri-b
		trap 'instance_stop' EXIT
		instance_start ckbenchb mcri-ck1 10.194.0.0/16 cl
		echo "$INSTANCE_ENDPOINT $INSTANCE_CGROUP" >"$DIR/b.endpoint"
		while [ ! -e "$DIR/b.stop" ]; do sleep 0.2; done
	) &
	B_PID=$!
	local i
	for ((i = 0; i < 600; i++)); do
		[ ! -s "$DIR/b.endpoint" ] || return 0
		proc_alive "$B_PID" || break
		sleep 0.1
	done
	echo "bench-ckpt: instance B did not start" >&2
	return 1
}

on_exit() {
	local rc=$?
	instance_stop || rc=1
	if [ -n "$B_PID" ]; then
		touch "$DIR/b.stop"
		wait "$B_PID" || rc=1
	fi
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
(cd "$ROOT" && go build -o "$DIR/cribench" ./test/bench/cribench)
b_args=()
if [ "${BENCH_CKPT_ONE:-0}" != 1 ]; then
	start_b
	read -r b_endpoint b_cgroup <"$DIR/b.endpoint"
	b_args=(-endpoint-b "$b_endpoint" -cgroup-parent-b "$b_cgroup")
fi
instance_start ckbench mcri-ck0 10.195.0.0/16 ck
instance_run "$DIR/cribench" ckpt -endpoint "$INSTANCE_ENDPOINT" -runtime minicri -n "${BENCH_CKPT_ROUNDS:-5}" \
	-cgroup-parent "$INSTANCE_CGROUP" "${b_args[@]}" -out "$OUT"

#!/usr/bin/env bash
# hack/bench-ckpt.sh [OUT] — `make bench-ckpt`: checkpoint/restore speed of minicri alone
# (cribench ckpt, issue 15): on a private instance (hack/instance.sh, offline test
# registry), 5 rounds each of CheckpointContainer to a tar and restore (CreateContainer +
# StartContainer in a new pod of the same namespace) for a busybox counter and a process
# holding 500 MiB, then 5 pod migrations within the instance (CheckpointPod,
# StopPodSandbox, RestorePod, StartContainer). Medians and samples on stdout, JSON in
# OUT (default _output/bench-ckpt/ckpt.json). MINICRI selects the binary.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DIR=$ROOT/_output/bench-ckpt
OUT=${1:-$DIR/ckpt.json}
mkdir -p "$DIR"
# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
export INSTANCE_REGISTRY=test INSTANCE_LOG_LEVEL=info INSTANCE_ARTIFACTS=$DIR/minicri
trap 'instance_stop' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
(cd "$ROOT" && go build -o "$DIR/cribench" ./test/bench/cribench)
instance_start ckbench mcri-ck0 10.195.0.0/16 ck
instance_run "$DIR/cribench" ckpt -endpoint "$INSTANCE_ENDPOINT" -runtime minicri -n "${BENCH_CKPT_ROUNDS:-5}" \
	-cgroup-parent "$INSTANCE_CGROUP" -dir "$INSTANCE_TMP" -out "$OUT"

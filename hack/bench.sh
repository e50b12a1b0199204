#!/usr/bin/env bash
# hack/bench.sh RUNP [runp flags...] — `make bench`: pod lifecycle latency against a
# private minicri instance (bridge mcri-bn0, 10.198.0.0/16, cgroup parent /minicri-bench).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
RUNP=${1:?usage: hack/bench.sh RUNP [runp flags...]}
shift

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
export INSTANCE_ARTIFACTS=$ROOT/_output/bench

on_exit() {
	local rc=$?
	instance_stop || { echo "bench: FAIL: minicri did not stop cleanly or left something behind" >&2; rc=1; }
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

instance_start bench mcri-bn0 10.198.0.0/16 bn
instance_run "$RUNP" -endpoint "$INSTANCE_ENDPOINT" "$@"

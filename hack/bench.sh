#!/usr/bin/env bash
# hack/bench.sh CRIBENCH [pods flags...] — `make bench`: minicri against Debian's
# containerd + runc, in one run, each on private directories, socket and offline test
# registry (test/registry with the ~100 MB bench image):
#
#   1. pods: N sequential pod lifecycles timed per CRI step, P pods started in parallel,
#      memory (PSS) of the runtime with 0 and P pods   (test/bench/cribench pods)
#   2. pull: cold PullImage of docker.io/minicri/bench:100m, BENCH_PULLS times, each on a
#      fresh instance with an empty store                (test/bench/cribench pull)
#   3. the comparison table                              (test/bench/cribench report)
#
# minicri: hack/instance.sh (bridge mcri-bn0, 10.198.0.0/16, cgroup parent /minicri-bench).
# containerd: hack/containerd.sh (bridge ctrd-bn0, 10.197.0.0/16, cgroup parent
# /ctrd-bench); installed with apt when missing. containerd's pause image is
# bin/minicri-pause pushed to its registry (see cribench pushpause), so both runtimes
# hold pod namespaces with the same static process. Results: _output/bench/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CRIBENCH=${1:?usage: hack/bench.sh CRIBENCH [pods flags...]}
shift
PULLS=${BENCH_PULLS:-3}
OUT=$ROOT/_output/bench
RES=$OUT/results
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.36.1-1
PAUSE=registry.k8s.io/pause:3.9
BIGIMAGE=docker.io/minicri/bench:100m
MC_BRIDGE=mcri-bn0 MC_SUBNET=10.198.0.0/16
CD_BRIDGE=ctrd-bn0 CD_SUBNET=10.197.0.0/16
# What this script's runtimes may leave in nftables/iptables: their names and subnets.
OWN_RULES="$MC_BRIDGE|$CD_BRIDGE|10\.198\.|10\.197\.|minicri_minicri_bench|ctrd-bench"

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=hack/containerd.sh disable=SC1091
. "$ROOT/hack/containerd.sh"
export INSTANCE_REGISTRY=bench
export INSTANCE_ARTIFACTS=$OUT/minicri CTRD_ARTIFACTS=$OUT/containerd

log() { echo "bench: $*" >&2; }

# own_rules: nftables tables and iptables rules that name this benchmark's networks.
own_rules() {
	{
		nft list tables 2>/dev/null || true
		iptables-save 2>/dev/null | grep -v '^#' || true
	} | grep -E "$OWN_RULES" || true
}

# cleanup_host: the bridges of both runtimes (neither deletes its bridge), an empty
# /minicri-bench cgroup tree, and a check that no rules of ours are left.
cleanup_host() {
	local rc=0 br left
	for br in "$MC_BRIDGE" "$CD_BRIDGE"; do
		if ip link show "$br" >/dev/null 2>&1; then
			ip link del "$br" || { log "cannot delete bridge $br"; rc=1; }
		fi
	done
	find /sys/fs/cgroup -mindepth 2 -depth -type d \( -path '*/minicri-bench' -o -path '*/minicri-bench/*' \) \
		-exec rmdir {} \; 2>/dev/null || true
	left=$(own_rules)
	if [ -n "$left" ] && [ "$left" != "${RULES_BEFORE:-}" ]; then
		log "LEAK: nftables/iptables entries of this benchmark:"
		while IFS= read -r l; do echo "    $l" >&2; done <<<"$left"
		rc=1
	fi
	return $rc
}

on_exit() {
	local rc=$?
	instance_stop || { log "FAIL: minicri did not stop cleanly or left something behind"; rc=1; }
	ctrd_stop || { log "FAIL: containerd did not stop cleanly or left something behind"; rc=1; }
	cleanup_host || rc=1
	[ $rc -eq 0 ] || log "FAILED (exit $rc); logs in $OUT/{minicri,containerd}/"
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

start=$(date +%s)
ctrd_install
rm -rf "$RES" "$OUT/minicri" "$OUT/containerd"
mkdir -p "$RES"
(cd "$ROOT" && go build -o "$ROOT/_output/bin/registry" ./test/registry)
RULES_BEFORE=$(own_rules)
[ -z "$RULES_BEFORE" ] || log "warning: entries matching this benchmark exist before it runs: $RULES_BEFORE"

# ---- 1. pods -----------------------------------------------------------------------
log "== 1. pods: minicri"
instance_start bench "$MC_BRIDGE" "$MC_SUBNET" bn
instance_run "$CRIBENCH" pods -endpoint "$INSTANCE_ENDPOINT" -runtime minicri -image "$IMAGE" \
	-cgroup-parent "$INSTANCE_CGROUP" -mem-pid "$INSTANCE_PID" -mem-match "$INSTANCE_TMP/state" \
	-out "$RES/pods-minicri.json" "$@"
instance_stop

log "== 1. pods: containerd"
ctrd_start bench "$CD_BRIDGE" "$CD_SUBNET" cb
"$CRIBENCH" pushpause -registry "$CTRD_REGISTRY" -binary "$ROOT/bin/minicri-pause" -ref "$PAUSE"
"$CRIBENCH" pods -endpoint "$CTRD_ENDPOINT" -runtime containerd -image "$IMAGE" -pause-image "$PAUSE" \
	-cgroup-parent "$CTRD_CGROUP" -mem-pid "$CTRD_PID" -mem-match "$CTRD_SOCK" \
	-out "$RES/pods-containerd.json" "$@"
ctrd_stop

# ---- 2. cold pulls, alternating, each on a fresh instance --------------------------
for ((i = 1; i <= PULLS; i++)); do
	log "== 2. pull $i/$PULLS: minicri"
	instance_start bench "$MC_BRIDGE" "$MC_SUBNET" bn
	instance_run "$CRIBENCH" pull -endpoint "$INSTANCE_ENDPOINT" -runtime minicri -image "$BIGIMAGE" \
		-out "$RES/pull-minicri-$i.json"
	instance_stop
	log "== 2. pull $i/$PULLS: containerd"
	ctrd_start bench "$CD_BRIDGE" "$CD_SUBNET" cb
	"$CRIBENCH" pull -endpoint "$CTRD_ENDPOINT" -runtime containerd -image "$BIGIMAGE" \
		-out "$RES/pull-containerd-$i.json"
	ctrd_stop
done

# ---- 3. report -----------------------------------------------------------------------
"$CRIBENCH" report -dir "$RES" | tee "$OUT/report.txt"
log "done in $(($(date +%s) - start))s; results in $RES, table in $OUT/report.txt"

#!/usr/bin/env bash
# hack/bench-lazy.sh CRIBENCH — `make bench-lazy` (issue 21 item 5): the time from
# PullImage's start to a container's first log line, and to its last once it has read the
# whole image, for eStargz images from a throttled registry, in one run, for:
#
#   minicri-lazy        minicri with [image] lazy = true (minicri-lazyfs)
#   minicri             minicri pulling whole (lazy off)
#   containerd2         containerd 2.4 + runc, overlayfs snapshotter (full pull)
#   containerd2-stargz  containerd 2.4 + stargz-snapshotter as its proxy snapshotter
#
# containerd 2.4, runc and containerd-stargz-grpc come from hack/bench-tools.sh (the Go
# module proxy, cached in /var/cache/minicri-tools). The images (test/registry -lazy-bench,
# fixture/lazybench.go) are 10 eStargz layers: busybox and /app/start.sh, then 9 layers of
# modules and libraries; the container's start (`sh /app/start.sh`) reads 16 modules of
# each layer (the prioritized files, ~2.3 MB, with busybox ~5 MB), prints "ready", reads
# every file of /app, prints "done". Each run of each round is cold: a fresh instance (empty
# image store, lazyfs or stargz caches, registry), the page cache dropped before it starts
# (BENCH_LAZY_DROP_CACHES=1). An unrelated small eStargz image is pulled first, untimed
# (minicri starts its lazyfs at its first lazy pull), and the pod sandbox runs (the kubelet's
# order); then cribench lazy times PullImage, CreateContainer, StartContainer and the two
# log lines.
#
# Knobs (environment):
#   BENCH_LAZY_IMAGES       "1g 50m"  which images: 1g (1 GiB, docker.io/minicri/lazy-bench:1g),
#                                     50m (docker.io/minicri/lazy-bench:50m)
#   BENCH_LAZY_ROUNDS       3         cold rounds of each run and image (medians reported)
#   BENCH_LAZY_RUNS         the four above, in this order (the ratios need all four)
#   BENCH_LAZY_RATE         100000000 bytes a second per registry response (connection)
#   BENCH_LAZY_LATENCY      20ms      added to every registry request
#   BENCH_LAZY_DROP_CACHES  1         sync and drop the kernel's page cache before each run
#
# minicri: hack/instance.sh (bridge mcri-bl0, 10.192.0.0/16); containerd: hack/containerd.sh
# (bridge ctrd-bl0, 10.193.0.0/16). Results: _output/bench-lazy/ (the table in report.txt).
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CRIBENCH=${1:?usage: hack/bench-lazy.sh CRIBENCH}
read -r -a IMAGES <<<"${BENCH_LAZY_IMAGES:-1g 50m}"
ROUNDS=${BENCH_LAZY_ROUNDS:-3}
read -r -a RUNS <<<"${BENCH_LAZY_RUNS:-minicri-lazy minicri containerd2 containerd2-stargz}"
RATE=${BENCH_LAZY_RATE:-100000000}
LATENCY=${BENCH_LAZY_LATENCY:-20ms}
DROP=${BENCH_LAZY_DROP_CACHES:-1}
OUT=$ROOT/_output/bench-lazy
RES=$OUT/results
PAUSE=registry.k8s.io/pause:3.9
# Pulled untimed before each measure: minicri starts minicri-lazyfs at its first lazy pull,
# where containerd-stargz-grpc runs before containerd starts; neither start is timed.
WARM=docker.io/minicri/estargz:small
MC_BRIDGE=mcri-bl0 MC_SUBNET=10.192.0.0/16
CD_BRIDGE=ctrd-bl0 CD_SUBNET=10.193.0.0/16

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=hack/containerd.sh disable=SC1091
. "$ROOT/hack/containerd.sh"
export INSTANCE_LOG_LEVEL=info

log() { echo "bench-lazy: $*" >&2; }

# fuse_conns: the kernel's FUSE connections (each lazy layer mounted is one; empty where
# fusectl is not mounted).
fuse_conns() { ls /sys/fs/fuse/connections 2>/dev/null | sort || true; }

# image_ref TAG and registry_flag TAG: the reference of image TAG, the registry flag that
# publishes it.
image_ref() {
	case $1 in
	1g) echo docker.io/minicri/lazy-bench:1g ;;
	50m) echo docker.io/minicri/lazy-bench:50m ;;
	*) log "unknown image $1 (1g, 50m)"; return 1 ;;
	esac
}
registry_flag() {
	case $1 in
	1g) echo -lazy-bench-1g ;;
	50m) echo -lazy-bench ;;
	esac
}

# cleanup_host: the bridges (the CNI bridge plugin never deletes its own), and no FUSE
# connection left that was not there before the run.
cleanup_host() {
	local rc=0 br left
	for br in "$MC_BRIDGE" "$CD_BRIDGE"; do
		if ip link show "$br" >/dev/null 2>&1; then
			ip link del "$br" || { log "cannot delete bridge $br"; rc=1; }
		fi
	done
	find /sys/fs/cgroup -mindepth 2 -depth -type d \( -path '*/minicri-benchlazy' -o -path '*/minicri-benchlazy/*' \
		-o -path '*/ctrd-benchlazy' -o -path '*/ctrd-benchlazy/*' \) -exec rmdir {} \; 2>/dev/null || true
	# Mounts under the instances' directories are checked by instance_stop (containerd's
	# and stargz's die with their private mount namespace); a connection that was not there
	# before may still be another user's of this machine: named, not failed.
	left=$(comm -13 <(echo "$FUSE_BEFORE") <(fuse_conns))
	[ -z "$left" ] || log "warning: FUSE connections that were not there before: $(echo "$left" | tr '\n' ' ')"
	return $rc
}

bench_traps "$OUT/"

# run_start RUN REGISTRY_ARGS: start the runtime of RUN on a fresh directory and registry;
# sets ENDPOINT and CGROUP.
run_start() {
	local run=$1 args=$2
	case $run in
	minicri | minicri-lazy)
		local extra=''
		[ "$run" = minicri ] || extra=$'[image]\nlazy = true'
		INSTANCE_ARTIFACTS=$OUT/$run # read by instance_stop
		INSTANCE_CONFIG_EXTRA=$extra INSTANCE_REGISTRY=test INSTANCE_REGISTRY_ARGS=$args \
			instance_start benchlazy "$MC_BRIDGE" "$MC_SUBNET" bl
		ENDPOINT=$INSTANCE_ENDPOINT CGROUP=$INSTANCE_CGROUP
		;;
	containerd2 | containerd2-stargz)
		local stargz=
		[ "$run" = containerd2 ] || stargz=$BIN2/containerd-stargz-grpc
		CTRD_ARTIFACTS=$OUT/$run # read by ctrd_stop
		CTRD_STARGZ=$stargz CTRD_BIN_DIR=$BIN2 CTRD_REGISTRY_ARGS="-bench=false $args" \
			ctrd_start benchlazy "$CD_BRIDGE" "$CD_SUBNET" cl
		"$CRIBENCH" pushpause -registry "$CTRD_REGISTRY" -binary "$ROOT/bin/minicri-pause" -ref "$PAUSE"
		ENDPOINT=$CTRD_ENDPOINT CGROUP=$CTRD_CGROUP
		;;
	*)
		log "unknown run $run"
		return 1
		;;
	esac
}

run_stop() {
	case $1 in
	minicri*) instance_stop ;;
	*) ctrd_stop ;;
	esac
}

# measure RUN TAG ROUND: one cold start of image TAG on a fresh runtime of RUN.
measure() {
	local run=$1 tag=$2 i=$3 ref logdir
	ref=$(image_ref "$tag")
	if [ "$DROP" = 1 ]; then
		sync
		echo 3 >/proc/sys/vm/drop_caches
	fi
	run_start "$run" "$(registry_flag "$tag") -latency $LATENCY -rate $RATE"
	logdir=$(mktemp -d "/tmp/bl-logs.XXXXX")
	instance_run "$CRIBENCH" lazy -endpoint "$ENDPOINT" -runtime "$run" -image "$ref" \
		-log-dir "$logdir" -cgroup-parent "$CGROUP" -first ready -done done -warm "$WARM" \
		-out "$RES/lazy-$run-$tag-$i.json" || { rm -rf "$logdir"; return 1; }
	rm -rf "$logdir"
	run_stop "$run"
}

# prebuild: the images built once into the registry's layer cache before any instance
# starts (the first build of the 1 GiB image takes minutes; instances wait for theirs).
prebuild() {
	local flags=() tag pid i
	for tag in "${IMAGES[@]}"; do flags+=("$(registry_flag "$tag")"); done
	log "building the images (cached in /var/cache/minicri-tools/images)"
	"$INSTANCE_REGISTRY_BIN" -addr 127.0.0.1:0 -bench=false "${flags[@]}" </dev/null >"$OUT/prebuild.log" 2>&1 &
	pid=$!
	for ((i = 0; ; i++)); do
		grep -qs ' serving .* references on ' "$OUT/prebuild.log" && break
		proc_alive "$pid" || { cat "$OUT/prebuild.log" >&2; log "the registry could not build the images"; return 1; }
		sleep 0.5
	done
	kill -TERM "$pid"
	wait "$pid" || true
}

start=$(date +%s)
for tag in "${IMAGES[@]}"; do image_ref "$tag" >/dev/null; done
BIN2=$(BENCH_TOOLS_STARGZ=1 "$ROOT/hack/bench-tools.sh")
rm -rf "$OUT"
mkdir -p "$RES"
export INSTANCE_REGISTRY_BIN=$ROOT/_output/bin/registry # containerd.sh uses the same
(cd "$ROOT" && go build -o "$INSTANCE_REGISTRY_BIN" ./test/registry)
FUSE_BEFORE=$(fuse_conns)
prebuild

for ((i = 1; i <= ROUNDS; i++)); do
	for tag in "${IMAGES[@]}"; do
		for run in "${RUNS[@]}"; do
			log "== round $i/$ROUNDS: $tag: $run"
			measure "$run" "$tag" "$i"
		done
	done
done

"$CRIBENCH" lazyreport -dir "$RES" -runs "$(IFS=,; echo "${RUNS[*]}")" \
	-link "; registry at $((RATE / 1000000)) MB/s per connection, $LATENCY per request" | tee "$OUT/report.txt"
log "done in $(($(date +%s) - start))s; results in $RES, table in $OUT/report.txt"

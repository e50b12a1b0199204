#!/usr/bin/env bash
# hack/bench.sh CRIBENCH [pods flags...] — `make bench`: minicri against Debian's
# containerd 1.6 + runc and containerd 2.4 + runc 1.5 (built from the Go module proxy by
# hack/bench-tools.sh), in one run, each on private directories, socket and offline test
# registry (test/registry):
#
#   1. pods: N sequential pod lifecycles timed per CRI step, P pods started in parallel,
#      memory (PSS) of the runtime with 0 and P pods   (test/bench/cribench pods);
#      minicri runs with [metrics] on: the per-step breakdown comes from its endpoint
#   2. scale: 110 pods (20 starting at a time): time, CPU, PSS; then an exec probe per pod
#      every 10 s for BENCH_EXEC_WINDOW (2m): the runtime's CPU (cribench scale;
#      BENCH_SCALE=0 skips it)
#   3. pull: cold PullImage of docker.io/minicri/bench:1g (1 GiB, 10 layers), BENCH_PULLS
#      times per runtime, each on a fresh instance with an empty store (cribench pull)
#   4. minicri only: checkpoint/restore of a busybox counter and a 500 MiB process and a
#      pod migration within one instance, 5 rounds each, ~40 s (cribench ckpt; the same
#      as `make bench-ckpt`; BENCH_CKPT=0 skips it); appended to the report
#   5. the comparison table                              (test/bench/cribench report)
#   6. lazy pulls: hack/bench-lazy.sh (make bench-lazy) on the 1 GiB eStargz image only,
#      BENCH_PULLS rounds: PullImage to first log line and to done, minicri lazy and whole,
#      containerd 2.4 with overlayfs and with stargz-snapshotter; its table appended to the
#      report (BENCH_LAZY=0 skips; make bench-lazy adds the 50 MB image)
#
# minicri: hack/instance.sh (bridge mcri-bn0, 10.198.0.0/16, cgroup parent /minicri-bench).
# containerd 1.6 and 2.4: hack/containerd.sh (bridge ctrd-bn0, 10.197.0.0/16, cgroup parent
# /ctrd-bench; never running at the same time); 1.6 installed with apt when missing.
# containerd's pause image is bin/minicri-pause pushed to its registry (see cribench
# pushpause), so all runtimes hold pod namespaces with the same static process.
# CPU: each daemon runs in its own cpuacct cgroup (/sys/fs/cgroup/cpuacct/bench-rt-NAME,
# created and removed here; shims, monitors and runc inherit it), read with the pods'
# cgroup parent. Results: _output/bench/.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
CRIBENCH=${1:?usage: hack/bench.sh CRIBENCH [pods flags...]}
shift
PULLS=${BENCH_PULLS:-3}
SCALE=${BENCH_SCALE:-110}
CKPT=${BENCH_CKPT:-1}
LAZY=${BENCH_LAZY:-1}
EXEC_WINDOW=${BENCH_EXEC_WINDOW:-2m}
OUT=$ROOT/_output/bench
RES=$OUT/results
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.36.1-1
PAUSE=registry.k8s.io/pause:3.9
BIGIMAGE=docker.io/minicri/bench:1g
MC_BRIDGE=mcri-bn0 MC_SUBNET=10.198.0.0/16
CD_BRIDGE=ctrd-bn0 CD_SUBNET=10.197.0.0/16
CPU_CG=/sys/fs/cgroup/cpuacct
RUNTIMES=(minicri containerd containerd2)
# What this script's runtimes may leave in nftables/iptables: their names and subnets.
OWN_RULES="$MC_BRIDGE|$CD_BRIDGE|10\.198\.|10\.197\.|minicri_minicri_bench|ctrd-bench"

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=hack/containerd.sh disable=SC1091
. "$ROOT/hack/containerd.sh"
export INSTANCE_ARTIFACTS=$OUT/minicri CTRD_ARTIFACTS=$OUT/containerd
# minicri logs at info like containerd; its per-step timings come from [metrics].
export INSTANCE_LOG_LEVEL=info
export INSTANCE_CONFIG_EXTRA='[metrics]
address = "127.0.0.1:0"'

log() { echo "bench: $*" >&2; }

# own_rules: nftables tables and iptables rules that name this benchmark's networks.
own_rules() {
	{
		nft list tables 2>/dev/null || true
		iptables-save 2>/dev/null | grep -v '^#' || true
	} | grep -E "$OWN_RULES" || true
}

# cleanup_host: the bridges of the runtimes (none deletes its bridge), an empty
# /minicri-bench cgroup tree, the daemons' cpuacct cgroups, and a check that no rules of
# ours are left.
cleanup_host() {
	local rc=0 br left rt
	for br in "$MC_BRIDGE" "$CD_BRIDGE"; do
		if ip link show "$br" >/dev/null 2>&1; then
			ip link del "$br" || { log "cannot delete bridge $br"; rc=1; }
		fi
	done
	find /sys/fs/cgroup -mindepth 2 -depth -type d \( -path '*/minicri-bench' -o -path '*/minicri-bench/*' \) \
		-exec rmdir {} \; 2>/dev/null || true
	for rt in "${RUNTIMES[@]}"; do
		[ ! -d "$CPU_CG/bench-rt-$rt" ] || rmdir "$CPU_CG/bench-rt-$rt" || { log "cannot remove $CPU_CG/bench-rt-$rt"; rc=1; }
	done
	left=$(own_rules)
	if [ -n "$left" ] && [ "$left" != "${RULES_BEFORE:-}" ]; then
		log "LEAK: nftables/iptables entries of this benchmark:"
		while IFS= read -r l; do echo "    $l" >&2; done <<<"$left"
		rc=1
	fi
	return $rc
}

bench_traps "$OUT/{minicri,containerd,containerd2}/"

# cpu_cgroup RT: a fresh cpuacct cgroup for runtime RT's daemon ("" without cgroup v1
# cpuacct: the CPU figures then read 0).
cpu_cgroup() {
	local d=$CPU_CG/bench-rt-$1
	if [ ! -d "$CPU_CG" ]; then
		log "no $CPU_CG: CPU is not measured"
		return 0
	fi
	[ ! -d "$d" ] || rmdir "$d"
	mkdir "$d"
	echo "$d"
}

# rt_start RT [REGISTRY_ARGS]: start runtime RT; sets ENDPOINT, PID, MATCH, CGROUP, CPUCG,
# PAUSE_ARGS and METRICS (minicri only).
rt_start() {
	local rt=$1 i
	CPUCG=$(cpu_cgroup "$rt")
	METRICS= PAUSE_ARGS=()
	case $rt in
	minicri)
		INSTANCE_REGISTRY=bench INSTANCE_REGISTRY_ARGS=${2:-} instance_start bench "$MC_BRIDGE" "$MC_SUBNET" bn
		[ -z "$CPUCG" ] || echo "$INSTANCE_PID" >"$CPUCG/cgroup.procs"
		ENDPOINT=$INSTANCE_ENDPOINT PID=$INSTANCE_PID MATCH=$INSTANCE_TMP/state CGROUP=$INSTANCE_CGROUP
		for ((i = 0; i < 50; i++)); do
			METRICS=$(sed -n 's|.*"msg":"metrics serving","address":"\([^"]*\)".*|http://\1/metrics|p' "$INSTANCE_LOG" | tail -n 1)
			[ -z "$METRICS" ] || break
			sleep 0.1
		done
		[ -n "$METRICS" ] || { log "minicri logged no metrics address"; return 1; }
		;;
	containerd | containerd2)
		local bindir=
		[ "$rt" = containerd ] || bindir=$BIN2
		CTRD_ARTIFACTS=$OUT/$rt # read by ctrd_stop
		CTRD_BIN_DIR=$bindir CTRD_CPU_CGROUP=$CPUCG CTRD_REGISTRY_ARGS=${2:-} ctrd_start bench "$CD_BRIDGE" "$CD_SUBNET" cb
		"$CRIBENCH" pushpause -registry "$CTRD_REGISTRY" -binary "$ROOT/bin/minicri-pause" -ref "$PAUSE"
		ENDPOINT=$CTRD_ENDPOINT PID=$CTRD_PID MATCH=$CTRD_SOCK CGROUP=$CTRD_CGROUP
		PAUSE_ARGS=(-pause-image "$PAUSE")
		;;
	esac
}

rt_stop() {
	case $1 in
	minicri) instance_stop ;;
	*) ctrd_stop ;;
	esac
	[ ! -d "$CPU_CG/bench-rt-$1" ] || rmdir "$CPU_CG/bench-rt-$1"
}

start=$(date +%s)
ctrd_install
BIN2=$("$ROOT/hack/bench-tools.sh")
rm -rf "$RES" "$OUT/ckpt.txt" "$OUT/minicri" "$OUT/containerd" "$OUT/containerd2"
mkdir -p "$RES"
(cd "$ROOT" && go build -o "$ROOT/_output/bin/registry" ./test/registry)
RULES_BEFORE=$(own_rules)
[ -z "$RULES_BEFORE" ] || log "warning: entries matching this benchmark exist before it runs: $RULES_BEFORE"

# ---- 1. pods and 2. scale, one instance per runtime ---------------------------------
for rt in "${RUNTIMES[@]}"; do
	log "== 1. pods: $rt"
	rt_start "$rt"
	instance_run "$CRIBENCH" pods -endpoint "$ENDPOINT" -runtime "$rt" -image "$IMAGE" "${PAUSE_ARGS[@]}" \
		-cgroup-parent "$CGROUP" -mem-pid "$PID" -mem-match "$MATCH" ${METRICS:+-metrics "$METRICS"} \
		-out "$RES/pods-$rt.json" "$@"
	if [ "$SCALE" -gt 0 ]; then
		log "== 2. $SCALE pods and exec probes: $rt"
		instance_run "$CRIBENCH" scale -endpoint "$ENDPOINT" -runtime "$rt" -image "$IMAGE" "${PAUSE_ARGS[@]}" \
			-n "$SCALE" -cgroup-parent "$CGROUP" -mem-pid "$PID" -mem-match "$MATCH" \
			-cpu-cgroups "$CPUCG,$CPU_CG$CGROUP" -exec-window "$EXEC_WINDOW" -out "$RES/scale-$rt.json"
	fi
	rt_stop "$rt"
done

# ---- 3. cold pulls, alternating, each on a fresh instance --------------------------
for ((i = 1; i <= PULLS; i++)); do
	for rt in "${RUNTIMES[@]}"; do
		log "== 3. pull $i/$PULLS: $rt"
		rt_start "$rt" -bench1g
		instance_run "$CRIBENCH" pull -endpoint "$ENDPOINT" -runtime "$rt" -image "$BIGIMAGE" \
			-cpu-cgroups "$CPUCG" -out "$RES/pull-$rt-$i.json"
		rt_stop "$rt"
	done
done

# ---- 4. checkpoint/restore, minicri only ---------------------------------------------
if [ "$CKPT" = 1 ]; then
	log "== 4. checkpoint/restore: minicri"
	rt_start minicri
	instance_run "$CRIBENCH" ckpt -endpoint "$ENDPOINT" -runtime minicri -image "$IMAGE" \
		-cgroup-parent "$CGROUP" -out "$RES/ckpt-minicri.json" >"$OUT/ckpt.txt"
	cat "$OUT/ckpt.txt" >&2
	rt_stop minicri
fi

# ---- 6. lazy pulls (its own instances, bridges and registries; a table of its own) ---
if [ "$LAZY" = 1 ]; then
	log "== 6. lazy pulls: hack/bench-lazy.sh, 1 GiB eStargz image, $PULLS round(s)"
	BENCH_LAZY_IMAGES=1g BENCH_LAZY_ROUNDS=$PULLS "$ROOT/hack/bench-lazy.sh" "$CRIBENCH" >/dev/null
fi

# ---- 5. report -----------------------------------------------------------------------
"$CRIBENCH" report -dir "$RES" -runtimes "$(IFS=,; echo "${RUNTIMES[*]}")" | tee "$OUT/report.txt"
[ "$CKPT" != 1 ] || tee -a "$OUT/report.txt" <"$OUT/ckpt.txt"
[ "$LAZY" != 1 ] || tee -a "$OUT/report.txt" <"$ROOT/_output/bench-lazy/report.txt"
if [ -f "$ROOT/_output/bench-scale/report.txt" ]; then # make bench-scale's last table (not run here)
	echo "(the last make bench-scale, $(date -u -r "$ROOT/_output/bench-scale/report.txt" +%FT%RZ):)"
	cat "$ROOT/_output/bench-scale/report.txt"
fi
log "done in $(($(date +%s) - start))s; results in $RES, table in $OUT/report.txt"

#!/usr/bin/env bash
# hack/bench-scale.sh [CRIBENCH] — `make bench-scale`: SCALE_REPLICAS (110) pods through the
# kubelet, minicri against Debian's containerd 1.6 + runc and containerd 2.4 + runc 1.5
# (hack/bench-tools.sh), one after the other in the same run. For each runtime:
#
#   1. test/cluster/up.sh with one node (maxPods 110), CLUSTER_OUT=_output/bench-scale/cluster-RT;
#      the node's runtime daemon moved into a fresh cpuacct cgroup (benchscale-rt-RT, made and
#      removed here) before any pod exists: its monitors or shims, runc and conmon-like helpers
#      inherit it; the CPU of the pods' cgroup parent (the kubelet's cgroupRoot: pause and
#      exec'd processes) is added, as hack/bench.sh does. containerd's pause image is
#      bin/minicri-pause (cribench pushpause), as in make bench; both images are pulled first.
#   2. a Deployment of SCALE_REPLICAS busybox `sleep` pods (the workload, not counted in PSS):
#      time from kubectl apply to all Running, the runtime's CPU seconds meanwhile, its PSS
#      (daemon + monitors/shims + pause: cribench mem) before and with the pods; then the
#      Deployment is deleted: time until every pod is gone.
#   3. the same pods with an exec readiness probe (sh -c 'exit 0', every 10 s): once all are
#      Ready, the runtime's CPU over BENCH_EXEC_WINDOW (2m) and the probes the kubelet ran in
#      it (its prober_probe_total, through the API server's node proxy); then deleted.
#   4. test/cluster/down.sh (it checks that nothing is left), the cpuacct cgroup removed.
#
# Prints the table and writes it to _output/bench-scale/report.txt (logs and per-runtime
# figures next to it). Environment: SCALE_REPLICAS (110), BENCH_EXEC_WINDOW (2m; 30s, 120),
# BENCH_IDLE_WINDOW (30: seconds with the pods and no probes, the runtime's CPU scaled to the
# window: subtracted from the probe window's for the net CPU per probe), BENCH_SCALE_RUNTIMES
# ("minicri containerd containerd2"), BENCH_SCALE_REPORT_ONLY=1 (no run: the table again from
# the figures the last runs left in _output/bench-scale/RT.facts). ~6-12 min per runtime here.
set -euo pipefail
shopt -s inherit_errexit
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/goenv.sh"
CRIBENCH=${1:-$ROOT/_output/bin/cribench}
REPLICAS=${SCALE_REPLICAS:-110}
WINDOW=${BENCH_EXEC_WINDOW:-2m}
read -r -a RUNTIMES <<<"${BENCH_SCALE_RUNTIMES:-minicri containerd containerd2}"
OUT=$ROOT/_output/bench-scale
CPU_CG=/sys/fs/cgroup/cpuacct
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.36.1-1
PAUSE=registry.k8s.io/pause:3.9
NS=bench-scale
: "${CRICTL:=$ROOT/_output/tools/crictl}"
CRICTL_CONFIG=$OUT/crictl.yaml # empty: no /etc/crictl.yaml or tools-dir config

log() { echo "bench-scale: $*" >&2; }
now() { date +%s.%N; }
# sub A B: B - A with 2 decimals.
sub() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", b - a }'; }

[ "$(id -u)" = 0 ] || { log "needs root"; exit 1; }
[ -x "$CRIBENCH" ] || { log "$CRIBENCH missing (make bench-scale builds it)"; exit 1; }
[[ $REPLICAS =~ ^[1-9][0-9]*$ ]] && [ "$REPLICAS" -le 110 ] || { log "SCALE_REPLICAS=$REPLICAS: want 1-110 (maxPods)"; exit 2; }
case $WINDOW in
*m) WINDOW_S=$((${WINDOW%m} * 60)) ;;
*s) WINDOW_S=${WINDOW%s} ;;
*) WINDOW_S=$WINDOW ;;
esac
[[ $WINDOW_S =~ ^[1-9][0-9]*$ ]] || { log "BENCH_EXEC_WINDOW=$WINDOW: want Ns, Nm or N (seconds)"; exit 2; }
IDLE_S=${BENCH_IDLE_WINDOW:-30}
[[ $IDLE_S =~ ^[1-9][0-9]*$ ]] || { log "BENCH_IDLE_WINDOW=$IDLE_S: want seconds"; exit 2; }
[ -d "$CPU_CG" ] || { log "no $CPU_CG (cgroup v1 cpuacct): CPU cannot be measured"; exit 1; }
for rt in "${RUNTIMES[@]}"; do
	case $rt in minicri | containerd | containerd2) ;; *) log "unknown runtime $rt"; exit 2 ;; esac
done

CL_OUT_CUR= # the cluster that is up (its CLUSTER_OUT)
CG_CUR=     # the cpuacct cgroup this script made and has not removed yet

# teardown: the current cluster down (down.sh checks for leaks), then our cpuacct cgroup.
teardown() {
	local rc=0
	if [ -n "$CL_OUT_CUR" ]; then
		CLUSTER_OUT=$CL_OUT_CUR "$ROOT/test/cluster/down.sh" >>"$CL_OUT_CUR.log" 2>&1 ||
			{ log "down.sh failed or found leaks: see $CL_OUT_CUR.log"; rc=1; }
		CL_OUT_CUR=
	fi
	if [ -n "$CG_CUR" ] && [ -d "$CG_CUR" ]; then
		rmdir "$CG_CUR" || { log "cannot remove $CG_CUR (tasks: $(tr '\n' ' ' <"$CG_CUR/cgroup.procs"))"; rc=1; }
	fi
	CG_CUR=
	return $rc
}
on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	teardown || rc=1
	[ $rc -eq 0 ] || log "FAILED (exit $rc); logs in $OUT/"
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- one runtime ---------------------------------------------------------------------

# node_fact KEY: the value the cluster's state file recorded for node-1.
node_fact() { sed -n "s/^cl_node node-1 .*\b$1=\([^ ]*\).*/\1/p" "$CL_OUT_CUR/state" | tail -n 1; }

kc() { "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG" --request-timeout 60s "$@"; }

# cpu: CPU seconds charged to the runtime's cpuacct cgroup and the pods' cgroup parent.
cpu() {
	local d ns total=0
	for d in "$CG_CUR" "$CPU_CG$POD_CG"; do
		[ -f "$d/cpuacct.usage" ] || continue
		ns=$(cat "$d/cpuacct.usage")
		total=$(awk -v t="$total" -v n="$ns" 'BEGIN { printf "%.3f", t + n / 1e9 }')
	done
	echo "$total"
}

# mem TAG: the runtime's PSS by role (cribench mem), logged and saved; prints the total KiB
# and that of the per-pod processes (monitors or shims + pause).
mem() {
	local line
	sleep 3 # let the helpers settle after the last pod change
	line=$("$CRIBENCH" mem -pid "$DAEMON" -match "$MATCH" -out "$OUT/$RT-mem-$1.json")
	log "$RT: PSS $1: $line"
	awk '{ split($6, h, "/"); split($8, p, "/"); print $2, h[2] + p[2] }' <<<"$line"
}

# deployment NAME [probe]: SCALE_REPLICAS busybox sleep pods, optionally with an exec
# readiness probe every 10 s.
deployment() {
	cat <<-EOF
		apiVersion: apps/v1
		kind: Deployment
		metadata: {name: $1}
		spec:
		  replicas: $REPLICAS
		  selector: {matchLabels: {app: $1}}
		  template:
		    metadata: {labels: {app: $1}}
		    spec:
		      terminationGracePeriodSeconds: 1
		      enableServiceLinks: false
		      automountServiceAccountToken: false
		      containers:
		      - name: sleep
		        image: $IMAGE
		        command: [sleep, "3600"]
		        resources: {requests: {cpu: 1m, memory: 4Mi}}
	EOF
	[ "${2:-}" != probe ] || cat <<-EOF
		        readinessProbe:
		          exec: {command: [sh, -c, "exit 0"]}
		          periodSeconds: 10
		          timeoutSeconds: 5
	EOF
}

# count WHAT: pods of the namespace that are Running, Ready, or exist at all ("?" when
# kubectl failed).
count() {
	local l
	case $1 in
	running) l=$(kc -n $NS get pods --field-selector=status.phase=Running -o name) ;;
	ready) l=$(kc -n $NS get pods -o jsonpath='{range .items[*]}{.status.conditions[?(@.type=="Ready")].status}{"\n"}{end}') &&
		l=$(grep True <<<"$l" || true) ;;
	any) l=$(kc -n $NS get pods -o name) ;;
	esac || { echo "?"; return 0; }
	grep -c . <<<"$l" || true
}

# wait_count WHAT N TIMEOUT: until count WHAT is N.
wait_count() {
	local end=$((SECONDS + $3)) c
	while :; do
		c=$(count "$1")
		[ "$c" != "$2" ] || return 0
		[ $SECONDS -lt $end ] || { log "$RT: $c pods $1 after $3 s, want $2"; kc -n $NS get pods -o wide | tail -n 20 >&2; return 1; }
		sleep 1
	done
}

# probes: "COUNT SECONDS": the readiness probes the kubelet has run and the sum of their
# durations (its /metrics/probes through the API server's node proxy), or "" if unknown.
probes() {
	kc get --raw /api/v1/nodes/node-1/proxy/metrics/probes 2>/dev/null | awk '
		/probe_type="Readiness"/ && /^prober_probe_total\{/ { n += $NF; f = 1 }
		/probe_type="Readiness"/ && /^prober_probe_duration_seconds_sum\{/ { d += $NF }
		END { if (f) printf "%d %.6f\n", n, d }' || true
}

# fact KEY VALUE: one figure of this runtime, for the table.
fact() {
	echo "$1=$2" >>"$OUT/$RT.facts"
	log "$RT: $1 = $2"
}

run_runtime() {
	RT=$1
	local cl_out=$OUT/cluster-$RT crt=$RT bindir= t0 c0 p0 p1 c1 m0 mn ref
	[ "$RT" = minicri ] || crt=containerd
	[ "$RT" != containerd2 ] || bindir=$BIN2
	rm -f "$OUT/$RT.facts" "$OUT/$RT"-mem-*.json
	if [ -f "$cl_out/state" ]; then
		log "$RT: a cluster of an earlier run is left in $cl_out: removing it"
		CLUSTER_OUT=$cl_out "$ROOT/test/cluster/down.sh" >>"$cl_out.log" 2>&1
	fi
	log "== $RT: cluster up (1 node; log $cl_out.log)"
	CL_OUT_CUR=$cl_out
	CLUSTER_NODES=1 CLUSTER_RUNTIME=$crt CLUSTER_OUT=$cl_out CLUSTER_CTRD_BIN_DIR=$bindir \
		"$ROOT/test/cluster/up.sh" >"$cl_out.log" 2>&1 || { log "$RT: up.sh failed: see $cl_out.log"; return 1; }
	# shellcheck disable=SC1091
	. "$cl_out/env"
	DAEMON=$(node_fact inst_pid)
	POD_CG=$(node_fact cgroup)
	case $crt in
	minicri) MATCH=$(node_fact inst_tmp)/state ;;
	containerd) MATCH=$(node_fact inst_tmp)/containerd.sock ;;
	esac
	[ "$(cat "/proc/$DAEMON/comm" 2>/dev/null)" = "$crt" ] || { log "$RT: pid $DAEMON is not $crt"; return 1; }
	[ "$(count any)" = 0 ] || { log "$RT: pods exist before the benchmark"; return 1; }

	# The daemon in a fresh cpuacct cgroup, before any pod: its helpers inherit it.
	CG_CUR=$CPU_CG/benchscale-rt-$RT
	[ ! -d "$CG_CUR" ] || rmdir "$CG_CUR"
	mkdir "$CG_CUR"
	echo "$DAEMON" >"$CG_CUR/cgroup.procs"
	log "$RT: daemon pid $DAEMON in $CG_CUR; pods' cgroup parent $POD_CG"

	# The same static pause for both runtimes (minicri uses bin/minicri-pause, not the image);
	# the images pulled untimed, as cribench does.
	"$CRIBENCH" pushpause -registry "${CLUSTER_REGISTRY#http://}" -binary "$ROOT/bin/minicri-pause" -ref "$PAUSE" >/dev/null
	for ref in "$PAUSE" "$IMAGE"; do
		"$CRICTL" --config "$CRICTL_CONFIG" --runtime-endpoint "$CLUSTER_NODE_ENDPOINT_node_1" --image-endpoint "$CLUSTER_NODE_ENDPOINT_node_1" \
			--timeout 120s pull "$ref" >/dev/null
	done
	fact run_at "$(date -u +%H:%MZ)"
	kc create namespace $NS >/dev/null
	kc -n $NS wait --for=create serviceaccount/default --timeout=60s >/dev/null
	m0=$(mem 0)

	# ---- SCALE_REPLICAS pods ----
	log "$RT: $REPLICAS pods"
	c0=$(cpu)
	t0=$(now)
	deployment scale | kc -n $NS apply -f - >/dev/null
	wait_count running "$REPLICAS" 900
	fact start_s "$(sub "$t0" "$(now)")"
	fact start_cpu_s "$(sub "$c0" "$(cpu)")"
	mn=$(mem "$REPLICAS")
	fact pss0_kib "${m0% *}"
	fact pssn_kib "${mn% *}"
	fact per_pod_kib "$(awk -v a="${m0% *}" -v b="${mn% *}" -v n="$REPLICAS" 'BEGIN { printf "%.0f", (b - a) / n }')"
	fact helpers_per_pod_kib "$(awk -v a="${m0#* }" -v b="${mn#* }" -v n="$REPLICAS" 'BEGIN { printf "%.0f", (b - a) / n }')"
	# What the runtime burns with the pods and no probes (the kubelet's relists and status calls).
	c0=$(cpu)
	sleep "$IDLE_S"
	IDLE_CPU=$(sub "$c0" "$(cpu)")
	fact idle_cpu_s "$(awk -v c="$IDLE_CPU" -v w="$WINDOW_S" -v iw="$IDLE_S" 'BEGIN { printf "%.2f", c * w / iw }')"
	c0=$(cpu)
	t0=$(now)
	kc -n $NS delete deployment scale --wait=false >/dev/null
	wait_count any 0 900
	fact remove_s "$(sub "$t0" "$(now)")"
	fact remove_cpu_s "$(sub "$c0" "$(cpu)")"

	# ---- the same with an exec readiness probe ----
	log "$RT: $REPLICAS pods with an exec readiness probe every 10 s"
	t0=$(now)
	deployment probe probe | kc -n $NS apply -f - >/dev/null
	wait_count ready "$REPLICAS" 900
	fact ready_s "$(sub "$t0" "$(now)")"
	sleep 10 # past the first probes of the last pods
	p0=$(probes)
	c0=$(cpu)
	t0=$(now)
	sleep "$WINDOW_S"
	c1=$(cpu)
	p1=$(probes)
	fact window_s "$(sub "$t0" "$(now)")"
	fact window_load "$(cut -d' ' -f1 /proc/loadavg)"
	fact exec_cpu_s "$(sub "$c0" "$c1")"
	local n=0
	[ -z "$p0" ] || [ -z "$p1" ] || n=$((${p1% *} - ${p0% *}))
	if [ "$n" -gt 0 ]; then
		fact probes "$n"
		fact probe_ms "$(awk -v a="${p0#* }" -v b="${p1#* }" -v n="$n" 'BEGIN { printf "%.1f", (b - a) * 1000 / n }')"
		fact exec_cpu_ms_per_probe "$(awk -v c="$(sub "$c0" "$c1")" -v n="$n" 'BEGIN { printf "%.1f", c * 1000 / n }')"
		fact exec_net_ms_per_probe "$(awk -v c="$(sub "$c0" "$c1")" -v i="$IDLE_CPU" -v w="$WINDOW_S" -v iw="$IDLE_S" -v n="$n" \
			'BEGIN { printf "%.1f", (c - i * w / iw) * 1000 / n }')"
	else
		log "$RT: the kubelet's probe count is unknown (metrics/probes)"
	fi
	[ "$(count ready)" = "$REPLICAS" ] || { log "$RT: not all pods Ready after the window"; return 1; }
	t0=$(now)
	kc -n $NS delete deployment probe --wait=false >/dev/null
	wait_count any 0 900
	fact remove_probe_s "$(sub "$t0" "$(now)")"
	kc delete namespace $NS --timeout=120s >/dev/null

	log "$RT: cluster down"
	# A leak at teardown (down.sh killed and removed it) is a finding of the run: reported in
	# the table; the run goes on and fails at the end only when minicri leaked.
	if teardown; then
		fact teardown clean
	else
		fact teardown LEAK
		[ "$RT" != minicri ] || RC=1
	fi
}

# ---- the table ---------------------------------------------------------------------------

# get RT KEY: a figure of runtime RT ("-" if missing).
get() { sed -n "s/^$2=//p" "$OUT/$1.facts" 2>/dev/null | tail -n 1 | grep . || echo -; }

report() {
	local rows=(
		"start_s|time to all $REPLICAS Running (s)"
		"start_cpu_s|CPU to start them (s)"
		"pss0_kib|PSS 0 pods (KiB)"
		"pssn_kib|PSS $REPLICAS pods (KiB)"
		"per_pod_kib|PSS per pod (KiB)"
		"helpers_per_pod_kib|  of which monitor/shim + pause (KiB)"
		"remove_s|time to remove all (s)"
		"ready_s|with exec probes: time to all Ready (s)"
		"probes|probes run in the window"
		"probe_ms|probe duration, kubelet's mean (ms)"
		"exec_cpu_s|CPU in the ${WINDOW_S} s window (s)"
		"idle_cpu_s|the same window without probes (s)"
		"exec_cpu_ms_per_probe|CPU per probe (ms)"
		"exec_net_ms_per_probe|CPU per probe, idle subtracted (ms)"
		"remove_probe_s|time to remove all (probes) (s)"
		"teardown|cluster down: leak check"
		"run_at|run at (UTC)"
		"window_load|load average after the window"
	)
	local r key label rt hdr
	hdr=$(printf '%-42s' "through the kubelet, 1 node")
	for rt in "${RUNTIMES[@]}"; do hdr+=$(printf ' %12s' "$rt"); done
	for rt in "${RUNTIMES[@]:1}"; do hdr+=$(printf ' %14s' "${RUNTIMES[0]}/$rt"); done
	echo "$hdr"
	for r in "${rows[@]}"; do
		key=${r%%|*} label=${r#*|}
		line=$(printf '%-42s' "$label")
		for rt in "${RUNTIMES[@]}"; do line+=$(printf ' %12s' "$(get "$rt" "$key")"); done
		for rt in "${RUNTIMES[@]:1}"; do
			line+=$(awk -v a="$(get "${RUNTIMES[0]}" "$key")" -v b="$(get "$rt" "$key")" \
				'BEGIN { if (a !~ /^[0-9.]+$/ || b !~ /^[0-9.]+$/ || b + 0 == 0) printf " %14s", "-"; else printf " %14.2f", a / b }')
		done
		echo "$line"
	done
}

start=$SECONDS
RC=0
mkdir -p "$OUT"
: >"$CRICTL_CONFIG"
BIN2=
if [ "${BENCH_SCALE_REPORT_ONLY:-0}" != 1 ]; then
	if [[ " ${RUNTIMES[*]} " == *" containerd2 "* ]]; then
		BIN2=$("$ROOT/hack/bench-tools.sh")
	fi
	for rt in "${RUNTIMES[@]}"; do
		run_runtime "$rt"
	done
fi
{
	if [ "${BENCH_SCALE_REPORT_ONLY:-0}" = 1 ]; then
		echo "make bench-scale: $REPLICAS pods through the kubelet (the figures the last runs left in $OUT)"
	else
		echo "make bench-scale: $REPLICAS pods through the kubelet ($(date -u +%Y-%m-%dT%H:%MZ), $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg))"
	fi
	report
	echo "CPU: the runtime's cpuacct cgroup (daemon, monitors or shims, runc) + the pods' cgroup parent (pause, probes);"
	echo "PSS: daemon + monitors or shims + pause (cribench mem), the workload (sleep) not counted."
} | tee "$OUT/report.txt"
log "done in $((SECONDS - start)) s; report in $OUT/report.txt"
exit $RC

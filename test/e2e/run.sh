#!/usr/bin/env bash
# test/e2e/run.sh — a stock kubelet (and control plane) drives minicri (`make e2e`).
#
#   standalone  the kubelet alone with a static pod manifest directory, no API server
#   cluster     etcd, kube-apiserver, kube-controller-manager, kube-scheduler and the
#               kubelet registered as a node; kubectl apply/logs/exec/port-forward/attach,
#               a Deployment, a Job, a crashing pod, a CDI device, a checkpoint through the
#               kubelet's API restored as a new pod from a checkpoint image (ckpt.sh),
#               deletion and leak checks
#
# Kubernetes and etcd are built from the Go module proxy by test/e2e/tools.sh (cached in
# /var/cache/minicri-tools). Everything listens on 127.0.0.1 except the kubelet, which
# registers with (and listens on) the machine's own non-loopback address: the kubelet
# refuses a loopback node IP. Images come from the offline registry (test/registry)
# through minicri's registry mirrors, so the manifests keep their ordinary names.
#
# Environment:
#   E2E_MODES       modes to run, in order (default "standalone cluster")
#   E2E_OUT         logs and results (default _output/e2e)
#   E2E_KUBELET_V   kubelet verbosity (default 5; 10 also logs every CRI request)
#   E2E_KEEP=1      keep the temp dirs
#   E2E_CLUSTER_HOOK  cluster mode: run this command (KUBECONFIG, E2E_NODE_NAME, E2E_NODE_IP,
#                   MINICRI_LOG, KUBELET_LOG set) instead of the mode's own checks
#   E2E_PAUSE_ON_FAIL=SECONDS  sleep after a failed check (to look around)
#   E2E_FEATURE_GATES  kubelet feature gates, "Name=true,Other=false" (default: ContainerCheckpoint=true,
#                   which ckpt.sh uses; =false skips that case); with
#                   EventedPLEG=true the standalone mode also checks that the kubelet took the CRI's
#                   event stream and pod statuses (no fallback, no per-container polling):
#                   `make e2e-evented`
#   E2E_CGROUP_DRIVER  "" (default: the kubelet takes the driver from minicri, cgroupfs
#                   here) or "systemd": the kubelet runs with cgroupDriver: systemd and the
#                   default cgroupRoot (pods in kubepods.slice), minicri with its default
#                   cgroup_driver (auto: systemd where systemd is PID 1). Needs systemd as
#                   PID 1 and cgroup v2: the VM lab (test/vm, vmtest step e2e-systemd)
# Exits non-zero if any check fails; prints the failed checks, timings and the CRI calls.
# shellcheck disable=SC2016 # single-quoted eval strings expand when the check runs
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
E2E_DIR=$ROOT/test/e2e
OUT=${E2E_OUT:-$ROOT/_output/e2e}
MODES=${E2E_MODES:-standalone cluster}
KUBELET_V=${E2E_KUBELET_V:-5}
CRICTL=${CRICTL:-$ROOT/_output/tools/crictl}
# The kubelet's cgroup root (and minicri's cgroup parent for pods that name none): this
# run's own, named once its pod subnet is chosen (below); never created before that.
CGROUP_ROOT=/minicri-e2e-unnamed
CGROUP_DRIVER=${E2E_CGROUP_DRIVER:-cgroupfs}
case $CGROUP_DRIVER in
cgroupfs) ;;
systemd)
	# The node's own shape: kubepods.slice below the root. The machine is the VM lab's
	# throwaway guest, so the suite owns kubepods.slice there.
	CGROUP_ROOT=/
	[ "$(cat /proc/1/comm)" = systemd ] && [ "$(stat -fc %T /sys/fs/cgroup)" = cgroup2fs ] ||
		{ echo "e2e: E2E_CGROUP_DRIVER=systemd needs systemd as PID 1 and cgroup v2 (test/vm)" >&2; exit 1; }
	;;
*) echo "e2e: E2E_CGROUP_DRIVER=$CGROUP_DRIVER: want systemd or empty" >&2; exit 2 ;;
esac
E2E_MODE=setup

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=test/e2e/lib.sh disable=SC1091
. "$E2E_DIR/lib.sh"
# shellcheck source=test/e2e/certs.sh disable=SC1091
. "$E2E_DIR/certs.sh"
# shellcheck source=test/e2e/cdi.sh disable=SC1091
. "$E2E_DIR/cdi.sh"
# shellcheck source=test/e2e/ckpt.sh disable=SC1091
. "$E2E_DIR/ckpt.sh"

[ "$(id -u)" = 0 ] || { echo "e2e: needs root" >&2; exit 1; }
[ -x "$CRICTL" ] || { echo "e2e: $CRICTL missing: run make deps" >&2; exit 1; }
[ -x "$ROOT/bin/minicri" ] || { echo "e2e: bin/minicri missing: run make build" >&2; exit 1; }
# The original stdout/stderr, kept on fds 8/9: a signal can arrive while a function runs
# with its output redirected (`check ... >/dev/null`), and the exit trap must still reach
# the terminal. Long-running children get them closed (proc_start, instance_start below).
exec 8>&1 9>&2
mkdir -p "$OUT"
rm -f "$OUT"/*.log "$OUT"/summary.txt "$OUT"/cri-calls-*.txt

# ---- binaries -----------------------------------------------------------------------
t0=$(e2e_now)
BIN=$("$E2E_DIR/tools.sh" "$OUT/bin")
timing "kubernetes + etcd binaries ready (build or cache)" "$(e2e_since "$t0")"
KUBECTL=$BIN/kubectl

# ---- machine facts --------------------------------------------------------------------
NODE_NAME=$(hostname | tr '[:upper:]' '[:lower:]')
# The node IP: the first global IPv4 address of the default-route interface, else of any
# interface that is not a bridge of a minicri instance.
node_ip() {
	local dev
	dev=$(ip -4 route show default 2>/dev/null | awk '{ for (i = 1; i < NF; i++) if ($i == "dev") { print $(i + 1); exit } }')
	if [ -n "$dev" ]; then
		ip -4 -o addr show dev "$dev" scope global | awk '{ split($4, a, "/"); print a[1]; exit }'
		return
	fi
	ip -4 -o addr show scope global | awk '$2 !~ /^(mcri|minicri|cni|docker|veth)/ { split($4, a, "/"); print a[1]; exit }'
}
NODE_IP=$(node_ip)
[ -n "$NODE_IP" ] || { echo "e2e: no non-loopback IPv4 address for the node" >&2; exit 1; }
e2e_log "node $NODE_NAME, IP $NODE_IP, binaries in $BIN"

# ---- cleanup --------------------------------------------------------------------------
E2E_TMP=$(mktemp -d /tmp/e2k.XXXXX)
KUBELET_ROOTS=()

# pod_logs_remove: the kubelet removes a pod's /var/log/pods dir and /var/log/containers
# links in its GC, a while after the pod; a failed or interrupted run may stop it first.
# Only this suite's pods (namespace default, names e2e-* and static-web-<node>).
pod_logs_remove() {
	local f
	for f in /var/log/pods/default_e2e-* "/var/log/pods/default_static-web-${NODE_NAME}_"*; do
		[ -d "$f" ] || continue
		e2e_log "removing pod log dir left behind: $f"
		rm -rf --one-file-system "$f"
	done
	for f in /var/log/containers/e2e-*_default_* "/var/log/containers/static-web-${NODE_NAME}_default_"*; do
		[ -L "$f" ] && rm -f "$f"
	done
	return 0
}

on_exit() {
	local rc=$? d
	trap - EXIT
	exec 1>&8 2>&9
	set +e
	E2E_MODE=teardown
	proc_stop_all
	for d in "${KUBELET_ROOTS[@]}"; do unmount_tree "$d"; done
	if [ -n "${INSTANCE_LOG:-}" ] && [ -f "$INSTANCE_LOG" ]; then cp "$INSTANCE_LOG" "$OUT/minicri.log"; fi
	export INSTANCE_ARTIFACTS=$OUT
	# Pods left behind (a failed or interrupted run) go first, so that the kubelet's pod
	# and QoS cgroups (which stay after it stops) are empty and can be removed now.
	if [ -n "${INSTANCE_PID:-}" ] && proc_alive "$INSTANCE_PID"; then
		d=$(instance_crictl pods -q 2>/dev/null | tr '\n' ' ')
		if [ -n "${d// /}" ]; then
			e2e_log "removing pods left behind: $d"
			# shellcheck disable=SC2086
			{ instance_crictl stopp $d && instance_crictl rmp $d; } >/dev/null 2>&1 || true
		fi
	fi
	cgroup_root_remove
	if ! instance_stop; then
		E2E_FAILS+=("teardown: minicri did not stop cleanly or left something behind")
	fi
	cgroup_root_remove
	pod_logs_remove
	# minicri leaves its bridge; this run's address on it must not shadow other routes.
	[ -z "${POD_BRIDGE:-}" ] || ip link del "$POD_BRIDGE" 2>/dev/null || true
	for d in "$E2E_TMP"/*.log; do [ -f "$d" ] && cp "$d" "$OUT/"; done
	if [ "${E2E_KEEP:-0}" = 1 ]; then
		e2e_log "keeping $E2E_TMP"
	elif [ -n "$(mounts_under "$E2E_TMP")" ]; then
		e2e_log "not removing $E2E_TMP: mounts remain"
	else
		rm -rf --one-file-system "$E2E_TMP"
	fi
	summary >"$OUT/summary.txt" 2>&1
	cat "$OUT/summary.txt"
	[ $rc -ne 0 ] || [ ${#E2E_FAILS[@]} -eq 0 ] || rc=1
	[ $rc -eq 0 ] && echo "e2e: PASS" || echo "e2e: FAIL (exit $rc); logs in $OUT" >&2
	exit $rc
}
trap on_exit EXIT
trap 'E2E_FAILS+=("interrupted (SIGINT)"); exit 130' INT
trap 'E2E_FAILS+=("interrupted (SIGTERM)"); exit 143' TERM

# ---- CRI call accounting ----------------------------------------------------------------

# cri_mark: the current line count of minicri's log (start of a mode).
cri_mark() { wc -l <"$INSTANCE_LOG"; }

# cri_calls FROM_LINE: calls minicri served since FROM_LINE, with counts, and the failed
# ones with their errors (minicri logs every call: "CRI call" / "CRI call failed").
cri_calls() {
	local from=$1
	echo "CRI calls minicri served (count, method):"
	tail -n "+$((from + 1))" "$INSTANCE_LOG" | grep -o '"msg":"CRI call[^"]*","method":"[^"]*"' |
		sed 's/.*"method":"\/runtime\.v1\.//; s/"$//' | sort | uniq -c | sort -k2 | sed 's/^/    /'
	echo "CRI calls that returned an error (count, method, error):"
	tail -n "+$((from + 1))" "$INSTANCE_LOG" | grep '"msg":"CRI call failed"' |
		sed 's/.*"method":"\/runtime\.v1\.\([^"]*\)".*"err":"\(.\{0,160\}\).*/\1: \2/' |
		sed -E 's/[0-9a-f]{64}/<id>/g' | sort | uniq -c | sed 's/^/    /' || true
}

# kubelet_cri_metrics: the kubelet's own view (kubelet_runtime_operations_*), scraped from
# its /metrics with the admin client certificate.
kubelet_cri_metrics() {
	curl -s --max-time 10 --cacert "$PKI/ca.crt" --cert "$PKI/admin.crt" --key "$PKI/admin.key" \
		"https://$NODE_IP:$KUBELET_PORT/metrics" 2>/dev/null |
		grep -E '^kubelet_runtime_operations_(total|errors_total)\{' |
		sed -E 's/^kubelet_runtime_operations_(total|errors_total)\{.*operation_type="([^"]*)".*\} (.*)$/\1 \2 \3/' |
		awk '{ if ($1 == "total") t[$2] = $3; else e[$2] = $3 } END { for (k in t) printf "    %-28s %6d calls %4d errors\n", k, t[k], e[k] }' | sort
}

# kubelet_cri_errors LOG: the CRI errors the kubelet logged.
kubelet_cri_errors() {
	grep -E 'from runtime service failed|from image service failed|RemoteRuntimeService|RemoteImageService' "$1" |
		grep -E '"[^"]*(failed|Failed)|err=' | sed -E 's/^[IWEF][0-9]{4} [0-9:.]+ +[0-9]+ //; s/[0-9a-f]{64}/<id>/g' |
		cut -c1-220 | sort | uniq -c | sort -rn | head -n 20 | sed 's/^/    /' || true
}

CRI_REPORT=()
cri_report() {
	local mode=$1 from=$2 klog=$3 f=$OUT/cri-calls-$1.txt
	{
		echo "== $mode =="
		echo "(minicri's counts include this suite's own crictl polling: Version, ListPodSandbox,"
		echo " ListContainers, ContainerStatus. The kubelet counts an ExecSync whose command exits"
		echo " non-zero - a failing probe - as an exec_sync error; minicri does not.)"
		cri_calls "$from"
		echo "The kubelet's count (kubelet_runtime_operations_total / _errors_total):"
		kubelet_cri_metrics
		if grep -q '\[Remote\(Runtime\|Image\)Service\] [A-Za-z]*"' "$klog"; then
			echo "CRI calls named in the kubelet's -v=10 log (runtime service; image calls are in the metrics):"
			grep -o '\[Remote\(Runtime\|Image\)Service\] [A-Za-z]*"' "$klog" | tr -d '"' |
				sed 's/Response$//; s/^\[Remote[A-Za-z]*\] //' | sort -u | tr '\n' ' ' | fold -s -w 88 | sed 's/^/    /'
			echo
		fi
		echo "CRI errors in the kubelet's log (count, line):"
		kubelet_cri_errors "$klog"
	} >"$f" 2>&1
	CRI_REPORT+=("$f")
}

summary() {
	local f
	echo "================ e2e summary ================"
	echo "$("$BIN/kubelet" --version 2>/dev/null || echo "Kubernetes ?"), node $NODE_NAME ($NODE_IP)"
	echo "Timings:"
	for f in "${E2E_TIMINGS[@]}"; do echo "    $f"; done
	for f in "${CRI_REPORT[@]}"; do cat "$f"; done
	if [ ${#E2E_FAILS[@]} -eq 0 ]; then
		echo "All checks passed."
	else
		echo "FAILED checks (${#E2E_FAILS[@]}):"
		for f in "${E2E_FAILS[@]}"; do echo "    $f"; done
	fi
}

# ---- minicri ----------------------------------------------------------------------------
PKI=$E2E_TMP/pki
certs_make "$PKI" "$NODE_NAME" "$NODE_IP"
# A /16 no other interface routes (free_subnet16 in lib.sh).
pod_subnet() { free_subnet16 180 189; }
POD_SUBNET=$(pod_subnet) || { echo "e2e: no free 10.180-189.0.0/16 subnet for the pod bridge" >&2; exit 1; }
# The subnet's index names this run's bridge, cgroup root and minicri instance (its cgroup
# parent, whose processes instance_stop kills after a leak): two runs on one machine share
# none of them, so neither's kubelet or cleanup kills the other's pods.
E2E_IDX=$(($(cut -d. -f2 <<<"$POD_SUBNET") - 180))
POD_BRIDGE=mcri-e2e$E2E_IDX
[ "$CGROUP_DRIVER" != cgroupfs ] || CGROUP_ROOT=/minicri-e2e$E2E_IDX
# A bridge of that name left by a crashed run holds no route (the subnet is free): remove it.
ip link del "$POD_BRIDGE" 2>/dev/null || true
cgroup_root_create
# minicri's CDI spec dir, where the suite's device plugin writes its spec (cdi.sh).
E2E_CDI_DIR=$E2E_TMP/cdi
mkdir -p "$E2E_CDI_DIR"
INSTANCE_CDI_DIR=$E2E_CDI_DIR INSTANCE_REGISTRY="test" instance_start "e2e$E2E_IDX" "$POD_BRIDGE" "$POD_SUBNET" e2 8>&- 9>&-
MINICRI_SOCK=$INSTANCE_SOCK
# Mounts an idle minicri keeps (the shared netns pin dir); anything more later is a leak.
MINICRI_BASE_MOUNTS=$(mounts_under "$INSTANCE_TMP" | sort)

crictl() { instance_crictl "$@"; }

# ---- the kubelet ------------------------------------------------------------------------
KUBELET_PORT=$(free_port)
KUBELET_HEALTHZ_PORT=$(free_port)

# kubelet_start MODE [KUBECONFIG]
kubelet_start() {
	local mode=$1 kubeconfig=${2:-} dir=$E2E_TMP/kubelet-$1 args
	minicri_running || return 1
	mkdir -p "$dir/root" "$dir/manifests" "$dir/volume-plugins"
	KUBELET_ROOTS+=("$dir/root")
	KUBELET_MANIFESTS=$dir/manifests
	cat >"$dir/config.yaml" <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		# This machine is cgroup v1 (hybrid): kubelet 1.37 and 1.38 refuse it unless told.
		failCgroupV1: false
		cgroupRoot: $CGROUP_ROOT
		# The kubelet takes the driver from minicri's RuntimeConfig; with systemd, it
		# is also set here (a kubelet that ignores RuntimeConfig would use it).
		$([ "$CGROUP_DRIVER" = systemd ] && echo "cgroupDriver: systemd")
		containerRuntimeEndpoint: unix://$MINICRI_SOCK
		imageServiceEndpoint: unix://$MINICRI_SOCK
		address: $NODE_IP
		port: $KUBELET_PORT
		readOnlyPort: 0
		healthzBindAddress: 127.0.0.1
		healthzPort: $KUBELET_HEALTHZ_PORT
		tlsCertFile: $PKI/kubelet-serving.crt
		tlsPrivateKeyFile: $PKI/kubelet-serving.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: false}
		  x509: {clientCAFile: $PKI/ca.crt}
		authorization:
		  mode: AlwaysAllow
		staticPodPath: $dir/manifests
		fileCheckFrequency: 5s
		volumePluginDir: $dir/volume-plugins
		resolvConf: /etc/resolv.conf
		maxPods: 30
		evictionHard:
		  memory.available: 50Mi
		  nodefs.available: 1%
		  imagefs.available: 1%
		  nodefs.inodesFree: 1%
		imageGCHighThresholdPercent: 99
		imageGCLowThresholdPercent: 98
		nodeStatusUpdateFrequency: 4s
		$(feature_gates_yaml)
	EOF
	args=(--config "$dir/config.yaml" --root-dir "$dir/root" --hostname-override "$NODE_NAME"
		--node-ip "$NODE_IP" --v "$KUBELET_V")
	[ -z "$kubeconfig" ] || args+=(--kubeconfig "$kubeconfig")
	KUBELET_LOG=$E2E_TMP/kubelet-$mode.log
	proc_start kubelet "$KUBELET_LOG" "$BIN/kubelet" "${args[@]}"
	if ! wait_for 90 curl -sf --max-time 2 "http://127.0.0.1:$KUBELET_HEALTHZ_PORT/healthz"; then
		proc_running kubelet || e2e_log "the kubelet exited"
		fail "kubelet serves /healthz within 90s"
		return 1
	fi
	pass "kubelet serves /healthz"
	check "kubelet takes the cgroup driver ($CGROUP_DRIVER) from minicri's RuntimeConfig" \
		grep -q "Using cgroup driver setting received from the CRI runtime.*cgroupDriver=\"$CGROUP_DRIVER\"" "$KUBELET_LOG"
}

# feature_gates_yaml: E2E_FEATURE_GATES as the kubelet config's featureGates map.
feature_gates_yaml() {
	local gate gates=${E2E_FEATURE_GATES:-}
	# The checkpoint case (ckpt.sh) uses the kubelet's checkpoint API: named here (beta and
	# on by default in 1.37 and 1.38) unless E2E_FEATURE_GATES sets it.
	case ",$gates," in *,ContainerCheckpoint=*) ;; *) gates=ContainerCheckpoint=true${gates:+,$gates} ;; esac
	printf 'featureGates:'
	for gate in ${gates//,/ }; do
		printf '\n  %s: %s' "${gate%%=*}" "${gate#*=}"
	done
}

# evented_pleg_checks: with EventedPLEG=true, the kubelet (v1.37, v1.38: the CRI event stream
# requests a relist when a container stops; pod statuses come from PodSandboxStatus's
# containers_statuses and timestamp) used minicri's events and statuses throughout.
evented_pleg_checks() {
	case ",${E2E_FEATURE_GATES:-}," in *,EventedPLEG=true,*) ;; *) return 0 ;; esac
	check "evented PLEG: a stopped container's event made the kubelet relist its pod" \
		grep -q 'Evented PLEG: requested pod relist after container termination' "$KUBELET_LOG"
	check "evented PLEG: no event without a pod status (all carry PodSandboxStatus.Metadata)" \
		not_in_log 'received ContainerEventResponse with nil PodSandboxStatus'
	check "evented PLEG: the event stream never failed (no fallback to relisting alone)" \
		not_in_log 'Evented PLEG: failed to get container events\|disabling container-termination fast path'
	check "evented PLEG: every pod status had a timestamp (no per-container polling fallback)" \
		not_in_log 'Runtime does not set pod status timestamp'
	# Left: the kubelet's log cleanup of each removed container asks ContainerStatus: once
	# in its count up to 1.37, twice from 1.38 (its metrics wrap the CRI client of the
	# container log manager too, whose Clean asks it first; the calls are the same).
	local per=1
	[ "$(kubelet_minor)" -lt 38 ] || per=2
	check "evented PLEG: the kubelet polled no ContainerStatus (statuses came with the pod's)" \
		eval '[ "$(kubelet_op_count container_status)" -le "$((per * $(kubelet_op_count remove_container)))" ]'
}

# kubelet_minor: the kubelet's minor version (38 for v1.38.0-beta.0).
kubelet_minor() { "$BIN/kubelet" --version | sed -n 's/^Kubernetes v[0-9]*\.\([0-9]*\)\..*/\1/p'; }

# kubelet_op_count OPERATION: the kubelet's count of a CRI operation (0 if none).
kubelet_op_count() { kubelet_cri_metrics | awk -v op="$1" '$1 == op { n = $2 } END { print n + 0 }'; }

# not_in_log PATTERN: the kubelet's log lacks PATTERN (grep basic regex).
not_in_log() { ! grep -q "$1" "$KUBELET_LOG"; }

# minicri_running: the instance is alive (a failed check says how it ended otherwise).
minicri_running() {
	proc_alive "$INSTANCE_PID" && [ -S "$MINICRI_SOCK" ] && return 0
	fail "minicri (pid $INSTANCE_PID) is running and serves $MINICRI_SOCK" \
		"$(grep -c '"msg":"shutting down"' "$INSTANCE_LOG") 'shutting down' (SIGINT/SIGTERM) in its log"
}

kubelet_stop() {
	proc_stop kubelet 30
	unmount_tree "$E2E_TMP/kubelet-$1/root"
}

# ---- checks shared by both modes --------------------------------------------------------

# running_containers LABEL=VALUE: how many containers with the label are running.
running_containers() { crictl ps --state Running --label "$1" -q 2>/dev/null | grep -c . || true; }

# pod_sandboxes LABEL=VALUE: sandboxes (any state) with the label.
pod_sandboxes() { crictl pods --label "$1" -q 2>/dev/null | grep -c . || true; }


# container_in_kubepods_slice ID: the container's process (pid from crictl inspect) is in
# a scope below the kubelet's pod slice: /proc/<pid>/cgroup reads
# 0::/kubepods.slice/[kubepods-<qos>.slice/]kubepods-[<qos>-]pod<uid>.slice/<scope>.
container_in_kubepods_slice() {
	local pid cg
	pid=$(crictl inspect -o go-template --template '{{.info.pid}}' "$1") || return 1
	cg=$(cat "/proc/$pid/cgroup") || return 1
	e2e_log "container ${1:0:12} (pid $pid): cgroup $cg"
	grep -Eq '^0::/kubepods\.slice/(kubepods-[a-z]+\.slice/)?kubepods-([a-z]+-)?pod[0-9a-f_]+\.slice/[^/]+\.scope$' <<<"$cg"
}

# ---- standalone mode --------------------------------------------------------------------
mode_standalone() {
	local mark host_port pod t0 logdir
	mark=$(cri_mark)
	kubelet_start standalone || return 1
	host_port=$(free_port)
	pod=static-web-$NODE_NAME

	sed "s/@HOST_PORT@/$host_port/" "$E2E_DIR/manifests/static-pod.yaml" >"$E2E_TMP/static-web.yaml"
	t0=$(e2e_now)
	# Renamed into place: the kubelet never reads a half-written manifest.
	mv "$E2E_TMP/static-web.yaml" "$KUBELET_MANIFESTS/static-web.yaml"
	if wait_for 240 eval '[ "$(running_containers io.kubernetes.pod.name="$pod")" = 2 ]'; then
		timing "standalone: manifest drop -> both containers running (incl. first image pulls)" "$(e2e_since "$t0")"
		pass "static pod $pod: both containers running"
	else
		crictl ps -a --label io.kubernetes.pod.name="$pod" >&2 || true
		fail "static pod $pod: both containers running within 240s"
		return 1
	fi

	check "crictl pods shows the static pod (Ready)" \
		output_has . crictl pods --name "$pod" --state Ready -q
	check "pod sandbox has the kubelet's labels (namespace default)" \
		output_has . crictl pods --label io.kubernetes.pod.namespace=default --label io.kubernetes.pod.name="$pod" -q

	logdir=$(find /var/log/pods -maxdepth 1 -name "default_${pod}_*" -type d | head -n 1)
	check "pod log dir under /var/log/pods ($logdir)" test -n "$logdir"
	if [ -n "$logdir" ]; then
		check "writer's stdout in $logdir/writer/0.log" \
			wait_for 20 grep -q 'stdout F static-writer line' "$logdir/writer/0.log"
		check "web's stderr in $logdir/web/0.log" \
			wait_for 20 grep -q 'stderr F httpd (minicri stand-in): resuming normal operations' "$logdir/web/0.log"
	fi
	[ "$CGROUP_DRIVER" = cgroupfs ] || check "writer's process is in a kubepods-...slice cgroup (systemd driver)" \
		container_in_kubepods_slice "$(crictl ps --name writer --label io.kubernetes.pod.name="$pod" -q | head -n 1)"
	check "crictl logs of the writer" \
		output_has 'static-writer line' crictl logs "$(crictl ps --name writer --label io.kubernetes.pod.name="$pod" -q | head -n 1)"
	check "HTTP through the hostPort on $NODE_IP:$host_port" \
		wait_for 30 output_has 'It works!' curl -sf --max-time 2 "http://$NODE_IP:$host_port/"
	if wait_for 5 output_has 'It works!' curl -sf --max-time 2 "http://127.0.0.1:$host_port/"; then
		e2e_log "note: the hostPort also answers on 127.0.0.1:$host_port"
	else
		e2e_log "note: the hostPort does not answer on 127.0.0.1:$host_port (only the node IP is checked)"
	fi

	# Deleting the manifest removes the pod: containers stop at once, and the kubelet's
	# garbage collection removes the sandbox (it runs once a minute).
	t0=$(e2e_now)
	rm -f "$KUBELET_MANIFESTS/static-web.yaml"
	if check "manifest removed: containers stopped within 60s" \
		wait_for 60 eval '[ "$(running_containers io.kubernetes.pod.name="$pod")" = 0 ]'; then
		timing "standalone: manifest removal -> containers stopped" "$(e2e_since "$t0")"
	fi
	check "manifest removed: sandbox not ready within 60s" \
		wait_for 60 eval '[ -z "$(crictl pods --name "$pod" --state Ready -q)" ]'
	if check "manifest removed: sandbox and containers removed within 150s" \
		wait_for 150 eval "no_sandboxes && no_containers"; then
		timing "standalone: manifest removal -> sandbox removed (kubelet GC)" "$(e2e_since "$t0")"
	fi
	check "manifest removed: pod cgroups removed within 60s" wait_for 60 no_pod_cgroups
	check "no leaked netns, mounts, cgroups or processes" leak_check
	check "kubelet still running" proc_running kubelet
	minicri_running && pass "minicri still running"
	evented_pleg_checks
	cri_report standalone "$mark" "$KUBELET_LOG"
	kubelet_stop standalone
}

# ---- cluster mode -----------------------------------------------------------------------
kubectl() { "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" --request-timeout 60s "$@"; }

# pod_field POD JSONPATH
pod_field() { kubectl get pod "$1" -o "jsonpath=$2" 2>/dev/null; }

mode_cluster() {
	local mark etcd_port etcd_peer api_port kcm_port sched_port server t0 out lport pf_log i
	mark=$(cri_mark)
	etcd_port=$(free_port)
	etcd_peer=$(free_port)
	api_port=$(free_port)
	kcm_port=$(free_port)
	sched_port=$(free_port)
	server=https://127.0.0.1:$api_port

	kubeconfig_write "$E2E_TMP/admin.kubeconfig" "$server" "$PKI" admin
	kubeconfig_write "$E2E_TMP/controller-manager.kubeconfig" "$server" "$PKI" controller-manager
	kubeconfig_write "$E2E_TMP/scheduler.kubeconfig" "$server" "$PKI" scheduler
	kubeconfig_write "$E2E_TMP/kubelet.kubeconfig" "$server" "$PKI" kubelet

	proc_start etcd "$E2E_TMP/etcd.log" "$BIN/etcd" --name e2e --data-dir "$E2E_TMP/etcd" \
		--listen-client-urls "http://127.0.0.1:$etcd_port" --advertise-client-urls "http://127.0.0.1:$etcd_port" \
		--listen-peer-urls "http://127.0.0.1:$etcd_peer" --initial-advertise-peer-urls "http://127.0.0.1:$etcd_peer" \
		--initial-cluster "e2e=http://127.0.0.1:$etcd_peer" --log-level warn
	check "etcd healthy" wait_for 60 curl -sf --max-time 2 "http://127.0.0.1:$etcd_port/health" || return 1

	proc_start kube-apiserver "$E2E_TMP/kube-apiserver.log" "$BIN/kube-apiserver" \
		--etcd-servers "http://127.0.0.1:$etcd_port" \
		--bind-address 127.0.0.1 --secure-port "$api_port" --advertise-address "$NODE_IP" \
		--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
		--client-ca-file "$PKI/ca.crt" \
		--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
		--kubelet-preferred-address-types InternalIP \
		--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
		--service-account-signing-key-file "$PKI/sa.key" --service-cluster-ip-range 10.96.0.0/24 \
		--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
		--allow-privileged=true --cert-dir "$E2E_TMP/apiserver-certs" --v 1 \
		--enable-aggregator-routing=true
	check "kube-apiserver ready" wait_for 120 kubectl get --raw /readyz || return 1

	proc_start kube-controller-manager "$E2E_TMP/kube-controller-manager.log" "$BIN/kube-controller-manager" \
		--kubeconfig "$E2E_TMP/controller-manager.kubeconfig" \
		--authentication-kubeconfig "$E2E_TMP/controller-manager.kubeconfig" \
		--authorization-kubeconfig "$E2E_TMP/controller-manager.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$kcm_port" --leader-elect=false \
		--use-service-account-credentials=true --service-account-private-key-file "$PKI/sa.key" \
		--root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
		--v 1
	proc_start kube-scheduler "$E2E_TMP/kube-scheduler.log" "$BIN/kube-scheduler" \
		--kubeconfig "$E2E_TMP/scheduler.kubeconfig" \
		--authentication-kubeconfig "$E2E_TMP/scheduler.kubeconfig" \
		--authorization-kubeconfig "$E2E_TMP/scheduler.kubeconfig" \
		--bind-address 127.0.0.1 --secure-port "$sched_port" --leader-elect=false --v 1

	kubelet_start cluster "$E2E_TMP/kubelet.kubeconfig" || return 1
	check "node $NODE_NAME registered and Ready" \
		wait_for 120 kubectl wait --for=condition=Ready "node/$NODE_NAME" --timeout=5s || return 1
	check "node InternalIP is $NODE_IP" \
		test "$(kubectl get node "$NODE_NAME" -o 'jsonpath={.status.addresses[?(@.type=="InternalIP")].address}')" = "$NODE_IP"
	check "default service account and kube-root-ca.crt exist" \
		wait_for 90 eval "kubectl get serviceaccount default && kubectl get configmap kube-root-ca.crt" || return 1
	# E2E_CLUSTER_HOOK: a command run against this cluster instead of the checks below
	# (test/conformance/run.sh when test/cluster is absent); the teardown's checks still run.
	if [ -n "${E2E_CLUSTER_HOOK:-}" ]; then
		KUBECONFIG=$E2E_TMP/admin.kubeconfig E2E_NODE_NAME=$NODE_NAME E2E_NODE_IP=$NODE_IP \
			MINICRI_LOG=$INSTANCE_LOG KUBELET_LOG=$KUBELET_LOG "$E2E_CLUSTER_HOOK" 8>&- 9>&- &&
			pass "cluster hook $E2E_CLUSTER_HOOK" || fail "cluster hook $E2E_CLUSTER_HOOK"
		return 0
	fi

	# kubectl apply -> Running
	t0=$(e2e_now)
	kubectl apply -f "$E2E_DIR/manifests/pod.yaml" >/dev/null
	if kubectl wait --for=jsonpath='{.status.phase}'=Running pod/e2e-pod --timeout=240s >/dev/null; then
		timing "cluster: kubectl apply -> Running (pod e2e-pod, 2 containers, pulls of images not yet present included)" "$(e2e_since "$t0")"
		pass "pod e2e-pod Running"
	else
		kubectl describe pod e2e-pod >&2 || true
		fail "pod e2e-pod Running within 240s"
		return 1
	fi
	check "kubectl wait Ready" kubectl wait --for=condition=Ready pod/e2e-pod --timeout=60s

	check "kubectl logs" wait_for 20 output_has 'e2e-writer line' kubectl logs e2e-pod -c writer
	check "kubectl logs --tail=1 --timestamps" output_has '^[0-9]\{4\}-[0-9][0-9]-[0-9][0-9]T.* e2e-writer line' kubectl logs e2e-pod -c writer --tail=1 --timestamps

	out=$(timeout 60 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" exec e2e-pod -c writer -- sh -c 'cat /etc/hostname; echo exec-out; echo exec-err >&2; exit 0' 2>&1) || true
	check "kubectl exec (no stdin)" eval 'grep -q "^e2e-pod$" <<<"$out" && grep -q "^exec-out$" <<<"$out" && grep -q "^exec-err$" <<<"$out"' ||
		e2e_log "kubectl exec output: $out"
	timeout 60 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" exec e2e-pod -c writer -- sh -c 'exit 7' >/dev/null 2>&1 && i=0 || i=$?
	check "kubectl exec exit code 7 is passed through" test "$i" = 7 || e2e_log "kubectl exec exit code: $i"
	out=$(printf 'ping-from-stdin\nsecond line\n' | timeout 60 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" exec -i e2e-pod -c writer -- sh -c 'cat; echo exec-i-done' 2>&1) || true
	check "kubectl exec -i (stdin to EOF)" eval 'grep -q "^ping-from-stdin$" <<<"$out" && grep -q "^second line$" <<<"$out" && grep -q "^exec-i-done$" <<<"$out"' ||
		e2e_log "kubectl exec -i output: $out"

	lport=$(free_port)
	pf_log=$E2E_TMP/port-forward.log
	proc_start port-forward "$pf_log" "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" port-forward --address 127.0.0.1 pod/e2e-pod "$lport:80"
	if check "kubectl port-forward listening" wait_for 30 grep -q "Forwarding from 127.0.0.1:$lport" "$pf_log"; then
		check "HTTP through kubectl port-forward" \
			wait_for 20 output_has 'Welcome to nginx' curl -sf --max-time 5 "http://127.0.0.1:$lport/"
		check "second connection through the same port-forward" \
			output_has 'Welcome to nginx' curl -sf --max-time 5 "http://127.0.0.1:$lport/"
	fi
	grep -i error "$pf_log" >&2 || true
	proc_stop port-forward 5

	kubectl apply -f "$E2E_DIR/manifests/attach.yaml" >/dev/null
	if check "pod e2e-attach Running" kubectl wait --for=condition=Ready pod/e2e-attach --timeout=120s >/dev/null; then
		out=$(timeout 8 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" attach e2e-attach -c ticker 2>&1) || true
		check "kubectl attach (no stdin) streams output" eval 'grep -q "^tick [0-9]*$" <<<"$out"' ||
			e2e_log "kubectl attach output: $(head -c 600 <<<"$out")"
		out=$( (printf 'hello-attach\n'; sleep 3) | timeout 20 "$KUBECTL" --kubeconfig "$E2E_TMP/admin.kubeconfig" attach -i e2e-attach -c reader 2>&1) || true
		check "kubectl attach -i: stdin reaches the container (its log shows the line)" \
			wait_for 10 output_has 'attached got: hello-attach' kubectl logs e2e-attach -c reader
		check "kubectl attach -i: the container's answer comes back through attach" \
			eval 'grep -q "attached got: hello-attach" <<<"$out"' ||
			e2e_log "kubectl attach -i output: $(head -c 600 <<<"$out")"
	fi

	# Deployment: 3 replicas with an exec readiness probe and memory limits.
	t0=$(e2e_now)
	kubectl apply -f "$E2E_DIR/manifests/deployment.yaml" >/dev/null
	if check "deployment e2e-deploy: 3 replicas ready" kubectl rollout status deployment/e2e-deploy --timeout=240s >/dev/null; then
		timing "cluster: deployment apply -> 3/3 ready (exec readiness probe)" "$(e2e_since "$t0")"
		check "deployment reports readyReplicas=3" \
			test "$(kubectl get deployment e2e-deploy -o 'jsonpath={.status.readyReplicas}')" = 3
		check "each replica's container has memory.limit_in_bytes = 64Mi (cgroup v1)" deploy_memory_limits
	else
		kubectl get pods -o wide >&2 || true
	fi

	# Job completes.
	kubectl apply -f "$E2E_DIR/manifests/job.yaml" >/dev/null
	check "job e2e-job completes" kubectl wait --for=condition=Complete job/e2e-job --timeout=180s >/dev/null &&
		check "job output in kubectl logs" output_has job-done kubectl logs job/e2e-job

	# A container that exits 3: exit code 3, restarts with back-off.
	t0=$(e2e_now)
	kubectl apply -f "$E2E_DIR/manifests/crash.yaml" >/dev/null
	check "crashing container reports exit code 3" \
		wait_for 120 eval '[ "$(pod_field e2e-crash "{.status.containerStatuses[0].lastState.terminated.exitCode}")" = 3 ]'
	if check "crashing container restarted at least twice" \
		wait_for 150 eval '[ "$(pod_field e2e-crash "{.status.containerStatuses[0].restartCount}")" -ge 2 ]'; then
		crash_backoff_check "$(e2e_since "$t0")"
	fi
	check "crashing container's output in kubectl logs (current or --previous)" \
		wait_for 30 eval "output_has 'about to exit 3' kubectl logs e2e-crash || output_has 'about to exit 3' kubectl logs e2e-crash --previous"

	# A device plugin whose Allocate answers with a CDI device name (cdi.sh).
	cdi_device_plugin_check "$KUBELET_LOG" || true

	# Checkpoint through the kubelet's API, restore as a new pod from a checkpoint image (ckpt.sh).
	checkpoint_restore_check || true

	# kubectl delete removes everything.
	t0=$(e2e_now)
	kubectl delete deployment e2e-deploy --wait=false >/dev/null || true
	kubectl delete job e2e-job --cascade=foreground --wait=false >/dev/null || true
	kubectl delete pod e2e-pod e2e-attach e2e-crash e2e-cdi e2e-ckpt e2e-restored --wait=false --ignore-not-found >/dev/null || true
	check "all pods gone from the API" \
		wait_for 180 eval "[ -z \"\$(kubectl get pods -o name)\" ]" || kubectl get pods -o wide >&2 || true
	if check "kubectl delete: all containers stopped" wait_for 60 eval '[ "$(crictl ps -q | grep -c .)" = 0 ]'; then
		timing "cluster: kubectl delete -> all containers stopped" "$(e2e_since "$t0")"
	fi
	if check "kubectl delete: sandboxes and containers removed within 150s" wait_for 150 eval "no_sandboxes && no_containers"; then
		timing "cluster: kubectl delete -> all sandboxes removed (kubelet GC)" "$(e2e_since "$t0")"
	fi
	check "kubectl delete: pod cgroups removed" wait_for 60 no_pod_cgroups
	check "no leaked netns, mounts, cgroups or processes" leak_check
	proc_stop deviceplugin 5
	for i in etcd kube-apiserver kube-controller-manager kube-scheduler kubelet; do
		check "$i still running" proc_running "$i"
	done
	minicri_running && pass "minicri still running"
	cri_report cluster "$mark" "$KUBELET_LOG"
	kubelet_stop cluster
	proc_stop kube-scheduler
	proc_stop kube-controller-manager
	proc_stop kube-apiserver
	proc_stop etcd
}

# deploy_memory_limits: every e2e-deploy pod has a container cgroup (below the kubelet's
# pod cgroup) limited to 64Mi.
deploy_memory_limits() {
	local uid n=0 mem=/sys/fs/cgroup/memory d
	for uid in $(kubectl get pods -l app=e2e-deploy -o 'jsonpath={.items[*].metadata.uid}'); do
		d=$(find "$mem$CGROUP_ROOT/kubepods" -maxdepth 2 -type d -name "pod$uid" | head -n 1)
		[ -n "$d" ] || { e2e_log "no memory cgroup for pod $uid"; return 1; }
		if grep -qx 67108864 "$d"/*/memory.limit_in_bytes 2>/dev/null; then
			n=$((n + 1))
		else
			e2e_log "pod $uid: container limits: $(cat "$d"/*/memory.limit_in_bytes 2>/dev/null | tr '\n' ' ')"
		fi
	done
	[ "$n" = 3 ]
}

# crash_backoff_check SECONDS: restarts are spaced by the kubelet's back-off (10s, 20s,
# ...): two restarts take well over 10s (without back-off, a container that exits at once
# restarts within a second or two), and the kubelet reports BackOff. (The Waiting /
# CrashLoopBackOff state is not checked: kubelet 1.37 publishes it for only ~50ms before
# each restart, when no other sync happens in between.)
crash_backoff_check() {
	check "two restarts took ${1}s (>= 10s: back-off)" awk -v t="$1" 'BEGIN { exit !(t >= 10) }'
	check "kubelet reports BackOff events for e2e-crash" \
		output_has BackOff kubectl get events --field-selector involvedObject.name=e2e-crash -o 'jsonpath={.items[*].reason}'
	check "kubelet logged 'Back-off restarting failed container' for e2e-crash" \
		grep -q 'Back-off restarting failed container.*pod=e2e-crash_default' "$KUBELET_LOG"
}

# ---- run --------------------------------------------------------------------------------
for E2E_MODE in $MODES; do
	case $E2E_MODE in
	standalone | cluster) ;;
	*) echo "e2e: unknown mode $E2E_MODE" >&2; exit 2 ;;
	esac
	e2e_log "======== mode $E2E_MODE ========"
	start=$(date +%s)
	if ! "mode_$E2E_MODE"; then
		E2E_FAILS+=("$E2E_MODE: stopped early (see the FAIL above)")
	fi
	e2e_log "======== mode $E2E_MODE finished in $(($(date +%s) - start))s ========"
	# Whatever the mode left running is stopped before the next one.
	proc_stop_all
done
E2E_MODE=teardown

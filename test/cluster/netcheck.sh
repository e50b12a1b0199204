#!/usr/bin/env bash
# test/cluster/netcheck.sh — pod networking across the nodes of the running cluster
# (`make cluster-netcheck`, after `make cluster`):
#   pod-to-pod across nodes, pod-to-Service ClusterIP, NodePort (from the host and from a
#   pod), DNS names of Services (short and FQDN), hostPort; then a Deployment of 20
#   replicas spread over the nodes (time from `kubectl apply` to all Running); then every
#   pod is deleted and each node is checked for leaked sandboxes, containers, netns pins,
#   veths, IP leases, mounts, pod cgroups and processes (test/e2e's leak_check, per node).
# Prints one line per check and a summary; exits non-zero if any check failed.
# Not -e: a failed check is recorded and the next one runs.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CGROUP_DRIVER=cgroupfs
E2E_MODE=netcheck
# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=test/e2e/lib.sh disable=SC1091
. "$ROOT/test/e2e/lib.sh"
# shellcheck source=test/cluster/lib.sh disable=SC1091
. "$ROOT/test/cluster/lib.sh"
# shellcheck source=test/cluster/runtime.sh disable=SC1091
. "$ROOT/test/cluster/runtime.sh"

[ "$(id -u)" = 0 ] || { cl_log "needs root"; exit 1; }
CL_RUNTIME=minicri
cl_state_load || { cl_log "no cluster: run make cluster first"; exit 1; }
RUNTIME=$CL_RUNTIME
[ -f "$CL_OUT/env" ] || { cl_log "the cluster is not up ($CL_OUT/env missing)"; exit 1; }
# shellcheck disable=SC1091
. "$CL_OUT/env"
NS=netcheck
MANIFESTS=$ROOT/test/cluster/manifests
kubectl() { "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG" --request-timeout 60s "$@"; }
crictl() { runtime_crictl "$@"; }
NODES_=("${CL_NODE_NAMES[@]}")
[ ${#NODES_[@]} -ge 2 ] || { cl_log "netcheck needs at least 2 nodes"; exit 1; }
N1=${NODES_[0]}
N2=${NODES_[1]}

# Mounts an idle runtime keeps, per node, before any pod (anything more later is a leak).
declare -A BASE_MOUNTS=()
for n in "${NODES_[@]}"; do
	runtime_use "$n"
	BASE_MOUNTS[$n]=$(mounts_under "$INSTANCE_TMP" | sort)
done

cleanup() {
	kubectl delete namespace "$NS" --ignore-not-found --wait=false >/dev/null 2>&1 || true
}
on_exit() {
	local rc=$? f
	trap - EXIT
	set +e
	cleanup
	echo "================ cluster netcheck summary ================"
	echo "runtime $RUNTIME, ${#NODES_[@]} nodes (${NODES_[*]}), kube-proxy $CLUSTER_PROXY_MODE"
	for f in "${E2E_TIMINGS[@]}"; do echo "    $f"; done
	if [ ${#E2E_FAILS[@]} -eq 0 ] && [ $rc -eq 0 ]; then
		echo "All checks passed."
	else
		echo "FAILED checks (${#E2E_FAILS[@]}):"
		for f in "${E2E_FAILS[@]}"; do echo "    $f"; done
		rc=1
	fi
	exit $rc
}
trap on_exit EXIT
trap 'E2E_FAILS+=("interrupted"); exit 130' INT TERM

# in_pod POD CMD...: run CMD in the pod's container (time-limited).
in_pod() { timeout 30 "$CLUSTER_BIN/kubectl" --kubeconfig "$KUBECONFIG" -n "$NS" exec "$1" -- "${@:2}"; }
# pod_http POD HOST PORT PATH: an HTTP/1.0 GET from inside POD (busybox nc: the image's
# wget crashes), headers and body.
pod_http() {
	in_pod "$1" sh -c 'printf "GET %s HTTP/1.0\r\nHost: %s\r\n\r\n" "$3" "$1" | nc -w 5 "$1" "$2"' sh "$2" "$3" "$4"
}
pod_ip() { kubectl -n "$NS" get pod "$1" -o jsonpath='{.status.podIP}'; }
pod_node() { kubectl -n "$NS" get pod "$1" -o jsonpath='{.spec.nodeName}'; }
node_ip() { local v="CLUSTER_NODE_IP_${1//-/_}"; echo "${!v}"; }

# ---- pods and Services ------------------------------------------------------------------
cleanup
wait_for 120 eval "! kubectl get namespace $NS" || { fail "namespace $NS from an earlier run is gone"; exit 1; }
kubectl create namespace "$NS" >/dev/null
wait_for 60 kubectl -n "$NS" get serviceaccount default || { fail "service account default in $NS"; exit 1; }
for n in "${NODES_[@]}"; do
	sed "s/@NODE@/$n/g" "$MANIFESTS/netcheck-pods.yaml" | kubectl -n "$NS" apply -f - >/dev/null
done
kubectl -n "$NS" apply -f "$MANIFESTS/netcheck-services.yaml" >/dev/null
t0=$(e2e_now)
if check "web and client pods Running on every node" \
	kubectl -n "$NS" wait --for=condition=Ready pod --all --timeout=240s >/dev/null; then
	timing "netcheck pods (web + client per node) apply -> Ready" "$(e2e_since "$t0")"
else
	kubectl -n "$NS" get pods -o wide >&2 || true
	kubectl -n "$NS" describe pods >&2 || true
	exit 1
fi
kubectl -n "$NS" get pods -o wide >&2

for n in "${NODES_[@]}"; do
	check "web-$n runs on $n" test "$(pod_node "web-$n")" = "$n"
done
CLUSTER_IP=$(kubectl -n "$NS" get service web -o jsonpath='{.spec.clusterIP}')
NODE_PORT=$(kubectl -n "$NS" get service web-nodeport -o jsonpath='{.spec.ports[0].nodePort}')

# ---- pod to pod across nodes ------------------------------------------------------------
for src in "${NODES_[@]}"; do
	for dst in "${NODES_[@]}"; do
		[ "$src" != "$dst" ] || continue
		ip=$(pod_ip "web-$dst")
		check "pod-to-pod: client-$src -> web-$dst ($ip, other node)" \
			wait_for 30 output_has 'It works!' pod_http "client-$src" "$ip" 80 /
	done
	check "pod-to-pod: client-$src -> web-$src (same node)" \
		wait_for 30 output_has 'It works!' pod_http "client-$src" "$(pod_ip "web-$src")" 80 /
done
# The server sees the client's own pod IP (no masquerade between pods).
check "pod-to-pod: web-$N2 sees client-$N1's own pod IP as the source" \
	wait_for 30 output_has "^$(pod_ip "client-$N1")\$" pod_http "client-$N1" "$(pod_ip "web-$N2")" 80 /cgi-bin/ip

# ---- Services ---------------------------------------------------------------------------
for src in "${NODES_[@]}"; do
	check "ClusterIP: client-$src -> web ($CLUSTER_IP:80)" \
		wait_for 30 output_has 'It works!' pod_http "client-$src" "$CLUSTER_IP" 80 /
	check "DNS: client-$src resolves web.$NS.svc.$CLUSTER_DOMAIN to $CLUSTER_IP" \
		wait_for 30 output_has "$CLUSTER_IP" in_pod "client-$src" nslookup "web.$NS.svc.$CLUSTER_DOMAIN"
	check "DNS: client-$src -> http://web (short name through the search path)" \
		wait_for 30 output_has 'It works!' pod_http "client-$src" "web" 80 /
	check "DNS: client-$src resolves kubernetes.default.svc.$CLUSTER_DOMAIN" \
		wait_for 30 output_has "10.96.0.1" in_pod "client-$src" nslookup "kubernetes.default.svc.$CLUSTER_DOMAIN"
	check "ClusterIP: client-$src reaches the API server through kubernetes.default:443" \
		wait_for 30 output_has 'Client sent an HTTP request to an HTTPS server' pod_http "client-$src" kubernetes.default 443 /
done
# Both backends answer through the ClusterIP (each web pod serves its node name).
check "ClusterIP: both nodes' backends answer through $CLUSTER_IP" \
	wait_for 60 eval "[ \"\$(for i in 1 2 3 4 5 6 7 8 9 10; do pod_http client-$N1 $CLUSTER_IP 80 /node 2>/dev/null | tail -n 1; done | sort -u | wc -l)\" -ge 2 ]"
for n in "${NODES_[@]}"; do
	check "NodePort: host -> $(node_ip "$n"):$NODE_PORT" \
		wait_for 30 output_has 'It works!' curl -sf --max-time 5 "http://$(node_ip "$n"):$NODE_PORT/"
done
check "NodePort: client-$N1 -> $N2's $(node_ip "$N2"):$NODE_PORT" \
	wait_for 30 output_has 'It works!' pod_http "client-$N1" "$(node_ip "$N2")" "$NODE_PORT" /

# ---- hostPort ---------------------------------------------------------------------------
for n in "${NODES_[@]}"; do
	check "hostPort: host -> $(node_ip "$n"):8080 reaches web-$n" \
		wait_for 30 output_has "^$n\$" curl -sf --max-time 5 "http://$(node_ip "$n"):8080/node"
done
check "hostPort: client-$N1 -> $N2's $(node_ip "$N2"):8080" \
	wait_for 30 output_has "^$N2\$" pod_http "client-$N1" "$(node_ip "$N2")" 8080 /node

# ---- 20 replicas over the nodes ---------------------------------------------------------
running_spread() { kubectl -n "$NS" get pods -l app=spread --field-selector=status.phase=Running -o name | grep -c . || true; }
t0=$(e2e_now)
kubectl -n "$NS" apply -f "$MANIFESTS/spread.yaml" >/dev/null
if check "Deployment spread: 20 replicas Running within 300s" wait_for 300 eval '[ "$(running_spread)" = 20 ]'; then
	timing "kubectl apply of a 20-replica Deployment (spread over ${#NODES_[@]} nodes) -> all Running" "$(e2e_since "$t0")"
fi
dist=$(kubectl -n "$NS" get pods -l app=spread -o jsonpath='{range .items[*]}{.spec.nodeName}{"\n"}{end}' | sort | uniq -c | tr -s ' ' | tr '\n' ';')
e2e_log "spread: pods per node: $dist"
check "Deployment spread: every node runs some replicas" \
	eval "[ \$(kubectl -n $NS get pods -l app=spread -o jsonpath='{range .items[*]}{.spec.nodeName}{\"\\n\"}{end}' | sort -u | grep -c .) = ${#NODES_[@]} ]"

# ---- delete everything, then no leaks on any node ---------------------------------------
t0=$(e2e_now)
kubectl delete namespace "$NS" --timeout=300s >/dev/null || fail "namespace $NS deleted within 300s"
timing "kubectl delete namespace (all pods gone from the API)" "$(e2e_since "$t0")"
for n in "${NODES_[@]}"; do
	runtime_use "$n"
	MINICRI_BASE_MOUNTS=${BASE_MOUNTS[$n]}
	ns=$(nget "$n" netns)
	check "$n: sandboxes and containers removed within 180s (kubelet GC)" \
		wait_for 180 eval "no_sandboxes && no_containers"
	check "$n: pod cgroups removed within 60s" wait_for 60 no_pod_cgroups
	check "$n: no leaked netns pin, mount, volume mount, pod cgroup or process" leak_check
	check "$n: no pod veth left in the node's netns (eth0 is the node's own)" \
		eval "[ -z \"\$(ip -n $ns -o link show type veth | grep -v '^[0-9]*: eth0@')\" ]"
	check "$n: no IP lease left ($(nget "$n" dir)/ipam)" \
		eval "[ -z \"\$(find $(nget "$n" dir)/ipam -type f ! -name 'last_reserved_ip*' ! -name lock 2>/dev/null)\" ]"
	check "$n: $RUNTIME still running" proc_alive "$INSTANCE_PID"
	check "$n: kubelet and kube-proxy still running" eval "cl_state_alive kubelet-$n && cl_state_alive kube-proxy-$n"
done

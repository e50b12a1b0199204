#!/usr/bin/env bash
# test/cluster/up.sh — a multi-node Kubernetes cluster on this machine (`make cluster`).
#
# The control plane (etcd, kube-apiserver, kube-controller-manager with node IPAM,
# kube-scheduler) and CoreDNS run on the host; each of CLUSTER_NODES worker nodes has its
# own network namespace on the underlay bridge mcri-cl0 (10.N.255.0/24, the first
# 10.190-196.0.0/16 no route touches), its own runtime instance (socket, root, state,
# cgroup parent, CNI bridge on the node's podCIDR), kubelet and kube-proxy. Pods reach
# pods on other nodes through per-node routes; Services through kube-proxy; cluster DNS
# through CoreDNS behind the kube-dns Service. Images come from the offline registry
# (test/registry), which every node reaches on the underlay.
#
# Leaves the cluster running and writes, for test/cluster/netcheck.sh, the conformance
# runner and humans:
#   _output/cluster/kubeconfig   admin kubeconfig
#   _output/cluster/env          KUBECONFIG, CLUSTER_NODES, CLUSTER_NODE_NAMES, ... (sourceable)
#   _output/cluster/state        what down.sh undoes;  _output/cluster/logs/  every log
# `make cluster-down` (test/cluster/down.sh) stops and removes everything. A failing
# step (or an interrupt) tears down what was made so far.
#
# Environment:
#   CLUSTER_NODES=2            worker nodes
#   CLUSTER_RUNTIME=minicri    the nodes' runtime: minicri (bin/minicri) or containerd
#   CLUSTER_PROXY_MODE=nftables  kube-proxy mode: nftables or iptables
#   CLUSTER_KUBELET_V=2        kubelet verbosity
#   CLUSTER_OUT                output dir (default _output/cluster; one cluster per dir)
#   INSTANCE_REGISTRY_ARGS     more flags for the offline registry (e.g. -e2e-images DIR)
#   INSTANCE_LAZY=1            lazy pulls on in every node's minicri, the registry in its
#                              eStargz mode (hack/instance.sh; `make ... LAZY=1`)
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
. "$(dirname "${BASH_SOURCE[0]}")/../../hack/goenv.sh"
NODES=${CLUSTER_NODES:-2}
RUNTIME=${CLUSTER_RUNTIME:-minicri}
PROXY_MODE=${CLUSTER_PROXY_MODE:-nftables}
KUBELET_V=${CLUSTER_KUBELET_V:-2}
CGROUP_DRIVER=cgroupfs
E2E_MODE=cluster

# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=test/e2e/lib.sh disable=SC1091
. "$ROOT/test/e2e/lib.sh"
# shellcheck source=test/e2e/certs.sh disable=SC1091
. "$ROOT/test/e2e/certs.sh"
# shellcheck source=test/cluster/lib.sh disable=SC1091
. "$ROOT/test/cluster/lib.sh"
# shellcheck source=test/cluster/runtime.sh disable=SC1091
. "$ROOT/test/cluster/runtime.sh"

[ "$(id -u)" = 0 ] || { cl_log "needs root"; exit 1; }
case $RUNTIME in minicri | containerd) ;; *) cl_log "CLUSTER_RUNTIME=$RUNTIME: want minicri or containerd"; exit 2 ;; esac
case $PROXY_MODE in nftables | iptables) ;; *) cl_log "CLUSTER_PROXY_MODE=$PROXY_MODE: want nftables or iptables"; exit 2 ;; esac
[[ $NODES =~ ^[1-9]$ ]] || { cl_log "CLUSTER_NODES=$NODES: want 1-9"; exit 2; }
if [ -f "$CL_STATE" ]; then
	cl_log "a cluster is up (or was left behind): $CL_STATE exists; run make cluster-down first"
	exit 1
fi
runtime_check
exec 8>&1 9>&2
mkdir -p "$CL_OUT" "$CL_LOGS"
rm -f "$CL_LOGS"/*.log "$CL_OUT/env" "$CL_OUT/kubeconfig"
T0=$(e2e_now)

on_exit() {
	local rc=$?
	trap - EXIT INT TERM
	[ $rc -ne 0 ] || return 0
	exec 1>&8 2>&9
	cl_log "up failed (exit $rc): tearing down what was made"
	"$ROOT/test/cluster/down.sh" || true
	exit $rc
}
trap on_exit EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# ---- binaries ---------------------------------------------------------------------------
BIN=$("$ROOT/test/cluster/tools.sh" "$CL_OUT/bin")
if [ ! -x "${INSTANCE_REGISTRY_BIN:-}" ]; then
	INSTANCE_REGISTRY_BIN=$ROOT/_output/bin/registry
	go build -o "$INSTANCE_REGISTRY_BIN" ./test/registry
fi

# ---- state, underlay, node namespaces ---------------------------------------------------
# 10.197-199 are hack/bench.sh's (197, 198) and test/critest's (199) even while they are not running.
SUBNET=$(free_subnet16 190 196) || { cl_log "no free 10.190-196.0.0/16 for the cluster"; exit 1; }
NET=${SUBNET%.0.0/16}
GW=$NET.255.1
CLUSTER_CIDR=$NET.0.0/17
# Names carry N (the cluster's /16), so that two clusters (two worktrees, or minicri and
# containerd side by side with another CLUSTER_OUT) never share a bridge, netns or cgroup.
ID=${NET#10.}
CL_BRIDGE=mcri-cl$ID
CL_TMP=$(mktemp -d /tmp/mcl.XXXXX)
chmod 0711 "$CL_TMP"
: >"$CL_STATE"
cl_state "CL_TMP=$CL_TMP" "CL_NET=$NET" "CL_RUNTIME=$RUNTIME" "CL_PROXY_MODE=$PROXY_MODE" "CL_HOST_ROUTES=()"
cl_log "cluster network $SUBNET: underlay $NET.255.0/24 on $CL_BRIDGE, pods $CLUSTER_CIDR, services $CL_SERVICE_CIDR"
cl_underlay_up "$NET"
for i in $(seq 1 "$NODES"); do
	cl_node_netns "node-$i" "mcl$ID-node-$i" "mclv$ID-$i" "$NET.255.$((10 + i))" "$GW"
	cl_node_set "node-$i" "ip=$NET.255.$((10 + i))"
done

# ---- registry, PKI, control plane -------------------------------------------------------
HOSTS_DIR=$CL_TMP/certs.d
# shellcheck disable=SC2086 # INSTANCE_REGISTRY_ARGS is a list of flags (as in hack/instance.sh)
cl_proc_start registry - "$INSTANCE_REGISTRY_BIN" -addr "$GW:0" -hosts-dir "$HOSTS_DIR" -bench=false \
	-estargz="$([ "${INSTANCE_LAZY:-}" = 1 ] && echo true || echo false)" ${INSTANCE_REGISTRY_ARGS:-}
cl_wait 300 registry grep -q ' serving .* references on ' "$CL_LOGS/registry.log"
REGISTRY=$(grep -o 'references on .*' "$CL_LOGS/registry.log" | awk '{ print $3 }')
cl_state "CL_REGISTRY=$REGISTRY"

PKI=$CL_TMP/pki
certs_make "$PKI" node-1 "$GW"
for i in $(seq 1 "$NODES"); do
	certs__leaf "$PKI" "kubelet-node-$i" "/O=system:nodes/CN=system:node:node-$i" clientAuth
	certs__leaf "$PKI" "serving-node-$i" "/CN=node-$i" serverAuth "DNS:node-$i,IP:$NET.255.$((10 + i))"
done
certs__leaf "$PKI" kube-proxy "/CN=system:kube-proxy" clientAuth
chmod 0600 "$PKI"/*.key

API_PORT=$(free_port)
SERVER=https://$GW:$API_PORT
for c in admin controller-manager scheduler kube-proxy; do kubeconfig_write "$CL_TMP/$c.kubeconfig" "$SERVER" "$PKI" "$c"; done
for i in $(seq 1 "$NODES"); do kubeconfig_write "$CL_TMP/kubelet-node-$i.kubeconfig" "$SERVER" "$PKI" "kubelet-node-$i"; done
cp "$CL_TMP/admin.kubeconfig" "$CL_OUT/kubeconfig"
kubectl() { "$BIN/kubectl" --kubeconfig "$CL_OUT/kubeconfig" --request-timeout 30s "$@"; }

ETCD_PORT=$(free_port)
ETCD_PEER=$(free_port)
cl_proc_start etcd - "$BIN/etcd" --name cluster --data-dir "$CL_TMP/etcd" \
	--listen-client-urls "http://127.0.0.1:$ETCD_PORT" --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
	--listen-peer-urls "http://127.0.0.1:$ETCD_PEER" --initial-advertise-peer-urls "http://127.0.0.1:$ETCD_PEER" \
	--initial-cluster "cluster=http://127.0.0.1:$ETCD_PEER" --log-level warn --quota-backend-bytes 4294967296
cl_wait 60 etcd curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health"

cl_proc_start kube-apiserver - "$BIN/kube-apiserver" \
	--etcd-servers "http://127.0.0.1:$ETCD_PORT" \
	--bind-address "$GW" --secure-port "$API_PORT" --advertise-address "$GW" \
	--tls-cert-file "$PKI/apiserver.crt" --tls-private-key-file "$PKI/apiserver.key" \
	--client-ca-file "$PKI/ca.crt" \
	--kubelet-client-certificate "$PKI/apiserver-kubelet-client.crt" --kubelet-client-key "$PKI/apiserver-kubelet-client.key" \
	--kubelet-preferred-address-types InternalIP \
	--service-account-issuer https://kubernetes.default.svc --service-account-key-file "$PKI/sa.pub" \
	--service-account-signing-key-file "$PKI/sa.key" --service-cluster-ip-range "$CL_SERVICE_CIDR" \
	--authorization-mode Node,RBAC --enable-admission-plugins NodeRestriction \
	--allow-privileged=true --cert-dir "$CL_TMP/apiserver-certs" --v 1 \
	--enable-aggregator-routing=true
cl_wait 120 kube-apiserver kubectl get --raw /readyz

KCM_PORT=$(free_port)
SCHED_PORT=$(free_port)
cl_proc_start kube-controller-manager - "$BIN/kube-controller-manager" \
	--kubeconfig "$CL_TMP/controller-manager.kubeconfig" \
	--authentication-kubeconfig "$CL_TMP/controller-manager.kubeconfig" \
	--authorization-kubeconfig "$CL_TMP/controller-manager.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$KCM_PORT" --leader-elect=false \
	--use-service-account-credentials=true --service-account-private-key-file "$PKI/sa.key" \
	--root-ca-file "$PKI/ca.crt" --cluster-signing-cert-file "$PKI/ca.crt" --cluster-signing-key-file "$PKI/ca.key" \
	--allocate-node-cidrs --cluster-cidr "$CLUSTER_CIDR" --node-cidr-mask-size 24 \
	--service-cluster-ip-range "$CL_SERVICE_CIDR" --v 1
cl_proc_start kube-scheduler - "$BIN/kube-scheduler" \
	--kubeconfig "$CL_TMP/scheduler.kubeconfig" \
	--authentication-kubeconfig "$CL_TMP/scheduler.kubeconfig" \
	--authorization-kubeconfig "$CL_TMP/scheduler.kubeconfig" \
	--bind-address 127.0.0.1 --secure-port "$SCHED_PORT" --leader-elect=false --v 1

# ---- nodes: runtime and kubelet ---------------------------------------------------------
# kubelet_config NODE NODE_DIR ENDPOINT CGROUP_ROOT IP: the node's KubeletConfiguration.
kubelet_config() {
	local node=$1 dir=$2 endpoint=$3 cgroot=$4 ip=$5
	cat <<-EOF
		apiVersion: kubelet.config.k8s.io/v1beta1
		kind: KubeletConfiguration
		failCgroupV1: false
		cgroupRoot: $cgroot
		containerRuntimeEndpoint: $endpoint
		imageServiceEndpoint: $endpoint
		address: $ip
		port: 10250
		readOnlyPort: 0
		healthzBindAddress: $ip
		healthzPort: 10248
		tlsCertFile: $PKI/serving-$node.crt
		tlsPrivateKeyFile: $PKI/serving-$node.key
		authentication:
		  anonymous: {enabled: false}
		  webhook: {enabled: false}
		  x509: {clientCAFile: $PKI/ca.crt}
		authorization:
		  mode: AlwaysAllow
		clusterDNS: [$CL_DNS_IP]
		clusterDomain: $CL_DOMAIN
		# Every kubelet's log GC removes the pod log dirs of pods it does not know: one
		# directory per node.
		podLogsDir: $dir/pod-logs
		volumePluginDir: $dir/volume-plugins
		resolvConf: /etc/resolv.conf
		maxPods: 110
		evictionHard:
		  memory.available: 50Mi
		  nodefs.available: 1%
		  imagefs.available: 1%
		  nodefs.inodesFree: 1%
		imageGCHighThresholdPercent: 99
		imageGCLowThresholdPercent: 98
		nodeStatusUpdateFrequency: 4s
		serializeImagePulls: false
	EOF
}

for i in $(seq 1 "$NODES"); do
	node=node-$i
	ns=$(nget "$node" netns)
	ip=$(nget "$node" ip)
	dir=$CL_TMP/$node
	mkdir -p "$dir/kubelet" "$dir/pod-logs" "$dir/volume-plugins" "$dir/ipam"
	cgroot=/minicri-cl$ID-$node
	cl_node_set "$node" "dir=$dir" "cgroup=$cgroot"
	CGROUP_ROOT=$cgroot cgroup_root_create
	runtime_start "$node" "$ns" "$dir" "$cgroot" "$HOSTS_DIR"
	kubelet_config "$node" "$dir" "$(nget "$node" endpoint)" "$cgroot" "$ip" >"$dir/kubelet.yaml"
	cl_proc_start "kubelet-$node" "$ns" "$BIN/kubelet" --config "$dir/kubelet.yaml" --root-dir "$dir/kubelet" \
		--kubeconfig "$CL_TMP/kubelet-$node.kubeconfig" --hostname-override "$node" --node-ip "$ip" --v "$KUBELET_V"
done

# podCIDRs from the controller-manager's IPAM, then each node's CNI network and the routes.
for node in "${CL_NODE_NAMES[@]}"; do
	cl_wait 120 "kubelet-$node" eval "[ -n \"\$(kubectl get node $node -o jsonpath='{.spec.podCIDR}' 2>/dev/null)\" ]"
	cidr=$(kubectl get node "$node" -o jsonpath='{.spec.podCIDR}')
	cl_node_set "$node" "podcidr=$cidr"
	cl_log "$node: IP $(nget "$node" ip), podCIDR $cidr"
	runtime_network "$node" "$cidr"
done
cl_routes_sync

# ---- kube-proxy on every node -----------------------------------------------------------
for node in "${CL_NODE_NAMES[@]}"; do
	cat >"$(nget "$node" dir)/kube-proxy.yaml" <<-EOF
		apiVersion: kubeproxy.config.k8s.io/v1alpha1
		kind: KubeProxyConfiguration
		clientConnection: {kubeconfig: $CL_TMP/kube-proxy.kubeconfig}
		hostnameOverride: $node
		mode: $PROXY_MODE
		clusterCIDR: $CLUSTER_CIDR
		healthzBindAddress: $(nget "$node" ip):10256
		metricsBindAddress: 127.0.0.1:10249
		# A node's netns is not the init netns: leave the (global) conntrack sysctls alone.
		conntrack: {maxPerCore: 0, min: 0, tcpEstablishedTimeout: 0s, tcpCloseWaitTimeout: 0s}
	EOF
	cl_proc_start "kube-proxy-$node" "$(nget "$node" netns)" "$BIN/kube-proxy" \
		--config "$(nget "$node" dir)/kube-proxy.yaml" --v 2
done

# ---- CoreDNS behind the kube-dns Service ------------------------------------------------
DNS_HEALTH=$(free_port)
DNS_READY=$(free_port)
cat >"$CL_TMP/Corefile" <<-EOF
	.:53 {
	    bind $GW
	    errors
	    health 127.0.0.1:$DNS_HEALTH
	    ready 127.0.0.1:$DNS_READY
	    kubernetes $CL_DOMAIN in-addr.arpa ip6.arpa {
	        kubeconfig $CL_TMP/admin.kubeconfig e2e
	        pods insecure
	        fallthrough in-addr.arpa ip6.arpa
	        ttl 30
	    }
	    forward . /etc/resolv.conf
	    cache 30
	}
EOF
cl_proc_start coredns - "$BIN/coredns" -conf "$CL_TMP/Corefile"
cl_wait 60 coredns curl -sf --max-time 2 "http://127.0.0.1:$DNS_READY/ready"
kubectl apply -f - >/dev/null <<-EOF
	apiVersion: v1
	kind: Service
	metadata:
	  name: kube-dns
	  namespace: kube-system
	  labels: {k8s-app: kube-dns, kubernetes.io/name: CoreDNS}
	spec:
	  clusterIP: $CL_DNS_IP
	  ports:
	  - {name: dns, port: 53, protocol: UDP, targetPort: 53}
	  - {name: dns-tcp, port: 53, protocol: TCP, targetPort: 53}
	---
	apiVersion: discovery.k8s.io/v1
	kind: EndpointSlice
	metadata:
	  name: kube-dns-host
	  namespace: kube-system
	  labels:
	    kubernetes.io/service-name: kube-dns
	    endpointslice.kubernetes.io/managed-by: minicri-cluster-harness
	addressType: IPv4
	endpoints:
	- addresses: [$GW]
	  conditions: {ready: true}
	ports:
	- {name: dns, port: 53, protocol: UDP}
	- {name: dns-tcp, port: 53, protocol: TCP}
EOF

# ---- ready ------------------------------------------------------------------------------
for node in "${CL_NODE_NAMES[@]}"; do
	cl_wait 180 "kubelet-$node" kubectl wait --for=condition=Ready "node/$node" --timeout=5s
	cl_wait 60 "kube-proxy-$node" curl -sf --max-time 2 "http://$(nget "$node" ip):10256/healthz"
done
cl_wait 90 - eval "kubectl get serviceaccount default && kubectl get configmap kube-root-ca.crt"

{
	echo "# written by test/cluster/up.sh; source it"
	echo "export KUBECONFIG=$CL_OUT/kubeconfig"
	echo "CLUSTER_RUNTIME=$RUNTIME"
	echo "CLUSTER_NODES=$NODES"
	echo "CLUSTER_NODE_NAMES=\"${CL_NODE_NAMES[*]}\""
	for node in "${CL_NODE_NAMES[@]}"; do
		echo "CLUSTER_NODE_IP_${node//-/_}=$(nget "$node" ip)"
		echo "CLUSTER_NODE_NETNS_${node//-/_}=$(nget "$node" netns)"
		echo "CLUSTER_NODE_ENDPOINT_${node//-/_}=$(nget "$node" endpoint)"
	done
	echo "CLUSTER_API_SERVER=$SERVER"
	echo "CLUSTER_REGISTRY=$REGISTRY"
	echo "CLUSTER_REGISTRY_HOSTS_DIR=$HOSTS_DIR"
	echo "CLUSTER_POD_CIDR=$CLUSTER_CIDR"
	echo "CLUSTER_SERVICE_CIDR=$CL_SERVICE_CIDR"
	echo "CLUSTER_DNS_IP=$CL_DNS_IP"
	echo "CLUSTER_DOMAIN=$CL_DOMAIN"
	echo "CLUSTER_PROXY_MODE=$PROXY_MODE"
	echo "CLUSTER_BIN=$BIN"
} >"$CL_OUT/env"
cl_log "cluster up in $(e2e_since "$T0")s: $NODES $RUNTIME node(s), kube-proxy $PROXY_MODE"
kubectl get nodes -o wide >&2
cat "$CL_OUT/env"

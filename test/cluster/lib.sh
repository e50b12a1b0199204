# shellcheck shell=bash
# test/cluster/lib.sh — state, processes and network plumbing of the multi-node cluster
# (sourced by up.sh, down.sh and netcheck.sh, after hack/instance.sh and test/e2e/lib.sh).
#
# Everything the harness makes is written to $CL_STATE as it is made, one sourceable line
# each, so down.sh (another process, maybe after up.sh failed half way) undoes exactly that:
#   CL_TMP=... CL_NET=... ...           facts of the cluster
#   cl_proc PID STARTTIME NAME LOG      a process started by PID (stopped newest first)
#   cl_node NAME KEY=VALUE...           a node (netns, IP, minicri instance, kubelet dirs)

CL_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
CL_OUT=${CLUSTER_OUT:-$CL_ROOT/_output/cluster}
CL_STATE=$CL_OUT/state
CL_LOGS=$CL_OUT/logs
CL_BRIDGE=                  # the underlay bridge on the host: mcri-cl<N> (up.sh)
CL_POD_BRIDGE=mclbr0        # each node's CNI bridge (inside the node's netns)
CL_SERVICE_CIDR=10.96.0.0/16
CL_DNS_IP=10.96.0.10
CL_DOMAIN=cluster.local

cl_log() { echo "cluster: $*" >&2; }

# cl_state LINE...: append to the state file (the undo list of down.sh).
cl_state() { printf '%s\n' "$@" >>"$CL_STATE"; }

# cl_starttime PID: field 22 of /proc/PID/stat (tells a reused PID from ours).
cl_starttime() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	awk '{ print $20 }' <<<"$stat"
}

# cl_proc_start NAME NETNS CMD...: start CMD in its own session (in network namespace
# NETNS unless it is "-"), logging to $CL_LOGS/NAME.log; recorded in the state file.
cl_proc_start() {
	local name=$1 netns=$2 log=$CL_LOGS/$1.log pid pre=()
	shift 2
	[ "$netns" = - ] || pre=(nsenter "--net=/run/netns/$netns" --)
	setsid "${pre[@]}" "$@" </dev/null >"$log" 2>&1 8>&- 9>&- &
	pid=$!
	cl_state "cl_proc $pid $(cl_starttime "$pid" || echo 0) $name $log"
	declare -g "CL_PID_${name//[^A-Za-z0-9]/_}=$pid"
	cl_log "started $name (pid $pid${pre:+, netns $netns}, log $log)"
}

# cl_pid NAME: the PID of a process started by cl_proc_start in this shell.
cl_pid() { local v="CL_PID_${1//[^A-Za-z0-9]/_}"; echo "${!v:-}"; }

# cl_alive NAME: a process started in this shell is still running.
cl_alive() { local p; p=$(cl_pid "$1"); [ -n "$p" ] && proc_alive "$p"; }

# cl_wait TIMEOUT NAME CMD...: wait_for CMD, failing early when process NAME died.
cl_wait() {
	local timeout=$1 name=$2 deadline
	shift 2
	deadline=$(($(date +%s) + timeout))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		if [ "$name" != - ] && ! cl_alive "$name"; then
			cl_log "$name exited; last lines of $CL_LOGS/$name.log:"
			tail -n 20 "$CL_LOGS/$name.log" >&2 || true
			return 1
		fi
		[ "$(date +%s)" -lt "$deadline" ] || { cl_log "timed out after ${timeout}s: $*"; return 1; }
		sleep 0.3
	done
}

# ---- reading the state (down.sh, netcheck.sh) -----------------------------------------
CL_PROCS=()          # "pid starttime name" in start order
CL_NODE_NAMES=()
declare -A CL_NODE=() # [NAME.KEY]=VALUE

cl_proc() { CL_PROCS+=("$1 $2 $3"); }
cl_node() {
	local name=$1 kv
	shift
	case " ${CL_NODE_NAMES[*]} " in *" $name "*) ;; *) CL_NODE_NAMES+=("$name") ;; esac
	for kv in "$@"; do CL_NODE["$name.${kv%%=*}"]=${kv#*=}; done
}

# cl_node_set NODE KEY=VALUE...: record node facts, in this shell and in the state file.
cl_node_set() {
	cl_node "$@"
	cl_state "cl_node $*"
}

cl_state_load() {
	[ -f "$CL_STATE" ] || return 1
	# shellcheck disable=SC1090
	. "$CL_STATE"
}

# nget NODE KEY: a node's recorded value.
nget() { echo "${CL_NODE["$1.$2"]:-}"; }

# cl_state_alive NAME: the recorded process NAME is still the one started and running.
cl_state_alive() {
	local e pid st name
	for e in "${CL_PROCS[@]}"; do
		read -r pid st name <<<"$e"
		[ "$name" = "$1" ] || continue
		proc_alive "$pid" && [ "$(cl_starttime "$pid")" = "$st" ]
		return
	done
	return 1
}

# cl_stop_procs [NAME_GLOB]: stop recorded processes (matching the glob), newest first,
# by PID, if the PID is still the process we started (same start time).
cl_stop_procs() {
	local glob=${1:-*} i pid st name
	for ((i = ${#CL_PROCS[@]} - 1; i >= 0; i--)); do
		read -r pid st name <<<"${CL_PROCS[$i]}"
		# shellcheck disable=SC2254
		case $name in $glob) ;; *) continue ;; esac
		proc_alive "$pid" || continue
		[ "$(cl_starttime "$pid")" = "$st" ] || { cl_log "pid $pid is no longer $name; left alone"; continue; }
		proc_term "$pid" 30 || cl_log "$name (pid $pid) did not exit within 30s of SIGTERM; killed it"
		cl_log "stopped $name (pid $pid)"
	done
}

# ---- network plumbing -------------------------------------------------------------------

# cl_underlay_up NET: the host bridge $CL_BRIDGE with NET.255.1/24.
cl_underlay_up() {
	ip link add "$CL_BRIDGE" type bridge
	cl_state "CL_MADE_BRIDGE=$CL_BRIDGE"
	ip addr add "$1.255.1/24" dev "$CL_BRIDGE"
	ip link set "$CL_BRIDGE" up
}

# cl_node_netns NAME NETNS VETH IP GATEWAY: the node's network namespace, its eth0 (a veth
# whose host end VETH is on the underlay bridge) with IP/24, default route via GATEWAY.
cl_node_netns() {
	local name=$1 ns=$2 veth=$3 ip=$4 gw=$5
	ip netns add "$ns"
	cl_node_set "$name" "netns=$ns"
	ip link add "$veth" type veth peer name "${veth}p" netns "$ns"
	cl_node_set "$name" "veth=$veth"
	ip link set "$veth" master "$CL_BRIDGE" up
	ip -n "$ns" link set "${veth}p" name eth0
	ip -n "$ns" addr add "$ip/24" dev eth0
	ip -n "$ns" link set lo up
	ip -n "$ns" link set eth0 up
	ip -n "$ns" route add default via "$gw"
	# Pods route through the node; kube-proxy needs bridged pod traffic in iptables/nft.
	ip netns exec "$ns" sysctl -qw net.ipv4.ip_forward=1
	ip netns exec "$ns" sysctl -qw net.bridge.bridge-nf-call-iptables=1 2>/dev/null ||
		cl_log "warning: no net.bridge.bridge-nf-call-iptables in $ns (br_netfilter)"
}

# cl_node_conflist FILE PODCIDR IPAM_DIR: the node's CNI network (bridge, no masquerade:
# pods reach pods on other nodes with their own IPs through the routes of cl_routes_sync).
cl_node_conflist() {
	cat >"$1.tmp" <<-EOF
		{
		  "cniVersion": "1.0.0",
		  "name": "minicri-cluster",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$CL_POD_BRIDGE",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "dataDir": "$3",
		        "ranges": [[{"subnet": "$2"}]],
		        "routes": [{"dst": "0.0.0.0/0"}]
		      }
		    },
		    {"type": "portmap", "capabilities": {"portMappings": true}, "snat": true}
		  ]
		}
	EOF
	mv "$1.tmp" "$1"
}

# cl_routes_sync: the host routes each node's pod CIDR via the node's underlay IP; each
# node routes every other node's pod CIDR the same way (its default route is the host).
cl_routes_sync() {
	local n m cidr
	for n in "${CL_NODE_NAMES[@]}"; do
		cidr=$(nget "$n" podcidr)
		ip route replace "$cidr" via "$(nget "$n" ip)" dev "$CL_BRIDGE"
		cl_state "CL_HOST_ROUTES+=($cidr)"
		for m in "${CL_NODE_NAMES[@]}"; do
			[ "$m" != "$n" ] || continue
			ip -n "$(nget "$m" netns)" route replace "$cidr" via "$(nget "$n" ip)" dev eth0
		done
	done
}

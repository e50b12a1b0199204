# shellcheck shell=bash
# test/cluster/runtime.sh — a node's container runtime (CLUSTER_RUNTIME / CL_RUNTIME):
#   runtime_check                       the runtime is there (before anything is made)
#   runtime_start NODE NETNS DIR CGROUP HOSTS_DIR   start it in the node's netns; records
#                                       the node's endpoint (and what down.sh needs)
#   runtime_network NODE PODCIDR        give it the node's pod network (CNI conflist)
#   runtime_stop NODE                   remove its pods, stop it, check for leaks
#   runtime_use NODE                    point instance_crictl/leak_check at the node
# minicri runs through hack/instance.sh (one private instance per node).

runtime_check() {
	case $RUNTIME in
	minicri)
		[ -x "${MINICRI:-$ROOT/bin/minicri}" ] || { cl_log "bin/minicri missing: run make build"; return 1; }
		[ -x "$CRICTL" ] || { cl_log "$CRICTL missing: run make deps"; return 1; }
		;;
	containerd)
		cl_log "CLUSTER_RUNTIME=containerd is not implemented yet"
		return 1
		;;
	esac
}

runtime_start() {
	local node=$1 ns=$2 dir=$3 cgroot=$4 hosts=$5 rc=0
	# Pods wait (network not ready) until runtime_network writes the node's conflist.
	INSTANCE_NETNS=$ns INSTANCE_HOSTS_DIR=$hosts INSTANCE_DEFAULT_NETWORK=false \
		instance_start "cl-$node" "$CL_POD_BRIDGE" "$CLUSTER_CIDR" "n${node##*-}" 8>&- 9>&- || rc=$?
	[ "/minicri-cl-$node" = "$cgroot" ] || { cl_log "cgroup root $cgroot is not the instance's $INSTANCE_CGROUP"; rc=1; }
	cl_node_set "$node" "inst_tmp=$INSTANCE_TMP" "inst_pid=${INSTANCE_PID:-}" "endpoint=$INSTANCE_ENDPOINT" \
		"inst_st=$(cl_starttime "${INSTANCE_PID:-0}" || echo 0)"
	INSTANCE_TMP=
	INSTANCE_PID=
	return $rc
}

runtime_network() {
	local node=$1 cidr=$2
	cl_node_conflist "$(nget "$node" inst_tmp)/net.d/10-cluster.conflist" "$cidr" "$(nget "$node" dir)/ipam"
}

# runtime_use NODE: the instance.sh and leak_check globals for NODE.
runtime_use() {
	local node=$1
	INSTANCE_TMP=$(nget "$node" inst_tmp)
	INSTANCE_PID=$(nget "$node" inst_pid)
	INSTANCE_SOCK=$INSTANCE_TMP/minicri.sock
	INSTANCE_ENDPOINT=unix://$INSTANCE_SOCK
	INSTANCE_LOG=$INSTANCE_TMP/minicri.log
	INSTANCE_CGROUP=$(nget "$node" cgroup)
	INSTANCE_BRIDGE=$CL_POD_BRIDGE
	INSTANCE_NETNS=$(nget "$node" netns)
	CGROUP_ROOT=$INSTANCE_CGROUP
	KUBELET_ROOTS=("$(nget "$node" dir)/kubelet")
}

runtime_stop() {
	local node=$1 st rc=0
	[ -n "$(nget "$node" inst_tmp)" ] || return 0
	runtime_use "$node"
	st=$(nget "$node" inst_st)
	# A PID that is no longer our minicri is left alone.
	if [ -n "$INSTANCE_PID" ] && proc_alive "$INSTANCE_PID" && [ "$(cl_starttime "$INSTANCE_PID")" != "$st" ]; then
		cl_log "pid $INSTANCE_PID is no longer $node's minicri"
		INSTANCE_PID=
	fi
	[ -d "$INSTANCE_TMP" ] || return 0
	INSTANCE_ARTIFACTS=$CL_LOGS/minicri-$node instance_stop || rc=$?
	INSTANCE_TMP=
	return $rc
}

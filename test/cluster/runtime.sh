# shellcheck shell=bash
# test/cluster/runtime.sh — a node's container runtime (CLUSTER_RUNTIME / CL_RUNTIME):
#   runtime_check                       the runtime is there (before anything is made)
#   runtime_start NODE NETNS DIR CGROUP HOSTS_DIR   start it in the node's netns; records
#                                       the node's endpoint (and what down.sh needs)
#   runtime_network NODE PODCIDR        give it the node's pod network (CNI conflist)
#   runtime_stop NODE                   remove its pods, stop it, check for leaks
#   runtime_use NODE                    point instance_crictl/leak_check at the node
# minicri runs through hack/instance.sh (one private instance per node); containerd
# (Debian's 1.6 + runc, as make bench runs it; CLUSTER_CTRD_BIN_DIR: another containerd,
# shim and runc, e.g. 2.4 from hack/bench-tools.sh) through hack/containerd.sh's config and stop.
#
# containerd runs in a private mount namespace (hack/containerd.sh: /run is its own). The
# kubelet mounts pod volumes (secrets, projected tokens) in the host's namespace after
# containerd started; so the node's directory (the kubelet's root below it) is made a
# shared mount first and containerd's namespace a slave of it: those mounts reach runc.

# shellcheck source=hack/containerd.sh disable=SC1091
. "$ROOT/hack/containerd.sh"

runtime_check() {
	case $RUNTIME in
	minicri)
		[ -x "${MINICRI:-$ROOT/bin/minicri}" ] || { cl_log "bin/minicri missing: run make build"; return 1; }
		[ -x "$CRICTL" ] || { cl_log "$CRICTL missing: run make deps"; return 1; }
		;;
	containerd)
		ctrd_install
		;;
	esac
}

# runtime_crictl ARGS...: crictl against the node chosen by runtime_use.
runtime_crictl() {
	case $RUNTIME in
	minicri) instance_crictl "$@" ;;
	containerd) ctrd_crictl "$@" ;;
	esac
}

runtime_start() {
	[ "$RUNTIME" = minicri ] || { ctrd_node_start "$@"; return; }
	local node=$1 ns=$2 dir=$3 cgroot=$4 hosts=$5 rc=0
	# Pods wait (network not ready) until runtime_network writes the node's conflist.
	INSTANCE_NETNS=$ns INSTANCE_HOSTS_DIR=$hosts INSTANCE_DEFAULT_NETWORK=false \
		instance_start "${cgroot#/minicri-}" "$CL_POD_BRIDGE" "$CLUSTER_CIDR" "n${node##*-}" 8>&- 9>&- || rc=$?
	[ "$INSTANCE_CGROUP" = "$cgroot" ] || { cl_log "cgroup root $cgroot is not the instance's $INSTANCE_CGROUP"; rc=1; }
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

# ctrd_node_start NODE NETNS DIR CGROUP HOSTS_DIR: containerd for the node, in its netns.
ctrd_node_start() {
	local node=$1 ns=$2 dir=$3 cgroot=$4 hosts=$5 i
	CTRD_TMP=$(mktemp -d "/tmp/c${node##*-}.XXXXX")
	cl_node_set "$node" "inst_tmp=$CTRD_TMP"
	CTRD_SOCK=$CTRD_TMP/containerd.sock
	CTRD_ENDPOINT=unix://$CTRD_SOCK
	CTRD_LOG=$CTRD_TMP/containerd.log
	mkdir -p "$CTRD_TMP"/{root,state,run,runc,opt,net.d,cni-ipam}
	: >"$CTRD_TMP/crictl.yaml"
	# CLUSTER_CTRD_BIN_DIR: another containerd + shim + runc (hack/bench-tools.sh's 2.4).
	local bindir=${CLUSTER_CTRD_BIN_DIR:-}
	CTRD_RUNC=${bindir:+$bindir/runc} ctrd__write_config "${cgroot#/minicri-}" "$CL_POD_BRIDGE" "$CLUSTER_CIDR"
	# No network until runtime_network; the registry is the cluster's.
	rm -f "$CTRD_TMP"/net.d/*
	ln -s "$hosts" "$CTRD_TMP/certs.d"
	mount --bind "$dir" "$dir"
	cl_node_set "$node" "shared_mount=$dir"
	mount --make-rshared "$dir"
	# shellcheck disable=SC2016
	setsid nsenter "--net=/run/netns/$ns" -- unshare --mount --propagation slave -- /bin/sh -c \
		'[ -z "$2" ] || PATH=$2:$PATH; mount --bind "$1/run" /run && exec containerd --config "$1/config.toml" --root "$1/root" --state "$1/state" --address "$1/containerd.sock" --log-level info' \
		sh "$CTRD_TMP" "$bindir" </dev/null >"$CTRD_LOG" 2>&1 8>&- 9>&- &
	CTRD_PID=$!
	cl_node_set "$node" "inst_pid=$CTRD_PID" "endpoint=$CTRD_ENDPOINT" "inst_st=$(cl_starttime "$CTRD_PID" || echo 0)"
	cl_log "starting containerd for $node in $CTRD_TMP (pid $CTRD_PID, log $CTRD_LOG)"
	for ((i = 0; i < 600; i++)); do
		proc_alive "$CTRD_PID" || { cl_log "containerd exited:"; tail -n 20 "$CTRD_LOG" >&2; return 1; }
		[ -S "$CTRD_SOCK" ] && ctrd_crictl --timeout 2s version >/dev/null 2>&1 && return 0
		sleep 0.1
	done
	cl_log "containerd did not serve $CTRD_ENDPOINT within 60s"
	return 1
}

# runtime_use NODE: the instance.sh (or containerd.sh) and leak_check globals for NODE.
runtime_use() {
	local node=$1
	if [ "$RUNTIME" = containerd ]; then
		CTRD_TMP=$(nget "$node" inst_tmp)
		CTRD_PID=$(nget "$node" inst_pid)
		CTRD_SOCK=$CTRD_TMP/containerd.sock
		CTRD_ENDPOINT=unix://$CTRD_SOCK
		CTRD_LOG=$CTRD_TMP/containerd.log
		CTRD_CGROUP=$(nget "$node" cgroup)
		CTRD_BRIDGE=
		CTRD_REGISTRY_PID=
	fi
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
	local node=$1 st rc=0 pods
	[ -n "$(nget "$node" inst_tmp)" ] || return 0
	runtime_use "$node"
	st=$(nget "$node" inst_st)
	if [ "$RUNTIME" = containerd ]; then
		if [ -n "$CTRD_PID" ] && proc_alive "$CTRD_PID" && [ "$(cl_starttime "$CTRD_PID")" != "$st" ]; then
			CTRD_PID=
		fi
		CTRD_ARTIFACTS=$CL_LOGS/containerd-$node ctrd_stop || rc=$?
		CTRD_TMP=
		return $rc
	fi
	# A PID that is no longer our minicri is left alone.
	if [ -n "$INSTANCE_PID" ] && proc_alive "$INSTANCE_PID" && [ "$(cl_starttime "$INSTANCE_PID")" != "$st" ]; then
		cl_log "pid $INSTANCE_PID is no longer $node's minicri"
		INSTANCE_PID=
	fi
	[ -d "$INSTANCE_TMP" ] || return 0
	# Pods first (as test/e2e/run.sh does), so that the kubelet's pod and QoS cgroups are
	# empty and can go before instance_stop looks for cgroups left behind.
	if [ -n "$INSTANCE_PID" ] && proc_alive "$INSTANCE_PID"; then
		pods=$(instance_crictl pods -q 2>/dev/null | tr '\n' ' ')
		# shellcheck disable=SC2086
		[ -z "${pods// /}" ] || { instance_crictl stopp $pods && instance_crictl rmp $pods; } >/dev/null 2>&1 || true
	fi
	cgroup_root_remove
	INSTANCE_ARTIFACTS=$CL_LOGS/minicri-$node instance_stop || rc=$?
	INSTANCE_TMP=
	return $rc
}

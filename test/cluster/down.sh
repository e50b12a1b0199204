#!/usr/bin/env bash
# test/cluster/down.sh — stop and remove the cluster of test/cluster/up.sh (`make cluster-down`),
# from the state file it wrote: kubelets and kube-proxies first, then each node's runtime
# (its pods removed, then the leak check of hack/instance.sh), kube-proxy --cleanup in each
# node's netns, the control plane, CoreDNS and the registry (each by PID), then cgroups,
# mounts, network namespaces, veths, the underlay bridge and the host routes.
# Exits non-zero if something was left behind or could not be removed.
set -uo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
cd "$ROOT"
CGROUP_DRIVER=cgroupfs
# shellcheck source=hack/instance.sh disable=SC1091
. "$ROOT/hack/instance.sh"
# shellcheck source=test/e2e/lib.sh disable=SC1091
. "$ROOT/test/e2e/lib.sh"
# shellcheck source=test/cluster/lib.sh disable=SC1091
. "$ROOT/test/cluster/lib.sh"
# shellcheck source=test/cluster/runtime.sh disable=SC1091
. "$ROOT/test/cluster/runtime.sh"

[ "$(id -u)" = 0 ] || { cl_log "needs root"; exit 1; }
CL_TMP=
CL_MADE_BRIDGE=
CL_RUNTIME=minicri
CL_HOST_ROUTES=()
if ! cl_state_load; then
	cl_log "no cluster state ($CL_STATE): nothing to do"
	exit 0
fi
RUNTIME=$CL_RUNTIME
mkdir -p "$CL_LOGS"
rc=0
BIN=$CL_OUT/bin

cl_stop_procs 'kube-proxy-*'
cl_stop_procs 'kubelet-*'
for node in "${CL_NODE_NAMES[@]}"; do
	ns=$(nget "$node" netns)
	runtime_stop "$node" || { cl_log "$node: the runtime did not stop cleanly or left something behind"; rc=1; }
	if [ -n "$ns" ] && [ -e "/run/netns/$ns" ] && [ -x "$BIN/kube-proxy" ]; then
		nsenter "--net=/run/netns/$ns" -- "$BIN/kube-proxy" --cleanup >>"$CL_LOGS/kube-proxy-cleanup.log" 2>&1 ||
			cl_log "$node: kube-proxy --cleanup failed (see $CL_LOGS/kube-proxy-cleanup.log)"
	fi
done
cl_stop_procs '*'

for node in "${CL_NODE_NAMES[@]}"; do
	dir=$(nget "$node" dir)
	# The kubelet's volume mounts (and, with containerd, the node dir's shared bind mount).
	[ -z "$dir" ] || unmount_tree "$dir"
	cg=$(nget "$node" cgroup)
	if [ -n "$cg" ]; then
		CGROUP_ROOT=$cg cgroup_root_remove
		[ -z "$(find /sys/fs/cgroup -maxdepth 2 -path "*$cg" 2>/dev/null)" ] || { cl_log "cgroup $cg left"; rc=1; }
	fi
	ns=$(nget "$node" netns)
	# Deleting the netns deletes its end of the veth, and so the pair: asynchronously (the
	# kernel's netns cleanup work), so the host end may vanish between show and del.
	if [ -n "$ns" ] && [ -e "/run/netns/$ns" ]; then
		ip netns del "$ns" || { cl_log "cannot delete netns $ns"; rc=1; }
	fi
	veth=$(nget "$node" veth)
	if [ -n "$veth" ] && ip link show "$veth" >/dev/null 2>&1; then
		ip link del "$veth" 2>/dev/null || ! ip link show "$veth" >/dev/null 2>&1 || { cl_log "cannot delete $veth"; rc=1; }
	fi
done
for r in "${CL_HOST_ROUTES[@]}"; do ip route del "$r" 2>/dev/null || true; done
if [ -n "$CL_MADE_BRIDGE" ] && ip link show "$CL_MADE_BRIDGE" >/dev/null 2>&1; then
	ip link del "$CL_MADE_BRIDGE" || { cl_log "cannot delete bridge $CL_MADE_BRIDGE"; rc=1; }
fi

if [ -n "$CL_TMP" ] && [ -d "$CL_TMP" ]; then
	# The kubelets' links in /var/log/containers into this cluster's pod log dirs.
	find /var/log/containers -maxdepth 1 -type l -lname "$CL_TMP/*" -delete 2>/dev/null || true
	if [ -n "$(mounts_under "$CL_TMP")" ]; then
		cl_log "not removing $CL_TMP: mounts remain: $(mounts_under "$CL_TMP" | head -n 5 | tr '\n' ' ')"
		rc=1
	else
		rm -rf --one-file-system "$CL_TMP"
	fi
fi
mv "$CL_STATE" "$CL_STATE.down"
rm -f "$CL_OUT/env" "$CL_OUT/kubeconfig"
[ $rc -eq 0 ] && cl_log "cluster removed" || cl_log "cluster removed, with problems (see above)"
exit $rc

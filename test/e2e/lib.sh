# shellcheck shell=bash
# test/e2e/lib.sh — helpers for run.sh: checks, processes started by PID, waiting, dumps.

E2E_FAILS=()        # names of failed checks
E2E_PROCS=()        # "pid name" of every process started, in start order
declare -A E2E_PID=()
declare -A E2E_LOG=()
E2E_TIMINGS=()      # "label: value" lines for the summary

e2e_log() { echo "e2e: $*" >&2; }
e2e_now() { date +%s.%N; }
# e2e_since T0: seconds since T0 with millisecond precision
e2e_since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.3f", b - a }'; }


# proc_start NAME LOG CMD... : start CMD in its own session, logging to LOG.
proc_start() {
	local name=$1 log=$2
	shift 2
	setsid "$@" </dev/null >"$log" 2>&1 8>&- 9>&- &
	E2E_PID[$name]=$!
	E2E_LOG[$name]=$log
	E2E_PROCS+=("$! $name")
	e2e_log "started $name (pid $!, log $log)"
}

# proc_stop NAME [GRACE_SECONDS]: SIGTERM by PID, SIGKILL after the grace period.
proc_stop() {
	local name=$1 grace=${2:-20} pid
	pid=${E2E_PID[$name]:-}
	[ -n "$pid" ] || return 0
	if proc_alive "$pid" && ! proc_term "$pid" "$grace"; then
		e2e_log "$name (pid $pid) did not exit within ${grace}s of SIGTERM; killed it"
	fi
	wait "$pid" 2>/dev/null || true
	unset "E2E_PID[$name]"
	e2e_log "stopped $name (pid $pid)"
}

# proc_stop_all: every process still running, newest first.
proc_stop_all() {
	local i entry name
	for ((i = ${#E2E_PROCS[@]} - 1; i >= 0; i--)); do
		entry=${E2E_PROCS[$i]}
		name=${entry#* }
		[ -n "${E2E_PID[$name]:-}" ] && [ "${E2E_PID[$name]}" = "${entry%% *}" ] && proc_stop "$name"
	done
	return 0
}

# proc_running NAME: the process is still alive (a component crash is a failed check).
proc_running() {
	local pid=${E2E_PID[$1]:-}
	[ -n "$pid" ] && proc_alive "$pid"
}

# wait_for TIMEOUT_SECONDS CMD... : poll CMD every 0.2s until it succeeds.
wait_for() {
	local timeout=$1 deadline
	shift
	deadline=$(($(date +%s) + timeout))
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$(date +%s)" -lt "$deadline" ] || return 1
		sleep 0.2
	done
}

# dump_logs: the last lines of the kubelet's and minicri's logs (called on a failed check).
dump_logs() {
	local f=${E2E_LOG[kubelet]:-}
	if [ -n "$f" ] && [ -f "$f" ]; then
		echo "---- last 40 lines of the kubelet log ($f) ----" >&2
		tail -n 40 "$f" >&2 || true
	fi
	if [ -n "${INSTANCE_LOG:-}" ] && [ -f "$INSTANCE_LOG" ]; then
		echo "---- last 40 lines of the minicri log ($INSTANCE_LOG) ----" >&2
		grep -v '"msg":"CRI call","method":"/runtime.v1.\(RuntimeService/\(ListContainers\|ListPodSandbox\|Status\|Version\|ListContainerStats\|ListPodSandboxStats\)\|ImageService/\(ImageFsInfo\|ListImages\)\)"' \
			"$INSTANCE_LOG" | tail -n 40 >&2 || true
		echo "---- (routine List/Status/Version calls left out; full log: $INSTANCE_LOG) ----" >&2
	fi
}

# fail NAME [DETAIL]: record a failed check and print the logs.
fail() {
	E2E_FAILS+=("$E2E_MODE: $1")
	echo "e2e: FAIL [$E2E_MODE] $1${2:+: $2}" >&2
	dump_logs
	if [ -n "${E2E_PAUSE_ON_FAIL:-}" ]; then
		e2e_log "E2E_PAUSE_ON_FAIL: pausing ${E2E_PAUSE_ON_FAIL}s for inspection"
		sleep "$E2E_PAUSE_ON_FAIL"
	fi
	return 1
}

pass() { echo "e2e: ok   [$E2E_MODE] $1" >&2; }

# check NAME CMD... : run CMD; pass or fail (returns CMD's failure so callers can stop).
check() {
	local name=$1
	shift
	if "$@"; then
		pass "$name"
	else
		fail "$name"
	fi
}

# output_has PATTERN CMD... : CMD succeeds and its output (stdout and stderr) matches the
# basic regexp PATTERN. (Not `CMD | grep -q`: with pipefail, grep quitting early can fail CMD.)
output_has() {
	local pattern=$1 out
	shift
	out=$("$@" 2>&1) || return 1
	grep -q -- "$pattern" <<<"$out"
}

# timing LABEL SECONDS
timing() {
	E2E_TIMINGS+=("$1: ${2}s")
	e2e_log "TIME $1: ${2}s"
}

# ---- ports, cgroups, mounts, leaks (shared with test/cluster) ------------------------------
# The cgroup helpers read CGROUP_ROOT and CGROUP_DRIVER; leak_check reads INSTANCE_TMP,
# MINICRI_BASE_MOUNTS, KUBELET_ROOTS, INSTANCE_PID and calls crictl (the caller defines it).

# free_port: a TCP port nothing listens on (and not handed out before in this run).
E2E_PORTS=" "
free_port() {
	local p
	while :; do
		p=$((20000 + RANDOM % 20000))
		case $E2E_PORTS in *" $p "*) continue ;; esac
		[ -z "$(ss -Htln "sport = :$p" 2>/dev/null)" ] || continue
		E2E_PORTS="$E2E_PORTS$p "
		echo "$p"
		return
	done
}

cgroup_hierarchies() {
	awk '$9 == "cgroup" || $9 == "cgroup2" { print $5 }' /proc/self/mountinfo
}

# cgroup_root_create: the kubelet's cgroup root must exist in every v1 hierarchy first.
# (systemd driver: the kubelet makes kubepods.slice itself.)
cgroup_root_create() {
	local h
	[ "$CGROUP_DRIVER" = cgroupfs ] || return 0
	while read -r h; do
		mkdir -p "$h$CGROUP_ROOT"
		# A new cpuset cgroup starts empty; copy the parent's CPUs and memory nodes.
		if [ -f "$h/cpuset.cpus" ] && [ -f "$h$CGROUP_ROOT/cpuset.cpus" ]; then
			[ -n "$(cat "$h$CGROUP_ROOT/cpuset.cpus")" ] || cat "$h/cpuset.cpus" >"$h$CGROUP_ROOT/cpuset.cpus"
			[ -n "$(cat "$h$CGROUP_ROOT/cpuset.mems")" ] || cat "$h/cpuset.mems" >"$h$CGROUP_ROOT/cpuset.mems"
		fi
	done < <(cgroup_hierarchies)
}

# cgroup_procs_under: "cgroup: pids" for every cgroup below the root that holds processes.
cgroup_procs_under() {
	local h f procs
	if [ "$CGROUP_DRIVER" = systemd ]; then
		while read -r f; do
			procs=$(tr '\n' ' ' <"$f" 2>/dev/null) || continue
			[ -z "${procs// /}" ] || echo "${f%/cgroup.procs}: $procs"
		done < <(find /sys/fs/cgroup/kubepods.slice -name cgroup.procs 2>/dev/null)
		return
	fi
	while read -r h; do
		[ -d "$h$CGROUP_ROOT" ] || continue
		while read -r f; do
			procs=$(tr '\n' ' ' <"$f" 2>/dev/null) || continue
			[ -z "${procs// /}" ] || echo "${f%/cgroup.procs}: $procs"
		done < <(find "$h$CGROUP_ROOT" -name cgroup.procs 2>/dev/null)
	done < <(cgroup_hierarchies)
}

# pod_cgroups: pod-level cgroups the kubelet made (kubepods/[qos/]pod<uid>, or
# kubepods.slice/[kubepods-<qos>.slice/]kubepods-[<qos>-]pod<uid>.slice) that still exist.
pod_cgroups() {
	local h
	if [ "$CGROUP_DRIVER" = systemd ]; then
		find /sys/fs/cgroup/kubepods.slice -mindepth 1 -maxdepth 2 -type d -name 'kubepods-*pod*.slice' 2>/dev/null
		return
	fi
	while read -r h; do
		[ -d "$h$CGROUP_ROOT/kubepods" ] || continue
		find "$h$CGROUP_ROOT/kubepods" -mindepth 1 -maxdepth 2 -type d -name 'pod*' 2>/dev/null
	done < <(cgroup_hierarchies)
}

cgroup_root_remove() {
	local h
	if [ "$CGROUP_DRIVER" = systemd ]; then
		# The kubelet leaves kubepods.slice (and its QoS slices) behind when it stops.
		[ ! -d /sys/fs/cgroup/kubepods.slice ] || systemctl stop kubepods.slice 2>/dev/null || true
		return 0
	fi
	while read -r h; do
		[ -d "$h$CGROUP_ROOT" ] || continue
		find "$h$CGROUP_ROOT" -depth -type d -exec rmdir {} \; 2>/dev/null || true
		[ ! -d "$h$CGROUP_ROOT" ] || e2e_log "warning: could not remove $h$CGROUP_ROOT"
	done < <(cgroup_hierarchies)
}

# mounts_under DIR: mount points at or below DIR (path through the environment).
mounts_under() {
	D=$1 awk '$5 == ENVIRON["D"] || index($5, ENVIRON["D"] "/") == 1 { print $5 }' /proc/self/mountinfo
}

unmount_tree() {
	local m
	mounts_under "$1" | sort -r | while read -r m; do umount -l "$m" 2>/dev/null || true; done
}

no_sandboxes() { [ "$(crictl pods -q 2>/dev/null | grep -c .)" = 0 ]; }
no_containers() { [ "$(crictl ps -a -q 2>/dev/null | grep -c .)" = 0 ]; }
no_pod_cgroups() { [ -z "$(pod_cgroups)" ]; }

# leak_check: after every pod is gone: nothing left in minicri or on the machine.
leak_check() {
	local leaks=0 m netns procs pid cmd f
	if ! no_sandboxes; then
		e2e_log "LEAK: sandboxes still listed: $(crictl pods 2>&1 | tail -n +2 | tr '\n' ';')"
		leaks=1
	fi
	if ! no_containers; then
		e2e_log "LEAK: containers still listed: $(crictl ps -a 2>&1 | tail -n +2 | tr '\n' ';')"
		leaks=1
	fi
	netns=$(find "$INSTANCE_TMP/state/netns" -mindepth 1 2>/dev/null | head -n 5 | tr '\n' ' ')
	if [ -n "$netns" ]; then
		e2e_log "LEAK: netns pins: $netns"
		leaks=1
	fi
	while read -r m; do
		[ -n "$m" ] || continue
		grep -qxF "$m" <<<"$MINICRI_BASE_MOUNTS" && continue
		# The netns pin dir is bind-mounted onto itself and made shared while minicri
		# runs (by design); a pin below it is a leak.
		[ "$m" != "$INSTANCE_TMP/state/netns" ] || continue
		# A lazily pulled layer (lazy pulls on) is the image's, not a pod's: mounted until
		# the image goes (instance_stop checks that none is left once minicri-lazyfs stops).
		case $m in "$INSTANCE_TMP"/root/images/lazy/*/mnt) continue ;; esac
		e2e_log "LEAK: mount $m"
		leaks=1
	done < <(mounts_under "$INSTANCE_TMP")
	for m in "${KUBELET_ROOTS[@]}"; do
		if [ -n "$(mounts_under "$m/pods")" ]; then
			e2e_log "LEAK: volume mounts under $m/pods: $(mounts_under "$m/pods" | tr '\n' ' ')"
			leaks=1
		fi
	done
	procs=$(cgroup_procs_under)
	if [ -n "$procs" ]; then
		e2e_log "LEAK: processes in pod cgroups: $procs"
		leaks=1
	fi
	if ! no_pod_cgroups; then
		e2e_log "LEAK: pod cgroups left: $(pod_cgroups | head -n 10 | tr '\n' ' ')"
		leaks=1
	fi
	# Processes that mention the instance (monitors), other than minicri and the registry.
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		case $pid in "$$" | "${BASHPID:-}" | "$INSTANCE_PID" | "${INSTANCE_REGISTRY_PID:-}") continue ;; esac
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case $cmd in
		# The node's minicri-lazyfs, which serves the lazily pulled layers of images (it
		# outlives pods and minicri by design; instance_stop stops it).
		*"--socket $INSTANCE_TMP/state/lazyfs/"*) ;;
		*"$INSTANCE_TMP/state"*)
			e2e_log "LEAK: process $pid: $cmd"
			leaks=1
			;;
		esac
	done
	return $leaks
}

# free_subnet16 FIRST LAST: the first 10.n.0.0/16 (FIRST <= n <= LAST) that no route on the
# machine touches (other private instances on this machine have their own bridges; a route
# clash sends pod traffic to the wrong bridge).
free_subnet16() {
	local n routes
	routes=$(ip -4 route show)
	for n in $(seq "$1" "$2"); do
		# Neither a route inside 10.n/16 nor one that covers it (other than the default).
		! grep -q "^10\.$n\." <<<"$routes" || continue
		[ -z "$(ip -4 route show to match "10.$n.0.1" 2>/dev/null | grep -v '^default')" ] || continue
		echo "10.$n.0.0/16"
		return
	done
	return 1
}

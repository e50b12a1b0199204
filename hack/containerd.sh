# shellcheck shell=bash
# hack/containerd.sh — start, stop and leak-check a PRIVATE containerd (Debian's
# containerd 1.6/1.7 + runc) for `make bench`. Sourced by hack/bench.sh; needs root.
#
#   ctrd_install                        apt-get install containerd runc when missing
#   ctrd_start NAME BRIDGE SUBNET [TAG] start containerd on its own temp dir and socket,
#                                       with its own offline test registry; wait for CRI
#   ctrd_stop                           remove every pod, stop containerd by PID, stop the
#                                       registry, check for leaks, delete the bridge
#   ctrd_crictl ARGS...                 crictl against the instance
#
# Nothing of a system containerd is used: --config/--root/--state/--address and a private
# config.toml (root, state, socket, opt dir, runc root, CNI conf dir and host-local data
# dir all under the temp dir). containerd 1.6 hard-codes one more path: the shims' ttrpc
# sockets go to /run/containerd/s/ (runtime/v2/shim: socketRoot = defaults.DefaultStateDir).
# So containerd runs in a private mount namespace in which <tmp>/run is bind-mounted on
# /run: the host's /run/containerd is never touched. Its mounts (rootfs overlays, shm,
# netns pins under <state>/netns) exist only in that namespace, which the kernel
# destroys with its last process (containerd, its shims, their containers).
#
# Pods get cgroup parent /ctrd-NAME from the client; the CNI network is a bridge
# conflist equivalent to minicri's built-in network (bridge without ipMasq +
# host-local + portmap) with its own bridge name and subnet.
#
# Inputs: CRICTL (default <repo>/_output/tools/crictl), CTRD_START_TIMEOUT (s, default 60),
#         CTRD_KEEP=1 keeps the temp dir, CTRD_BIN_DIR (a directory holding another
#         containerd, its containerd-shim-runc-v2 and runc, e.g. containerd 2.4 from
#         hack/bench-tools.sh: put first on containerd's PATH; 2.x migrates the version 2
#         config at load), CTRD_CPU_CGROUP (a cgroup v1 cpuacct directory to start
#         containerd in, so its and its shims' CPU time can be read), CTRD_STARGZ (the
#         containerd-stargz-grpc of hack/bench-tools.sh: started in containerd's mount
#         namespace before it, as its proxy snapshotter "stargz", which the CRI plugin then
#         uses, with snapshot annotations, so pulls local; its mirror is the test registry;
#         stopped after containerd, SIGTERM: it unmounts its layers).
# Outputs (set by ctrd_start): CTRD_TMP CTRD_SOCK CTRD_ENDPOINT CTRD_PID CTRD_LOG
#         CTRD_CGROUP CTRD_REGISTRY (host:port of its test registry)

CTRD_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib.sh
. "$CTRD_REPO/hack/lib.sh"
: "${CRICTL:=$CTRD_REPO/_output/tools/crictl}"
CTRD_TMP=
CTRD_PID=
CTRD_REGISTRY_PID=
CTRD_REGISTRY=
CTRD_BRIDGE=
CTRD_CGROUP=
CTRD_STARGZ=${CTRD_STARGZ:-}

ctrd__log() { echo "containerd.sh: $*" >&2; }


# ctrd_install: Debian's containerd and runc, only when missing. Without systemd (this
# project's machines) the package starts no service; its /etc/containerd is not used.
ctrd_install() {
	local missing=() v
	command -v containerd >/dev/null 2>&1 || missing+=(containerd)
	command -v runc >/dev/null 2>&1 || missing+=(runc)
	if [ ${#missing[@]} -gt 0 ]; then
		ctrd__log "installing ${missing[*]} (apt)"
		DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null ||
			{ apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" >/dev/null; } ||
			{ ctrd__log "apt-get install ${missing[*]} failed"; return 1; }
	fi
	v=$(containerd --version | awk '{print $3}')
	case $v in
	1.6.* | 1.7.*) ;;
	*)
		ctrd__log "containerd $v: this script writes a version 2 config (containerd 1.6/1.7)"
		return 1
		;;
	esac
}

ctrd_crictl() {
	"$CRICTL" --config "$CTRD_TMP/crictl.yaml" --runtime-endpoint "$CTRD_ENDPOINT" \
		--image-endpoint "$CTRD_ENDPOINT" --timeout 60s "$@"
}

# ctrd__registry_start: the offline test registry (test/registry) on a free port, with
# hosts.toml mirrors in $CTRD_TMP/certs.d (containerd's config_path reads the same format).
ctrd__registry_start() {
	local bin=$CTRD_REPO/_output/bin/registry log=$CTRD_TMP/registry.log i
	[ -x "$bin" ] || (cd "$CTRD_REPO" && go build -o "$bin" ./test/registry) || return 1
	"$bin" -addr 127.0.0.1:0 -hosts-dir "$CTRD_TMP/certs.d" -bench=true ${CTRD_REGISTRY_ARGS:-} </dev/null >"$log" 2>&1 &
	CTRD_REGISTRY_PID=$!
	for ((i = 0; i < 3000; i++)); do
		if grep -q ' serving .* references on ' "$log" 2>/dev/null; then
			CTRD_REGISTRY=$(sed -n 's|.* serving .* references on http://\([0-9.:]*\).*|\1|p' "$log" | head -n 1)
			ctrd__log "test registry (pid $CTRD_REGISTRY_PID) on $CTRD_REGISTRY"
			[ -n "$CTRD_REGISTRY" ] && return 0
			break
		fi
		proc_alive "$CTRD_REGISTRY_PID" || break
		sleep 0.1
	done
	ctrd__log "test registry did not start:"
	tail -20 "$log" >&2
	return 1
}

ctrd__write_config() {
	local name=$1 bridge=$2 subnet=$3 t=$CTRD_TMP
	cat >"$t/net.d/10-$name.conflist" <<-EOF
		{
		  "cniVersion": "1.0.0",
		  "name": "$name",
		  "plugins": [
		    {
		      "type": "bridge",
		      "bridge": "$bridge",
		      "isGateway": true,
		      "ipMasq": false,
		      "hairpinMode": true,
		      "ipam": {
		        "type": "host-local",
		        "dataDir": "$t/cni-ipam",
		        "ranges": [[{"subnet": "$subnet"}]],
		        "routes": [{"dst": "0.0.0.0/0"}]
		      }
		    },
		    {
		      "type": "portmap",
		      "capabilities": {"portMappings": true},
		      "snat": true
		    }
		  ]
		}
	EOF
	cat >"$t/config.toml" <<-EOF
		# private containerd for make bench (hack/containerd.sh)
		version = 2
		root = "$t/root"
		state = "$t/state"
		disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
		  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs"]

		[grpc]
		  address = "$CTRD_SOCK"

		[plugins]
		  [plugins."io.containerd.internal.v1.opt"]
		    path = "$t/opt"
		  [plugins."io.containerd.grpc.v1.cri"]
		    sandbox_image = "registry.k8s.io/pause:3.9"
		    netns_mounts_under_state_dir = true
		    disable_apparmor = true
		    # This VM withholds CAP_SYS_RESOURCE: runc cannot set the sandbox's oom_score_adj -998.
		    restrict_oom_score_adj = true
		    stream_server_address = "127.0.0.1"
		    stream_server_port = "0"
		    [plugins."io.containerd.grpc.v1.cri".cni]
		      bin_dir = "/opt/cni/bin"
		      conf_dir = "$t/net.d"
		      max_conf_num = 1
		    [plugins."io.containerd.grpc.v1.cri".containerd]
		      $(ctrd__snapshotter_config)
		      default_runtime_name = "runc"
		      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
		        runtime_type = "io.containerd.runc.v2"
		        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
		          SystemdCgroup = false
		          BinaryName = "${CTRD_RUNC:-$(command -v runc)}"
		          Root = "$t/runc"
		    [plugins."io.containerd.grpc.v1.cri".registry]
		      config_path = "$t/certs.d"
	EOF
}

# ctrd__snapshotter_config: the CRI plugin's snapshotter lines (in ctrd__write_config).
ctrd__snapshotter_config() {
	if [ -z "$CTRD_STARGZ" ]; then
		echo 'snapshotter = "overlayfs"'
	else
		printf 'snapshotter = "stargz"\n      disable_snapshot_annotations = false'
	fi
}

# ctrd__write_stargz_config: the proxy plugin in containerd's config, and the snapshotter's
# own config: the test registry as the mirror of docker.io (plain HTTP).
ctrd__write_stargz_config() {
	local t=$CTRD_TMP
	[ -n "$CTRD_STARGZ" ] || return 0
	mkdir -p "$t/stargz"
	cat >>"$t/config.toml" <<-EOF

		[proxy_plugins]
		  [proxy_plugins.stargz]
		    type = "snapshot"
		    address = "$t/stargz/stargz.sock"
		    [proxy_plugins.stargz.exports]
		      root = "$t/stargz/root/"
		      enable_remote_snapshot_annotations = "true"
	EOF
	cat >"$t/stargz.toml" <<-EOF
		# containerd-stargz-grpc for make bench-lazy (hack/containerd.sh)
		[[resolver.host."docker.io".mirrors]]
		  host = "$CTRD_REGISTRY"
		  insecure = true
	EOF
}

# ctrd__stargz_stop: SIGTERM to the snapshotter (after containerd; its pid in
# <tmp>/stargz.pid); 1 if it had to be killed.
ctrd__stargz_stop() {
	local pid
	[ -s "$CTRD_TMP/stargz.pid" ] || return 0 # CTRD_STARGZ may have been set for ctrd_start only
	pid=$(cat "$CTRD_TMP/stargz.pid")
	proc_alive "$pid" || return 0
	ctrd__log "stopping containerd-stargz-grpc (pid $pid)"
	proc_term "$pid" 10 && return 0
	ctrd__log "containerd-stargz-grpc did not exit within 10s of SIGTERM"
	return 1
}

# ctrd_start NAME BRIDGE SUBNET [TAG]
ctrd_start() {
	local name=$1 bridge=$2 subnet=$3 tag=${4:-cd} i timeout=${CTRD_START_TIMEOUT:-60}
	[ "$(id -u)" = 0 ] || { ctrd__log "containerd needs root"; return 1; }
	[ -x "$CRICTL" ] || { ctrd__log "$CRICTL missing: run make deps"; return 1; }
	CTRD_TMP=$(mktemp -d "/tmp/$tag.XXXXX")
	CTRD_SOCK=$CTRD_TMP/containerd.sock
	CTRD_ENDPOINT=unix://$CTRD_SOCK
	CTRD_LOG=$CTRD_TMP/containerd.log
	CTRD_BRIDGE=$bridge
	CTRD_CGROUP=/ctrd-$name
	mkdir -p "$CTRD_TMP"/{root,state,run,runc,opt,net.d,certs.d,cni-ipam}
	: >"$CTRD_TMP/crictl.yaml"
	ctrd__registry_start || return 1

	ctrd__log "starting containerd in $CTRD_TMP (log: $CTRD_LOG)"
	# setsid: own session, like minicri in hack/instance.sh. unshare execs sh, which
	# execs containerd: CTRD_PID is containerd's PID.
	# shellcheck disable=SC2016
	local bindir=${CTRD_BIN_DIR:-} runc_bin
	runc_bin=$(command -v runc)
	[ -z "$bindir" ] || runc_bin=$bindir/runc
	CTRD_RUNC=$runc_bin ctrd__write_config "ctrd-$name" "$bridge" "$subnet"
	ctrd__write_stargz_config
	# With CTRD_STARGZ ($4), the snapshotter starts first in the same mount namespace (its
	# FUSE mounts are the overlay lowers containerd's shims mount) and serves its socket.
	setsid unshare --mount --propagation private -- /bin/sh -c \
		'[ -z "$2" ] || echo $$ >"$2/cgroup.procs" || exit 1; [ -z "$3" ] || PATH=$3:$PATH; mount --bind "$1/run" /run || exit 1
		if [ -n "$4" ]; then
			"$4" -address "$1/stargz/stargz.sock" -root "$1/stargz/root" -config "$1/stargz.toml" >"$1/stargz.log" 2>&1 &
			echo $! >"$1/stargz.pid"
			i=0; while [ ! -S "$1/stargz/stargz.sock" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		fi
		exec containerd --config "$1/config.toml" --root "$1/root" --state "$1/state" --address "$1/containerd.sock" --log-level info' \
		sh "$CTRD_TMP" "${CTRD_CPU_CGROUP:-}" "$bindir" "$CTRD_STARGZ" </dev/null >"$CTRD_LOG" 2>&1 &
	CTRD_PID=$!
	for ((i = 0; i < timeout * 10; i++)); do
		if ! proc_alive "$CTRD_PID"; then
			ctrd__log "containerd exited during startup:"
			tail -n 20 "$CTRD_LOG" >&2
			return 1
		fi
		if [ -S "$CTRD_SOCK" ] && ctrd_crictl --timeout 2s info >/dev/null 2>&1; then
			ctrd__log "containerd (pid $CTRD_PID) serves $CTRD_ENDPOINT"
			return 0
		fi
		sleep 0.1
	done
	ctrd__log "containerd did not serve $CTRD_ENDPOINT within ${timeout}s"
	return 1
}

# ctrd__procs: PIDs (other than this shell) whose command line mentions the temp dir:
# containerd and its shims. The path goes through the environment, not argv.
ctrd__procs() {
	local f pid cmd
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" = $$ ] || [ "$pid" = "${BASHPID:-}" ] && continue
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case $cmd in *"$CTRD_TMP/"*) echo "$pid" ;; esac
	done
}

ctrd__cgroup_dirs() {
	find /sys/fs/cgroup -mindepth 2 -depth -type d \( -path "*$CTRD_CGROUP" -o -path "*$CTRD_CGROUP/*" \) 2>/dev/null
}

ctrd_stop() {
	[ -n "$CTRD_TMP" ] || return 0
	local rc=0 pods i pid d procs
	if [ -n "$CTRD_PID" ] && proc_alive "$CTRD_PID"; then
		pods=$(ctrd_crictl pods -q 2>/dev/null) || { ctrd__log "crictl pods failed"; rc=1; }
		if [ -n "$pods" ]; then
			ctrd__log "removing $(echo "$pods" | wc -l) pod(s) left behind"
			# shellcheck disable=SC2086
			ctrd_crictl stopp $pods >/dev/null || { ctrd__log "crictl stopp failed"; rc=1; }
			# shellcheck disable=SC2086
			ctrd_crictl rmp $pods >/dev/null || { ctrd__log "crictl rmp failed"; rc=1; }
		fi
		ctrd__log "stopping containerd (pid $CTRD_PID)"
		if ! proc_term "$CTRD_PID" 30; then
			ctrd__log "containerd did not exit within 30s of SIGTERM; killed it"
			rc=1
		fi
	elif [ -n "$CTRD_PID" ]; then
		ctrd__log "containerd (pid $CTRD_PID) was not running any more"
		rc=1
	fi
	[ -z "$CTRD_PID" ] || wait "$CTRD_PID" 2>/dev/null || true
	CTRD_PID=
	ctrd__stargz_stop || rc=1
	if [ -n "$CTRD_REGISTRY_PID" ]; then
		kill -TERM "$CTRD_REGISTRY_PID" 2>/dev/null || true
		wait "$CTRD_REGISTRY_PID" 2>/dev/null || true
		CTRD_REGISTRY_PID=
	fi

	# Shims exit once their pod is removed; give them a moment, then call leftovers leaks.
	for ((i = 0; i < 50; i++)); do
		[ -z "$(ctrd__procs)" ] && break
		sleep 0.1
	done
	for pid in $(ctrd__procs); do
		ctrd__log "LEAK: process $pid: $(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null)"
		kill -KILL "$pid" 2>/dev/null || true
		rc=1
	done
	while read -r d; do
		procs=$(tr '\n' ' ' <"$d/cgroup.procs" 2>/dev/null) || continue
		if [ -n "${procs// /}" ]; then
			ctrd__log "LEAK: processes $procs in cgroup $d"
			for pid in $procs; do kill -KILL "$pid" 2>/dev/null || true; done
			rc=1
		fi
	done < <(ctrd__cgroup_dirs)
	sleep 0.2
	# The pods' cgroups (runc removes them) and the parent: remove empty ones, deepest first.
	while read -r d; do rmdir "$d" 2>/dev/null || true; done < <(ctrd__cgroup_dirs)
	if [ -n "$(ctrd__cgroup_dirs | head -n 1)" ]; then
		ctrd__log "warning: cgroups left under $CTRD_CGROUP"
	fi
	# Host mount namespace: containerd mounted nothing here (private namespace).
	if T=$CTRD_TMP awk '$5 == ENVIRON["T"] || index($5, ENVIRON["T"] "/") == 1 { f = 1 } END { exit !f }' /proc/self/mountinfo; then
		ctrd__log "LEAK: mounts under $CTRD_TMP in the host mount namespace"
		rc=1
	fi
	if [ -n "$CTRD_BRIDGE" ] && ip link show "$CTRD_BRIDGE" >/dev/null 2>&1; then
		ip link del "$CTRD_BRIDGE" || { ctrd__log "cannot delete bridge $CTRD_BRIDGE"; rc=1; }
	fi
	if [ $rc -ne 0 ]; then
		echo "---- last 30 lines of $CTRD_LOG ----" >&2
		tail -n 30 "$CTRD_LOG" >&2 || true
	fi
	if [ -n "${CTRD_ARTIFACTS:-}" ]; then
		mkdir -p "$CTRD_ARTIFACTS"
		cp "$CTRD_LOG" "$CTRD_TMP/config.toml" "$CTRD_TMP"/net.d/*.conflist "$CTRD_ARTIFACTS/" 2>/dev/null || true
		[ ! -f "$CTRD_TMP/stargz.log" ] || cp "$CTRD_TMP/stargz.log" "$CTRD_TMP/stargz.toml" "$CTRD_ARTIFACTS/" 2>/dev/null || true
	fi
	if [ "${CTRD_KEEP:-0}" = 1 ]; then
		ctrd__log "keeping $CTRD_TMP"
	else
		rm -rf --one-file-system "$CTRD_TMP" || rc=1
	fi
	CTRD_TMP=
	return $rc
}

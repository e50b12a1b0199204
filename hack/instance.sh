# shellcheck shell=bash
# hack/instance.sh — start, stop and leak-check a PRIVATE minicri instance.
# Sourced by test/critest/run.sh and hack/bench.sh; needs root.
#
#   instance_start NAME BRIDGE SUBNET [TAG]  start bin/minicri on its own temp dir, wait for it to serve
#   instance_stop                       remove every pod, stop minicri by PID, check for leaks
#   instance_crictl ARGS...             crictl against the instance
#   instance_run CMD...                 run a client (critest, bench) so a signal to the
#                                       calling script interrupts it at once
#
# The instance uses its own socket, root, state, CNI conf dir (empty, so the built-in
# bridge network is used), network name "minicri-NAME", bridge BRIDGE, subnet SUBNET and
# cgroup parent /minicri-NAME, so it never collides with a `make run` instance.
#
# Inputs (environment, optional):
#   MINICRI            minicri binary            (default: <repo>/bin/minicri)
#   CRICTL             crictl binary             (default: <repo>/_output/tools/crictl)
#   INSTANCE_ARTIFACTS directory that receives minicri.log, config.toml and
#                      effective-config.toml at stop
#   INSTANCE_KEEP=1    keep the temp dir
#   INSTANCE_LOG_LEVEL minicri --log-level (default debug)
#   INSTANCE_START_TIMEOUT  seconds to wait for the socket (default 30)
#   INSTANCE_REGISTRY  "" (none), "test" (critest's images) or "bench" (also the ~100 MB
#                      image): serve the offline images of test/registry on a free
#                      loopback port and point minicri's registry mirrors at it
#   INSTANCE_REGISTRY_BIN  a prebuilt test/registry binary (default: built into _output/bin)
#   INSTANCE_REGISTRY_ARGS more flags for it (e.g. -e2e-images DIR: the conformance images)
#   INSTANCE_CDI_DIR   the CDI spec directory (default: minicri's, /etc/cdi and /var/run/cdi)
#   INSTANCE_CONFIG_EXTRA  TOML appended to the instance's config.toml (e.g. [runtimes.runc])
#   INSTANCE_NETNS     run minicri in this named network namespace (/run/netns; only the
#                      network namespace: minicri keeps the host's mounts and cgroups)
#   INSTANCE_DEFAULT_NETWORK=false  no built-in network: pods wait (network not ready)
#                      until a config appears in "$INSTANCE_TMP/net.d"
#   INSTANCE_HOSTS_DIR registry hosts.toml directory of a registry someone else runs
#                      (instead of INSTANCE_REGISTRY)
#   INSTANCE_LAZY=1    lazy pulls on (--lazy-pulls; `make ... LAZY=1`), the registry of
#                      INSTANCE_REGISTRY in its eStargz mode (test/registry -estargz: every
#                      image's layers eStargz); instance_stop then fails unless minicri's log
#                      shows the lazy path taken (instance_lazy_check)
#
# With [image] lazy on, minicri starts minicri-lazyfs (its socket under <state>/lazyfs/),
# which outlives the daemon by design; instance_stop stops it after minicri (SIGTERM: it
# unmounts its layers) before the leak check.
# Outputs (set by instance_start):
#   INSTANCE_TMP INSTANCE_SOCK INSTANCE_ENDPOINT INSTANCE_NRI_SOCK INSTANCE_LOG INSTANCE_PID INSTANCE_CGROUP
#   INSTANCE_BRIDGE (deleted by instance_stop)

INSTANCE_REPO=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=hack/lib.sh
. "$INSTANCE_REPO/hack/lib.sh"
: "${MINICRI:=$INSTANCE_REPO/bin/minicri}"
: "${CRICTL:=$INSTANCE_REPO/_output/tools/crictl}"
INSTANCE_TMP=
INSTANCE_PID=
INSTANCE_CHILD=
# Mounts (relative to the temp dir) that minicri keeps on purpose after it stops: the
# netns pin dir is bind-mounted onto itself and made shared, as iproute2 does for
# /run/netns (network/sharedmount.go). Not a leak; instance_stop unmounts it. Any mount
# below it (a pod's netns pin) is a leak. Empty this list to make the check strict.
# minicri unmounts it itself on a clean shutdown with no pods left, so nothing is kept.
INSTANCE_KEPT_MOUNTS=()
INSTANCE_REGISTRY_PID=

instance__log() { echo "instance: $*" >&2; }


instance_crictl() {
	"$CRICTL" --config "$INSTANCE_TMP/crictl.yaml" --runtime-endpoint "$INSTANCE_ENDPOINT" \
		--image-endpoint "$INSTANCE_ENDPOINT" --timeout 60s "$@"
}

# instance_run CMD...: runs CMD in the background and waits for it. bash runs a trap only
# after a foreground child exits; `wait` returns at once, so the caller's INT/TERM trap
# (exit -> instance_stop) runs promptly, and instance_stop stops CMD first.
instance_run() {
	local rc=0
	"$@" &
	INSTANCE_CHILD=$!
	wait "$INSTANCE_CHILD" || rc=$?
	INSTANCE_CHILD=
	return $rc
}

# instance_start NAME BRIDGE SUBNET [TAG]   (TAG: 2-3 letters naming the temp dir)
instance_start() {
	local name=$1 bridge=$2 subnet=$3 tag=${4:-${1:0:2}} i timeout=${INSTANCE_START_TIMEOUT:-30}
	INSTANCE_BRIDGE=$bridge
	[ "$(id -u)" = 0 ] || { instance__log "minicri needs root"; return 1; }
	[ -x "$MINICRI" ] || { instance__log "$MINICRI missing: run make build"; return 1; }
	[ -x "$CRICTL" ] || { instance__log "$CRICTL missing: run make deps"; return 1; }

	# Short on purpose (/tmp/ct.XXXXX/state = 19 chars): unix socket paths are limited to
	# 107 bytes and minicri puts <state>/sandboxes/<64-hex id>/monitor.sock (88 more).
	INSTANCE_TMP=$(mktemp -d "/tmp/$tag.XXXXX")
	# Containers in a pod user namespace reach their rootfs as an unprivileged
	# host UID: every ancestor of the state dir must be searchable.
	chmod 0711 "$INSTANCE_TMP"
	INSTANCE_SOCK=$INSTANCE_TMP/minicri.sock
	INSTANCE_ENDPOINT=unix://$INSTANCE_SOCK
	INSTANCE_LOG=$INSTANCE_TMP/minicri.log
	INSTANCE_NRI_SOCK=$INSTANCE_TMP/state/nri/nri.sock
	INSTANCE_CGROUP=/minicri-$name
	mkdir -p "$INSTANCE_TMP/net.d" "$INSTANCE_TMP/root" "$INSTANCE_TMP/state"
	# Empty crictl/critest client config: endpoints come from flags; also silences the
	# "/etc/crictl.yaml does not exist" warning.
	: >"$INSTANCE_TMP/crictl.yaml"
	[ -z "${INSTANCE_REGISTRY:-}" ] || instance__registry_start || return 1
	cat >"$INSTANCE_TMP/config.toml" <<-EOF
		# private minicri instance "$name" (hack/instance.sh)
		cgroup_parent = "$INSTANCE_CGROUP"

		[network]
		conf_dir = "$INSTANCE_TMP/net.d"
		bin_dirs = ["/opt/cni/bin"]
		default_network = ${INSTANCE_DEFAULT_NETWORK:-true}
		default_name = "minicri-$name"
		default_bridge = "$bridge"
		default_subnet = "$subnet"

		[registry]
		config_path = "${INSTANCE_HOSTS_DIR:-$INSTANCE_TMP/certs.d}"

		# Its own NRI socket (never the host's /var/run/nri/nri.sock) and no plugin dir.
		[nri]
		socket_path = "$INSTANCE_NRI_SOCK"
		plugin_path = "$INSTANCE_TMP/nri/plugins"
		plugin_config_path = "$INSTANCE_TMP/nri/conf.d"
	EOF
	# CDI specs from this directory only (test/e2e's device plugin writes there).
	[ -z "${INSTANCE_CDI_DIR:-}" ] || printf '\n[cdi]\nspec_dirs = ["%s"]\n' "$INSTANCE_CDI_DIR" >>"$INSTANCE_TMP/config.toml"
	[ -z "${INSTANCE_CONFIG_EXTRA:-}" ] || printf '\n%s\n' "$INSTANCE_CONFIG_EXTRA" >>"$INSTANCE_TMP/config.toml"

	local flags=(--config "$INSTANCE_TMP/config.toml" --listen "$INSTANCE_ENDPOINT"
		--root "$INSTANCE_TMP/root" --state "$INSTANCE_TMP/state" --log-level "${INSTANCE_LOG_LEVEL:-debug}")
	[ "${INSTANCE_LAZY:-}" != 1 ] || flags+=(--lazy-pulls)
	# Validates the config before starting and keeps the effective one for debugging.
	timeout 30 "$MINICRI" "${flags[@]}" config >"$INSTANCE_TMP/effective-config.toml" ||
		{ instance__log "$MINICRI config failed"; return 1; }

	instance__log "starting $MINICRI in $INSTANCE_TMP (log: $INSTANCE_LOG)"
	# Own session: a Ctrl-C on the terminal reaches this script, whose trap stops minicri
	# in order (pods first), instead of killing minicri under it.
	local netns=()
	[ -z "${INSTANCE_NETNS:-}" ] || netns=(nsenter "--net=/run/netns/$INSTANCE_NETNS" --)
	setsid "${netns[@]}" "$MINICRI" "${flags[@]}" </dev/null >"$INSTANCE_LOG" 2>&1 &
	INSTANCE_PID=$!

	for ((i = 0; i < timeout * 10; i++)); do
		if ! proc_alive "$INSTANCE_PID"; then
			instance__log "minicri exited during startup"
			return 1
		fi
		if [ -S "$INSTANCE_SOCK" ] && instance_crictl --timeout 2s version >/dev/null 2>&1; then
			instance__log "minicri (pid $INSTANCE_PID) serves $INSTANCE_ENDPOINT"
			return 0
		fi
		sleep 0.1
	done
	instance__log "minicri did not serve $INSTANCE_ENDPOINT within ${timeout}s"
	return 1
}

# instance__registry_start: the offline test registry (test/registry) on a free port,
# with hosts.toml mirrors for the registries critest names written to $INSTANCE_TMP/certs.d.
instance__registry_start() {
	local bin=${INSTANCE_REGISTRY_BIN:-$INSTANCE_REPO/_output/bin/registry} log=$INSTANCE_TMP/registry.log i
	[ -n "${INSTANCE_REGISTRY_BIN:-}" ] || (cd "$INSTANCE_REPO" && go build -o "$bin" ./test/registry) || return 1
	# shellcheck disable=SC2086 # INSTANCE_REGISTRY_ARGS is a list of flags
	"$bin" -addr 127.0.0.1:0 -hosts-dir "$INSTANCE_TMP/certs.d" -estargz="$([ "${INSTANCE_LAZY:-}" = 1 ] && echo true || echo false)" \
		-bench="$([ "$INSTANCE_REGISTRY" = bench ] && echo true || echo false)" ${INSTANCE_REGISTRY_ARGS:-} </dev/null >"$log" 2>&1 &
	INSTANCE_REGISTRY_PID=$!
	for ((i = 0; i < 3000; i++)); do
		if grep -qs '^.* serving .* references on ' "$log"; then
			instance__log "test registry (pid $INSTANCE_REGISTRY_PID): $(grep -o 'serving .*' "$log")"
			return 0
		fi
		proc_alive "$INSTANCE_REGISTRY_PID" || break
		sleep 0.1
	done
	instance__log "test registry did not start:"
	tail -20 "$log" >&2
	return 1
}

# instance_lazy_check LOG...: the proof that lazy pulls served each minicri log's images
# (INSTANCE_LAZY=1, whose registry serves every image in eStargz form): at least one
# "image: layer mounted lazily" and no "image: layer pulled whole, not lazily" (an eStargz
# layer that fell back to a whole pull). Returns 1 otherwise.
instance_lazy_check() {
	local log n fallbacks rc=0
	for log in "$@"; do
		n=$(grep -c '"msg":"image: layer mounted lazily"' "$log" || true)
		fallbacks=$(grep -c '"msg":"image: layer pulled whole, not lazily"' "$log" || true)
		if [ "${n:-0}" = 0 ]; then
			instance__log "LAZY: FAIL: no layer mounted lazily in $log"
			rc=1
		fi
		if [ "${fallbacks:-0}" != 0 ]; then
			instance__log "LAZY: FAIL: $fallbacks eStargz layer(s) pulled whole, not lazily, in $log:"
			grep '"msg":"image: layer pulled whole, not lazily"' "$log" | head -n 5 >&2
			rc=1
		fi
		[ "${n:-0}" = 0 ] || [ "${fallbacks:-0}" != 0 ] || instance__log "LAZY: $n layer(s) mounted lazily, none pulled whole ($log)"
	done
	return $rc
}

# instance__stop_lazyfs: SIGTERM to the instance's minicri-lazyfs, if one runs (it
# unmounts or detaches its layers and exits); returns 1 when it had to be killed.
instance__stop_lazyfs() {
	local f pid cmd rc=0
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case $cmd in
		*"--socket $INSTANCE_TMP/state/lazyfs/"*)
			instance__log "stopping minicri-lazyfs (pid $pid)"
			proc_term "$pid" 10 || { instance__log "minicri-lazyfs did not exit within 10s of SIGTERM"; rc=1; }
			;;
		esac
	done
	return $rc
}

# instance__mounts: mount points at or under the temp dir (mountinfo field 5). The path
# goes through the environment, not argv, so awk itself never looks like a leaked process.
instance__mounts() {
	T=$INSTANCE_TMP awk '$5 == ENVIRON["T"] || index($5, ENVIRON["T"] "/") == 1 { print $5 }' /proc/self/mountinfo
}

# instance__kept_mount MOUNTPOINT: one of INSTANCE_KEPT_MOUNTS
instance__kept_mount() {
	local k
	for k in "${INSTANCE_KEPT_MOUNTS[@]}"; do
		[ "$1" = "$INSTANCE_TMP/$k" ] && return 0
	done
	return 1
}

# instance__leaks: print what the instance left behind; returns 1 if anything.
instance__leaks() {
	local rc=0 mnt pid cmd f procs
	# Mounts under the temp dir (mountinfo field 5; octal escapes only matter for odd names).
	while read -r mnt; do
		instance__kept_mount "$mnt" && continue
		instance__log "LEAK: mount $mnt"
		rc=1
	done < <(instance__mounts)
	# Processes mentioning the temp dir (monitors, minicri itself).
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" = $$ ] || [ "$pid" = "${BASHPID:-}" ] && continue
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case $cmd in
		*"$INSTANCE_TMP"*)
			instance__log "LEAK: process $pid: $cmd"
			rc=1
			;;
		esac
	done
	# Processes still in the instance's pod cgroups (containers, pause).
	while read -r f; do
		procs=$({ tr '\n' ' ' <"$f"; } 2>/dev/null) || continue
		if [ -n "${procs// /}" ]; then
			instance__log "LEAK: processes $procs in cgroup ${f%/cgroup.procs}"
			rc=1
		fi
	done < <(find /sys/fs/cgroup -path "*$INSTANCE_CGROUP/*" -name cgroup.procs 2>/dev/null)
	return $rc
}

# instance__force_cleanup: after a leak, so the next run on this machine starts clean.
instance__force_cleanup() {
	local f pid cmd mnt
	for f in /proc/[0-9]*/cmdline; do
		pid=${f#/proc/}
		pid=${pid%/cmdline}
		[ "$pid" = $$ ] && continue
		cmd=$({ tr '\0' ' ' <"$f"; } 2>/dev/null) || continue
		case $cmd in *"$INSTANCE_TMP"*) kill -KILL "$pid" 2>/dev/null || true ;; esac
	done
	while read -r f; do
		while read -r pid; do kill -KILL "$pid" 2>/dev/null || true; done <"$f" 2>/dev/null || true
	done < <(find /sys/fs/cgroup -path "*$INSTANCE_CGROUP/*" -name cgroup.procs 2>/dev/null)
	# Deepest mounts first.
	instance__mounts |
		sort -r | while read -r mnt; do umount -l "$mnt" 2>/dev/null || true; done
}

# instance_stop: pods first (stopp + rmp through crictl), then minicri by PID, then the
# leak check. Returns 1 on any problem and then prints the tail of minicri's log.
instance_stop() {
	[ -n "$INSTANCE_TMP" ] || return 0
	local rc=0 pods
	if [ -n "$INSTANCE_CHILD" ] && proc_alive "$INSTANCE_CHILD"; then
		instance__log "interrupted: stopping client (pid $INSTANCE_CHILD)"
		proc_term "$INSTANCE_CHILD" 10 || true
		wait "$INSTANCE_CHILD" 2>/dev/null || true
	fi
	INSTANCE_CHILD=
	if [ -n "$INSTANCE_PID" ] && proc_alive "$INSTANCE_PID"; then
		pods=$(instance_crictl pods -q 2>/dev/null) || {
			instance__log "crictl pods failed"
			rc=1
		}
		if [ -n "$pods" ]; then
			instance__log "removing $(echo "$pods" | wc -l) pod(s) left behind"
			# shellcheck disable=SC2086
			instance_crictl stopp $pods >/dev/null || { instance__log "crictl stopp failed"; rc=1; }
			# shellcheck disable=SC2086
			instance_crictl rmp $pods >/dev/null || { instance__log "crictl rmp failed"; rc=1; }
			pods=$(instance_crictl pods -q 2>/dev/null || true)
			[ -z "$pods" ] || { instance__log "pods still listed after rmp: $pods"; rc=1; }
		fi
		instance__log "stopping minicri (pid $INSTANCE_PID)"
		if ! proc_term "$INSTANCE_PID" 30; then
			instance__log "minicri did not exit within 30s of SIGTERM; killed it"
			rc=1
		fi
	elif [ -n "$INSTANCE_PID" ]; then
		instance__log "minicri (pid $INSTANCE_PID) was not running any more"
		rc=1
	fi
	if [ -n "$INSTANCE_PID" ]; then
		wait "$INSTANCE_PID" 2>/dev/null || true
	fi
	INSTANCE_PID=
	instance__stop_lazyfs || rc=1
	if [ "${INSTANCE_LAZY:-}" = 1 ]; then
		instance_lazy_check "$INSTANCE_LOG" || rc=1
	fi

	if [ -n "$INSTANCE_REGISTRY_PID" ]; then
		kill -TERM "$INSTANCE_REGISTRY_PID" 2>/dev/null || true
		wait "$INSTANCE_REGISTRY_PID" 2>/dev/null || true
		INSTANCE_REGISTRY_PID=
	fi
	# The CNI bridge plugin never deletes its bridge; this instance's is ours.
	local ipns=()
	[ -z "${INSTANCE_NETNS:-}" ] || ipns=(-n "$INSTANCE_NETNS")
	if [ -n "${INSTANCE_BRIDGE:-}" ] && ip "${ipns[@]}" link show "$INSTANCE_BRIDGE" >/dev/null 2>&1; then
		ip "${ipns[@]}" link del "$INSTANCE_BRIDGE" || { instance__log "cannot delete bridge $INSTANCE_BRIDGE"; rc=1; }
	fi
	if ! instance__leaks; then
		rc=1
		instance__force_cleanup
	else
		instance__log "no mounts or processes left under $INSTANCE_TMP"
	fi
	# The mounts minicri keeps by design; the instance is gone, so remove them.
	local k
	for k in "${INSTANCE_KEPT_MOUNTS[@]}"; do
		if mountpoint -q "$INSTANCE_TMP/$k" 2>/dev/null; then
			while mountpoint -q "$INSTANCE_TMP/$k" 2>/dev/null; do
				umount "$INSTANCE_TMP/$k" || { instance__log "cannot unmount $INSTANCE_TMP/$k"; rc=1; break; }
			done
		fi
	done
	if [ -n "$(find /sys/fs/cgroup -mindepth 2 -path "*$INSTANCE_CGROUP/*" -type d 2>/dev/null | head -n 1)" ]; then
		instance__log "warning: cgroups left under $INSTANCE_CGROUP:"
		find /sys/fs/cgroup -mindepth 2 -path "*$INSTANCE_CGROUP/*" -type d 2>/dev/null | head -n 20 | sed 's/^/    /' >&2
	fi

	if [ $rc -ne 0 ]; then
		echo "---- last 50 lines of $INSTANCE_LOG ----" >&2
		tail -n 50 "$INSTANCE_LOG" >&2 || true
		echo "---- end of minicri log ----" >&2
	fi
	if [ -n "${INSTANCE_ARTIFACTS:-}" ]; then
		mkdir -p "$INSTANCE_ARTIFACTS"
		cp "$INSTANCE_LOG" "$INSTANCE_TMP/config.toml" "$INSTANCE_TMP/effective-config.toml" "$INSTANCE_ARTIFACTS/" 2>/dev/null || true
	fi
	if [ "${INSTANCE_KEEP:-0}" = 1 ]; then
		instance__log "keeping $INSTANCE_TMP"
	elif [ -n "$(instance__mounts)" ]; then
		instance__log "not removing $INSTANCE_TMP: mounts remain"
		rc=1
	else
		rm -rf --one-file-system "$INSTANCE_TMP"
	fi
	INSTANCE_TMP=
	return $rc
}

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

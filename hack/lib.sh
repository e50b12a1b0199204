# shellcheck shell=bash
# hack/lib.sh — small helpers shared by the test and benchmark scripts.

# proc_alive PID: running and not a zombie (a child we have not reaped yet still
# answers kill -0 after it exited).
proc_alive() {
	local stat
	stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
	stat=${stat##*) }
	[ "${stat%% *}" != Z ] && [ "${stat%% *}" != X ]
}

# proc_term PID GRACE_SECONDS: SIGTERM, then SIGKILL if PID is still alive after the
# grace period. Returns 1 when it had to kill.
proc_term() {
	local pid=$1 grace=$2 i
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < grace * 10; i++)); do
		proc_alive "$pid" || return 0
		sleep 0.1
	done
	proc_alive "$pid" || return 0
	kill -KILL "$pid" 2>/dev/null || true
	return 1
}

# bench_traps LOGS: the traps of a benchmark that runs minicri and containerd instances
# (hack/bench.sh, hack/bench-lazy.sh; hack/instance.sh and hack/containerd.sh sourced): at
# exit both are stopped, then the script's cleanup_host runs; a failure is logged (the
# script's log) with where the logs are (LOGS). INT and TERM exit 130 and 143.
bench_traps() {
	BENCH__LOGS=$1
	trap bench__on_exit EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}

bench__on_exit() {
	local rc=$?
	instance_stop || { log "FAIL: minicri did not stop cleanly or left something behind"; rc=1; }
	ctrd_stop || { log "FAIL: containerd did not stop cleanly or left something behind"; rc=1; }
	cleanup_host || rc=1
	[ $rc -eq 0 ] || log "FAILED (exit $rc); logs in $BENCH__LOGS"
	exit $rc
}

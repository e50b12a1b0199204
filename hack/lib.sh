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

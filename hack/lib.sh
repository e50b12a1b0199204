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

#!/bin/bash
# test/vm/agent.sh — the guest's side of test/vm/run.sh, started by systemd
# (vmlab-agent.service, written by test/vm/init). It polls the job spool, a directory
# of the host shared over 9p (VM_SPOOL, from /etc/vmlab.env):
#
#   new/<id>/          a job, moved there whole by the host (rename)
#       cmd            the bash script to run (cd, environment, the command)
#       timeout        seconds it may run (then TERM, KILL 10 s later; status 124)
#   run/<id>/          the job, taken; the agent writes into it:
#       out err        its stdout and stderr, as they come
#       rc             its exit status, written last (the host waits for it)
#   run/<id>/cancel    written by the host: the job's process group gets SIGTERM
#
# Jobs run concurrently, as root, each in its own session and process group.
set -u
: "${VM_SPOOL:?}"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:/usr/local/go/bin
export HOME=/root

setup_network() {
	ip link set lo up
	ip link set eth0 up 2>/dev/null &&
		ip addr add 10.0.2.15/24 dev eth0 &&
		ip route add default via 10.0.2.2
	local p
	for p in ${VM_HOST_PORTS:-}; do
		# The host's 127.0.0.1:$p is QEMU's guestfwd 10.0.2.100:$p; make it the guest's
		# 127.0.0.1:$p as well, so the same address works on both sides.
		setsid socat "TCP-LISTEN:$p,bind=127.0.0.1,fork,reuseaddr" "TCP:10.0.2.100:$p" </dev/null >/dev/null 2>&1 &
	done
}

# nap SECONDS: sleep without a fork (every exec costs under TCG).
mkfifo /run/vmlab-agent.nap 2>/dev/null
exec 8<>/run/vmlab-agent.nap
nap() { read -r -t "$1" -u 8 || true; }

run_job() {
	local j=$1 t=3600 pid w rc
	read -r t <"$j/timeout" || true
	setsid timeout -k 10 "$t" bash "$j/cmd" </dev/null >"$j/out" 2>"$j/err" &
	pid=$!
	# The host asks to cancel by creating $j/cancel: a watcher kills the job's group.
	# (Not a kill -0 loop here: a zombie answers kill -0 while SIGCHLD waits.)
	(
		while [ ! -e "$j/cancel" ]; do
			[ -d "/proc/$pid" ] || exit 0
			nap 0.5
		done
		kill -TERM -- "-$pid" 2>/dev/null
		nap 5
		kill -KILL -- "-$pid" 2>/dev/null
	) &
	w=$!
	wait "$pid"
	rc=$?
	kill "$w" 2>/dev/null
	echo "$rc" >"$j/rc.tmp" && mv "$j/rc.tmp" "$j/rc"
	exit 0
}

setup_network
mkdir -p "$VM_SPOOL/new" "$VM_SPOOL/run"
read -r up _ </proc/uptime
echo "$up" >"$VM_SPOOL/ready.tmp" && mv "$VM_SPOOL/ready.tmp" "$VM_SPOOL/ready"
echo "vmlab-agent: ready after ${up}s of uptime" >/dev/console
shopt -s nullglob
while :; do
	for j in "$VM_SPOOL"/new/*; do
		id=${j##*/}
		mv "$j" "$VM_SPOOL/run/$id" 2>/dev/null || continue
		run_job "$VM_SPOOL/run/$id" &
	done
	nap 0.2
done

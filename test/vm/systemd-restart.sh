#!/usr/bin/env bash
# test/vm/systemd-restart.sh — minicri as the node's service survives its own restart
# (vmtest step systemd-restart; run in the VM lab's guest, as root, systemd as PID 1).
#
# `make install` (no DESTDIR: the unit, the binaries, the config, /etc/crictl.yaml; it
# builds nothing), `systemctl start minicri`, 3 pods whose container prints a counter
# every 100 ms, `systemctl restart minicri`, then: every pod still SANDBOX_READY, every
# container still RUNNING and still counting, and each log holds 0, 1, 2, ... N with no
# number missing or repeated (a monitor killed with the service would have lost the
# pipe: SIGPIPE, a gap, a NOTREADY pod). Cleans up and runs `make uninstall`.
#
# Environment: VMTEST_BIN (test/vm/vmtest.sh's binary directory: minicri to compare the
# installed one against, the offline registry), CRICTL, RESTART_PODS (default 3).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
BIN=${VMTEST_BIN:?VMTEST_BIN: the directory with minicri and registry built on the host}
CRICTL=${CRICTL:-$ROOT/_output/tools/crictl}
PODS=${RESTART_PODS:-3}
IMAGE=registry.k8s.io/e2e-test-images/busybox:1.36.1-1
CERTS=/etc/minicri/certs.d
T=$(mktemp -d /tmp/sr.XXXXX)
REG_PID=

log() { echo "systemd-restart: $*" >&2; }
fail() {
	log "FAIL: $*"
	exit 1
}
crictl() { "$CRICTL" --timeout 30s "$@"; }

cleanup() {
	local rc=$? pods
	trap - EXIT
	if systemctl is-active -q minicri; then
		pods=$(crictl pods -q --label vmtest=systemd-restart 2>/dev/null || true)
		# shellcheck disable=SC2086
		[ -z "$pods" ] || { crictl stopp $pods >/dev/null && crictl rmp $pods >/dev/null; } ||
			{ log "cannot remove the pods"; rc=1; }
	fi
	if [ -f /etc/systemd/system/minicri.service ]; then
		journalctl -u minicri --no-pager -o cat >"$T/minicri.journal" 2>&1 || true
		[ $rc = 0 ] || tail -n 40 "$T/minicri.journal" >&2
		make -s -C "$ROOT" uninstall >&2 || { log "make uninstall failed"; rc=1; }
	fi
	[ -z "$REG_PID" ] || kill "$REG_PID" 2>/dev/null || true
	rm -rf "$CERTS" "$T"
	rmdir /etc/minicri 2>/dev/null || true
	ip link del minicri0 2>/dev/null || true
	[ $rc = 0 ] && log "ok" || log "FAILED"
	exit $rc
}
trap cleanup EXIT

[ "$(cat /proc/1/comm)" = systemd ] ||
	fail "systemd is not PID 1 (run this in the VM lab: test/vm/run.sh)"
[ ! -e /etc/systemd/system/minicri.service ] || fail "minicri is already installed here"

# The offline registry on the guest's loopback; minicri's default config reads its
# mirrors from /etc/minicri/certs.d.
mkdir -p "$CERTS"
"$BIN/registry" -addr 127.0.0.1:0 -hosts-dir "$CERTS" -bench=false >"$T/registry.log" 2>&1 &
REG_PID=$!
# The catalog is built at start: seconds on the host, 15-30x that in the emulated guest.
for _ in $(seq 3000); do grep -qs ' serving .* references on ' "$T/registry.log" && break; sleep 0.1; done
grep -qs ' serving .* references on ' "$T/registry.log" || { cat "$T/registry.log" >&2; fail "the registry did not start"; }

log "make install"
make -s -C "$ROOT" install >&2
cmp -s /usr/local/bin/minicri "$BIN/minicri" ||
	fail "the installed minicri differs from the host's build (stale over 9p? make build before the guest boots)"
grep -q '^Delegate=yes' /etc/systemd/system/minicri.service || fail "unit without Delegate=yes"
systemctl start minicri
for _ in $(seq 300); do crictl info >/dev/null 2>&1 && break; sleep 0.2; done
crictl info >/dev/null || fail "minicri (systemd unit) does not answer on /run/minicri/minicri.sock"
log "minicri runs from the unit: $(systemctl show -p MainPID,ControlGroup minicri | tr '\n' ' ')"
crictl pull "$IMAGE" >/dev/null

# Pods, each with a container that counts from 0 every 100 ms.
for n in $(seq "$PODS"); do
	mkdir -p "$T/logs$n"
	cat >"$T/pod$n.json" <<-EOF
		{"metadata": {"name": "restart-$n", "namespace": "vmtest", "uid": "sr-$n-$$", "attempt": 0},
		 "labels": {"vmtest": "systemd-restart"}, "log_directory": "$T/logs$n"}
	EOF
	cat >"$T/ctr$n.json" <<-EOF
		{"metadata": {"name": "counter"}, "image": {"image": "$IMAGE"}, "log_path": "counter.log",
		 "command": ["sh", "-c", "i=0; while :; do echo \$i; i=\$((i+1)); sleep 0.1; done"]}
	EOF
	pod=$(crictl runp "$T/pod$n.json")
	ctr=$(crictl create "$pod" "$T/ctr$n.json" "$T/pod$n.json")
	crictl start "$ctr" >/dev/null
	echo "$pod $ctr" >>"$T/ids"
done
sleep 3
before=$(systemctl show -p MainPID --value minicri)
log "restarting minicri (pid $before) with $PODS pods running"
t0=$(date +%s%N)
systemctl restart minicri
for _ in $(seq 300); do crictl info >/dev/null 2>&1 && break; sleep 0.2; done
after=$(systemctl show -p MainPID --value minicri)
[ "$after" != "$before" ] && [ "$after" != 0 ] || fail "minicri did not restart (pid $before -> $after)"
log "minicri back (pid $after) in $((($(date +%s%N) - t0) / 1000000)) ms"
sleep 3

last() { crictl logs "$1" 2>/dev/null | tail -n 1; }
while read -r pod ctr; do
	st=$(crictl inspectp -o go-template --template '{{.status.state}}' "$pod")
	[ "$st" = SANDBOX_READY ] || fail "pod $pod is $st after the restart"
	cs=$(crictl inspect -o go-template --template '{{.status.state}}' "$ctr")
	[ "$cs" = CONTAINER_RUNNING ] || fail "container $ctr is $cs after the restart"
	a=$(last "$ctr")
	sleep 1
	b=$(last "$ctr")
	[ "$b" -gt "$a" ] || fail "container $ctr stopped counting after the restart ($a, then $b)"
	crictl logs "$ctr" >"$T/log" 2>/dev/null
	# Every line is the previous one + 1, from 0: no gap, no repeat, nothing else.
	awk 'NR - 1 != $0 { printf "line %d reads %s\n", NR, $0; bad = 1; exit } END { exit bad }' "$T/log" ||
		fail "log of $ctr has a gap: $(awk 'NR - 1 != $0 { print "line " NR ": " $0; exit }' "$T/log")"
	log "pod $pod READY, container $ctr RUNNING, log 0..$(tail -n 1 "$T/log") without a gap"
done <"$T/ids"

#!/usr/bin/env bash
# test/vm/run.sh — run a command as root in the VM lab's guest.
#
#   test/vm/run.sh [-e NAME=VALUE]... [-t SECONDS] [--] CMD [ARG]...
#
# Uses the guest `test/vm/vm.sh start` left running for this checkout, or boots one
# for this command alone (and stops it on exit). CMD runs with the caller's working
# directory (the guest sees the host's / read-only at the same paths, the checkout's
# _output read-write), the caller's PATH, every MINICRI_* VMTEST_* CRITEST_* E2E_* GO*
# variable of the caller and the -e ones. Its stdout and stderr stream back; run.sh
# exits with its status (124: it ran out of time; -t, default VM_TIMEOUT=3600 s).
# Works as `go test -exec test/vm/run.sh` (keep GOTMPDIR off /tmp: the guest has its
# own /tmp) and for a test binary built on the host: test/vm/run.sh ./x.test -test.run X.
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

envs=()
timeout=$VM_TIMEOUT
while [ $# -gt 0 ]; do
	case $1 in
	-e) envs+=("$2"); shift 2 ;;
	-t) timeout=$2; shift 2 ;;
	--) shift; break ;;
	*) break ;;
	esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-e NAME=VALUE]... [-t SECONDS] [--] CMD [ARG]..." >&2; exit 2; }

own=0
job=""
tails=()
finish() {
	local rc=$?
	trap - EXIT
	trap "" INT TERM # a Ctrl-C reaches the whole group: finish the cleanup anyway
	if [ -n "$job" ] && [ ! -e "$job/rc" ] && [ -d "$job" ]; then
		: >"$job/cancel"
		for _ in $(seq 50); do [ -e "$job/rc" ] && break; sleep 0.2; done
	fi
	[ ${#tails[@]} -eq 0 ] || kill "${tails[@]}" 2>/dev/null || true
	[ -z "$job" ] || rm -rf "$job"
	[ $own = 0 ] || "$VM_DIR/vm.sh" stop >/dev/null
	exit "$rc"
}
trap finish EXIT
trap 'exit 130' INT TERM

if ! vm_ready; then
	own=1
	"$VM_DIR/vm.sh" start
fi

# The job: a script for bash in the guest.
id=$(date +%s%N)-$$
tmp=$VM_SPOOL/.new-$id
mkdir -p "$tmp"
{
	printf 'cd -- %q || exit 125\n' "$PWD"
	printf 'export PATH=%q\n' "$PATH:/usr/local/go/bin"
	while IFS= read -r name; do
		printf 'export %s=%q\n' "$name" "${!name}"
	done < <(compgen -e | grep -E '^(MINICRI_|VMTEST_|CRITEST_|E2E_|GO)' || true)
	for kv in "${envs[@]}"; do printf 'export %s=%q\n' "${kv%%=*}" "${kv#*=}"; done
	printf 'exec'
	printf ' %q' "$@"
	printf '\n'
} >"$tmp/cmd"
echo "$timeout" >"$tmp/timeout"
mv "$tmp" "$VM_SPOOL/new/$id"
job=$VM_SPOOL/run/$id

# Wait for the agent to take it, stream its output until rc appears.
deadline=$(($(date +%s) + timeout + 60))
while [ ! -e "$job/out" ] || [ ! -e "$job/err" ]; do
	[ -n "$(vm_qemu_pid)" ] || vm_die "the guest is gone"
	(($(date +%s) < deadline)) || vm_die "the agent did not take the job"
	sleep 0.1
done
( while [ ! -e "$job/rc" ]; do
	[ -n "$(vm_qemu_pid)" ] || exit 1
	(($(date +%s) < deadline)) || exit 1
	sleep 0.1
done ) &
waiter=$!
tail -n +1 -s 0.2 --pid=$waiter -f "$job/out" &
tails+=($!)
tail -n +1 -s 0.2 --pid=$waiter -f "$job/err" >&2 &
tails+=($!)
wait $waiter || true
wait "${tails[@]}" 2>/dev/null || true
tails=()
[ -e "$job/rc" ] || vm_die "no exit status from the guest (guest gone or timed out)"
rc=$(cat "$job/rc")
rm -rf "$job"
job=""
exit "$rc"

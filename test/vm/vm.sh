#!/usr/bin/env bash
# test/vm/vm.sh — the VM lab's guest for this checkout.
#
#   test/vm/vm.sh start    build/find the cache (build.sh), boot, wait for the agent
#   test/vm/vm.sh stop     stop QEMU (by PID), remove the scratch disk and the spool
#   test/vm/vm.sh status   running or not; exit 0 only when the agent answers
#
# State: <checkout>/_output/vm/ (qemu.pid, console.log, scratch.img, spool/). The guest
# sees the host's / read-only (the checkout at its own path), <checkout>/_output
# read-write. Environment: VM_MEM VM_CPUS VM_DISK VM_BOOT_TIMEOUT VM_HOST_PORTS (lib.sh).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

cleanup_state() { rm -rf "$VM_SPOOL" "$VM_SCRATCH" "$VM_PIDFILE"; }

vm_stop() {
	local pid i
	pid=$(vm_qemu_pid)
	if [ -n "$pid" ]; then
		kill -TERM "$pid" 2>/dev/null || true
		for i in $(seq 50); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
		[ -d "/proc/$pid" ] && kill -KILL "$pid" 2>/dev/null || true
		for i in $(seq 25); do [ -d "/proc/$pid" ] || break; sleep 0.2; done
		vm_log "stopped (QEMU pid $pid)"
	fi
	cleanup_state
}

vm_start() {
	local cache kver env append fwd="" p start pid
	if vm_ready; then
		vm_log "already running (QEMU pid $(vm_qemu_pid))"
		return 0
	fi
	[ -z "$(vm_qemu_pid)" ] || vm_stop
	cache=$("$VM_DIR/build.sh")
	kver=$(cat "$cache/kver")
	mkdir -p "$VM_STATE"
	cleanup_state
	mkdir -p "$VM_SPOOL/new" "$VM_SPOOL/run"
	truncate -s "$VM_DISK" "$VM_SCRATCH"
	mkfs.ext4 -q -F -O ^has_journal -E lazy_itable_init=1,lazy_journal_init=1 "$VM_SCRATCH"
	for p in $VM_HOST_PORTS; do
		fwd+=",guestfwd=tcp:10.0.2.100:$p-cmd:socat - TCP:127.0.0.1:$p"
	done
	env=$(printf 'VM_SPOOL=%s\nVM_ROOT=%s\nVM_HOST_PORTS="%s"\n' "$VM_SPOOL" "$VM_ROOT" "$VM_HOST_PORTS" | base64 -w0)
	# cgroup v2 only, systemd's own target, AppArmor as Debian enables it; quiet serial.
	append="console=ttyS0 quiet loglevel=3 panic=-1 rootfstype=ramfs"
	append+=" systemd.unified_cgroup_hierarchy=1 cgroup_no_v1=all apparmor=1 security=apparmor"
	append+=" systemd.unit=vmlab.target systemd.show_status=0 systemd.log_level=warning"
	append+=" vmlab.out=$VM_OUT vmlab.modules=$cache/modules/$kver vmlab.kver=$kver"
	append+=" vmlab.agent=$VM_DIR/agent.sh vmlab.env=$env"
	: >"$VM_CONSOLE"
	start=$(date +%s.%N)
	# TCG: this machine's /dev/kvm has no VMX under it. la57=off: 5-level paging makes
	# TCG 2-3x slower. The uncompressed vmlinux boots directly (PVH).
	qemu-system-x86_64 -name vmlab -machine pc -accel tcg,thread=multi -cpu max,la57=off \
		-smp "$VM_CPUS" -m "$VM_MEM" -nodefaults -no-user-config -display none \
		-serial "file:$VM_CONSOLE" \
		-kernel "$cache/vmlinux" -initrd "$cache/initrd.img" -append "$append" \
		-drive "file=$VM_SCRATCH,if=virtio,format=raw,cache=unsafe" \
		-virtfs local,path=/,mount_tag=hostroot,security_model=passthrough,multidevs=remap,readonly=on \
		-virtfs "local,path=$VM_OUT,mount_tag=out,security_model=passthrough,multidevs=remap" \
		-netdev "user,id=n0,restrict=on$fwd" -device virtio-net-pci,netdev=n0 \
		-daemonize -pidfile "$VM_PIDFILE"
	pid=$(vm_qemu_pid)
	[ -n "$pid" ] || vm_die "QEMU did not start"
	vm_log "booting (QEMU pid $pid, kernel $kver, console $VM_CONSOLE)"
	while [ ! -f "$VM_SPOOL/ready" ]; do
		if [ -z "$(vm_qemu_pid)" ]; then
			tail -n 30 "$VM_CONSOLE" >&2
			cleanup_state
			vm_die "the guest died while booting (console above)"
		fi
		if (($(date +%s) - ${start%.*} > VM_BOOT_TIMEOUT)); then
			tail -n 30 "$VM_CONSOLE" >&2
			vm_stop
			vm_die "no agent after ${VM_BOOT_TIMEOUT}s (console above)"
		fi
		sleep 0.2
	done
	vm_log "up in $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')s (guest uptime $(cat "$VM_SPOOL/ready")s)"
}

vm_status() {
	if vm_ready; then
		echo "running: QEMU pid $(vm_qemu_pid), state $VM_STATE"
	elif [ -n "$(vm_qemu_pid)" ]; then
		echo "booting: QEMU pid $(vm_qemu_pid)"
		return 1
	else
		echo "stopped"
		return 3
	fi
}

case ${1:-} in
start)
	mkdir -p "$VM_STATE"
	exec 9>"$VM_STATE/lock"
	flock 9
	vm_start
	;;
stop) vm_stop ;;
status) vm_status ;;
*) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac

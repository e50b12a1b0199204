#!/usr/bin/env bash
# test/vm/lib.sh — shared by the VM lab's scripts (sourced, not run).
#
# Paths: the cache (kernel, modules, initramfs) is /var/cache/minicri-tools/vm-<key>/;
# a checkout's running guest lives in <checkout>/_output/vm/ (pid file, console log,
# scratch disk, job spool). Nothing else is written on the host.

VM_ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
VM_DIR=$VM_ROOT/test/vm
VM_CACHE_DIR=${MINICRI_TOOLS_CACHE:-/var/cache/minicri-tools}
VM_OUT=$VM_ROOT/_output
VM_STATE=${VM_STATE:-$VM_OUT/vm}
VM_SPOOL=$VM_STATE/spool
VM_PIDFILE=$VM_STATE/qemu.pid
VM_CONSOLE=$VM_STATE/console.log
VM_SCRATCH=$VM_STATE/scratch.img

# Guest shape (override in the environment).
VM_MEM=${VM_MEM:-4096}           # MiB
VM_CPUS=${VM_CPUS:-2}
VM_DISK=${VM_DISK:-20G}          # sparse scratch disk: the overlay's upper layer and native dirs
VM_BOOT_TIMEOUT=${VM_BOOT_TIMEOUT:-300}  # seconds until the agent must answer
VM_TIMEOUT=${VM_TIMEOUT:-3600}   # seconds one command may run in the guest
# Host loopback ports the guest reaches at 127.0.0.1:<port> too (space separated):
# QEMU forwards 10.0.2.100:<port> to the host's 127.0.0.1:<port>, a socat in the guest
# listens on its own 127.0.0.1:<port>. Fixed when the guest boots.
VM_HOST_PORTS=${VM_HOST_PORTS:-}

# The kernel: the version Debian 12's linux-image-amd64 depends on.
VM_KERNEL_META=linux-image-amd64

vm_log() { echo "vm: $*" >&2; }
vm_die() { echo "vm: ERROR: $*" >&2; exit 1; }

# vm_qemu_pid: the running guest's QEMU PID (empty if none). The PID must still be a
# qemu-system-x86_64 whose command line names this checkout's state dir.
vm_qemu_pid() {
	local pid
	[ -f "$VM_PIDFILE" ] || return 0
	pid=$(cat "$VM_PIDFILE" 2>/dev/null) || return 0
	[ -n "$pid" ] && [ -d "/proc/$pid" ] || return 0
	tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -qF -- "$VM_STATE/" || return 0
	echo "$pid"
}

# vm_ready: a guest is running and its agent answered since it booted.
vm_ready() { [ -n "$(vm_qemu_pid)" ] && [ -f "$VM_SPOOL/ready" ]; }

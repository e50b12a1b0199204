#!/usr/bin/env bash
# test/vm/build.sh — everything the VM lab needs, built by script and cached.
#
#   test/vm/build.sh          ensure it all; print the cache directory
#
# 1. Host packages (the vmtest-ci rows of hack/needs.txt, installed by make deps; checked
#    here). The guest runs the host's own userland read-only, so what the guest runs must
#    be installed here.
# 2. The kernel: the package Debian 12's linux-image-amd64 depends on, fetched with
#    `apt-get download` and unpacked with `dpkg -x` (never installed on the host). The
#    uncompressed vmlinux is cut out of vmlinuz (QEMU boots it directly, PVH); the
#    modules stay in the cache, bound over /lib/modules/<kver> in the guest.
# 3. The initramfs: busybox-static, test/vm/init and the modules to mount the root.
#
# The cache is /var/cache/minicri-tools/vm-<key>/, the key hashing the kernel package
# and version, busybox's version and the scripts that build and boot it; a missing,
# incomplete or stale entry is rebuilt (older vm-* entries are deleted unless a running
# guest uses one).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"

# The modules the initramfs loads, in order (their dependencies are added from
# modules.dep): the virtio disk and 9p transport, ext4 for the scratch disk, overlay.
INITRD_MODULES=(virtio_pci virtio_blk virtio_net 9pnet_virtio 9p crc32c_generic ext4 overlay)

TMPS=()
cleanup() { local d; for d in "${TMPS[@]}"; do rm -rf "$d"; done; }
trap cleanup EXIT

# kernel_package: "<package> <version>" of the kernel linux-image-amd64 points to.
kernel_package() {
	local pkg ver
	pkg=$(apt-cache depends "$VM_KERNEL_META" 2>/dev/null | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1)
	[ -n "$pkg" ] || { apt-get update -qq; pkg=$(apt-cache depends "$VM_KERNEL_META" | sed -n 's/^ *Depends: \(linux-image-[0-9].*\)$/\1/p' | head -n1); }
	[ -n "$pkg" ] || vm_die "apt-cache depends $VM_KERNEL_META names no kernel"
	ver=$(apt-cache policy "$pkg" | sed -n 's/^ *Candidate: //p')
	echo "$pkg $ver"
}

cache_key() {
	{
		echo "$1"
		dpkg-query -W -f '${Version}' busybox-static
		echo "${INITRD_MODULES[*]}"
		cat "$VM_DIR/build.sh" "$VM_DIR/init"
	} | sha256sum | cut -c1-12
}

# extract_vmlinux VMLINUZ OUT: the ELF inside a bzImage (the kernel's
# scripts/extract-vmlinux, for the compressions Debian uses).
extract_vmlinux() {
	local in=$1 out=$2 magic tool off
	for magic in '\xfd7zXZ\x00:xz -dc' '\x28\xb5\x2f\xfd:zstd -dcq' '\x1f\x8b\x08:gzip -dc'; do
		tool=${magic#*:}
		magic=${magic%%:*}
		for off in $(LC_ALL=C grep -obUaP "$magic" "$in" | cut -d: -f1); do
			tail -c "+$((off + 1))" "$in" | $tool >"$out" 2>/dev/null || true
			if [ "$(head -c 4 "$out" 2>/dev/null | od -An -tx1 | tr -d ' ')" = 7f454c46 ]; then
				return 0
			fi
		done
	done
	return 1
}

# add_module KOFILE DEST: decompressed into DEST (busybox insmod wants plain .ko).
add_module() {
	local f=$1 dst=$2 name
	name=$(basename "$f")
	case $name in
	*.ko.xz) xz -dc "$f" >"$dst/${name%.xz}" ;;
	*.ko.zst) zstd -dcq "$f" >"$dst/${name%.zst}" ;;
	*.ko.gz) gzip -dc "$f" >"$dst/${name%.gz}" ;;
	*) cp "$f" "$dst/$name" ;;
	esac
}

# module_order MODDIR NAME...: module paths (relative to MODDIR), dependencies first.
module_order() {
	local moddir=$1
	shift
	local -A seen=()
	local out=()
	visit() {
		local m=$1 line dep deps
		[ -n "${seen[$m]:-}" ] && return 0
		seen[$m]=1
		line=$(grep -E "(^|/)${m//_/[_-]}\.ko(\.[a-z]+)?:" "$moddir/modules.dep" | head -n1) || true
		[ -n "$line" ] || { grep -qE "/${m//_/[_-]}\.ko" "$moddir/modules.builtin" || vm_log "note: no module $m"; return 0; }
		deps=${line#*:}
		for dep in $deps; do visit "$(basename "$dep" | sed 's/\.ko.*//')"; done
		out+=("${line%%:*}")
	}
	local m
	for m in "$@"; do visit "$m"; done
	printf '%s\n' "${out[@]}"
}

# prune_old KEEP: older vm-* entries are dead weight (~400 MB each), unless a running
# QEMU (another checkout's guest) still boots from one.
prune_old() {
	local d inuse
	inuse=$(cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\0' '\n' | grep -o "$VM_CACHE_DIR/vm-[0-9a-f]*" | sort -u || true)
	for d in "$VM_CACHE_DIR"/vm-*; do
		[ "$d" = "$1" ] && continue
		grep -qxF "$d" <<<"$inuse" && continue
		rm -rf "$d"
	done
}

build_cache() {
	local pkgver=$1 dir=$2 tmp pkg ver kver mods m
	pkg=${pkgver% *}
	ver=${pkgver#* }
	tmp=$(mktemp -d "$VM_CACHE_DIR/.vm-build.XXXXXX")
	TMPS+=("$tmp")
	vm_log "kernel: apt-get download $pkg=$ver"
	(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg=$ver") || vm_die "apt-get download $pkg=$ver failed"
	dpkg -x "$tmp"/"$pkg"_*.deb "$tmp/pkg"
	kver=$(basename "$(ls -d "$tmp"/pkg/lib/modules/*/ | head -n1)")
	[ -f "$tmp/pkg/boot/vmlinuz-$kver" ] || vm_die "no boot/vmlinuz-$kver in $pkg"
	# modules.dep and friends are made by the package's postinst: depmod them here.
	depmod -b "$tmp/pkg" "$kver" || vm_die "depmod $kver failed"
	mkdir -p "$tmp/out"
	extract_vmlinux "$tmp/pkg/boot/vmlinuz-$kver" "$tmp/out/vmlinux" || vm_die "cannot extract vmlinux from vmlinuz-$kver"
	cp "$tmp/pkg/boot/config-$kver" "$tmp/out/config"
	mkdir -p "$tmp/out/modules"
	mv "$tmp/pkg/lib/modules/$kver" "$tmp/out/modules/$kver"
	echo "$kver" >"$tmp/out/kver"

	vm_log "initramfs: busybox, init, ${INITRD_MODULES[*]}"
	local ird=$tmp/initrd
	mkdir -p "$ird"/{bin,dev,proc,sys,lower,scratch,newroot,out,lib/modules}
	cp /bin/busybox "$ird/bin/busybox"
	install -m 0755 "$VM_DIR/init" "$ird/init"
	mods=$(module_order "$tmp/out/modules/$kver" "${INITRD_MODULES[@]}")
	: >"$ird/lib/modules/order"
	for m in $mods; do
		add_module "$tmp/out/modules/$kver/$m" "$ird/lib/modules"
		basename "$m" | sed 's/\.ko.*/.ko/' >>"$ird/lib/modules/order"
	done
	(cd "$ird" && find . -print0 | cpio --null -o -H newc --quiet) >"$tmp/out/initrd.img"
	echo "$pkg $ver $kver" >"$tmp/out/.complete.tmp"
	mv "$tmp/out/.complete.tmp" "$tmp/out/.complete"
	rm -rf "$dir"
	mv "$tmp/out" "$dir"
	chmod 0755 "$dir"
	prune_old "$dir"
	vm_log "cached in $dir (kernel $kver)"
}

main() {
	# The host's packages (QEMU, the initramfs' tools, what the guest runs from the host's
	# root): hack/needs.txt, installed by make deps.
	"$VM_ROOT/hack/deps.sh" check vmtest-ci
	local pkgver key dir
	pkgver=$(kernel_package)
	key=$(cache_key "$pkgver")
	dir=$VM_CACHE_DIR/vm-$key
	if [ -f "$dir/.complete" ] && [ -f "$dir/vmlinux" ] && [ -f "$dir/initrd.img" ] && [ -d "$dir/modules/$(cat "$dir/kver" 2>/dev/null)" ]; then
		echo "$dir"
		return 0
	fi
	mkdir -p "$VM_CACHE_DIR"
	build_cache "$pkgver" "$dir"
	echo "$dir"
}

main "$@"

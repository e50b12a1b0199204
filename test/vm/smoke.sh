#!/bin/bash
# test/vm/smoke.sh — run IN the guest (test/vm/run.sh test/vm/smoke.sh): proves the node
# has the shape the lab promises. Prints one line per check; exits 1 if any failed.
set -u
fails=0
check() {
	local name=$1 out
	shift
	if out=$("$@" 2>&1); then
		echo "ok    $name${out:+: $out}"
	else
		echo "FAIL  $name: $out"
		fails=$((fails + 1))
	fi
}

pid1() { [ "$(cat /proc/1/comm)" = systemd ] && systemctl --version | head -n1; }

cgroup2() {
	local fs c have
	fs=$(stat -fc %T /sys/fs/cgroup)
	[ "$fs" = cgroup2fs ] || { echo "/sys/fs/cgroup is $fs"; return 1; }
	have=" $(cat /sys/fs/cgroup/cgroup.controllers) "
	for c in cpu memory io pids cpuset hugetlb; do
		[[ $have == *" $c "* ]] || { echo "no $c controller in:$have"; return 1; }
	done
	! grep -q '^cgroup ' /proc/mounts || { echo "a cgroup v1 hierarchy is mounted"; return 1; }
	echo "controllers:$have"
}

# systemd's transient units over D-Bus (what the systemd cgroup driver uses).
systemd_scope() {
	systemd-run --quiet --scope -p MemoryMax=64M sh -c 'cat /sys/fs/cgroup$(cut -d: -f3 /proc/self/cgroup)/memory.max'
}

apparmor() {
	local d p
	[ "$(cat /sys/module/apparmor/parameters/enabled)" = Y ] || { echo "apparmor enabled: N"; return 1; }
	d=$(mktemp -d)
	p=$d/vmlab-smoke
	printf 'profile vmlab-smoke flags=(attach_disconnected) {\n  file,\n}\n' >"$p"
	apparmor_parser -r "$p" || { rm -rf "$d"; return 1; }
	grep -q '^vmlab-smoke ' /sys/kernel/security/apparmor/profiles || { echo "profile not listed"; rm -rf "$d"; return 1; }
	apparmor_parser -R "$p"
	rm -rf "$d"
	echo "a profile loads and unloads"
}

network() {
	local ns=vmlab-smoke rc=0
	ip netns add $ns &&
		ip link add vmsmk0 type bridge &&
		ip addr add 10.254.9.1/24 dev vmsmk0 && ip link set vmsmk0 up &&
		ip link add vmsmk1 type veth peer name vmsmk2 &&
		ip link set vmsmk1 master vmsmk0 up &&
		ip link set vmsmk2 netns $ns &&
		ip -n $ns addr add 10.254.9.2/24 dev vmsmk2 && ip -n $ns link set vmsmk2 up &&
		ip -n $ns link set lo up &&
		{ timeout 20 socat TCP-LISTEN:7777,bind=10.254.9.1,reuseaddr SYSTEM:'echo pong' >/dev/null 2>&1 & } &&
		sleep 1 && [ "$(ip netns exec $ns timeout 10 socat - TCP:10.254.9.1:7777 </dev/null)" = pong ] || rc=1
	kill %1 2>/dev/null
	ip link del vmsmk1 2>/dev/null
	ip link del vmsmk0 2>/dev/null
	ip netns del $ns 2>/dev/null
	[ $rc = 0 ] && echo "bridge, veth, netns: TCP across"
	return $rc
}

overlay() {
	local d rc=0
	d=$(mktemp -d)
	mkdir "$d"/{l,u,w,m} && echo lower >"$d/l/f" &&
		mount -t overlay overlay -o "lowerdir=$d/l,upperdir=$d/u,workdir=$d/w" "$d/m" &&
		echo upper >"$d/m/f" && [ "$(cat "$d/u/f")" = upper ] || rc=1
	umount "$d/m" 2>/dev/null
	rm -rf "$d"
	[ $rc = 0 ] && echo "overlayfs with its upper dir on $(stat -fc %T /tmp) /tmp"
	return $rc
}

native_dirs() {
	local d t
	for d in /tmp /var/tmp /var/lib /run; do
		t=$(stat -fc %T "$d")
		case $t in ext2/ext3 | tmpfs) ;; *) echo "$d is $t"; return 1 ;; esac
	done
	echo "/tmp /var/tmp /var/lib on the scratch disk, /run tmpfs"
}

check "systemd is PID 1" pid1
check "cgroup v2 only" cgroup2
check "systemd transient scope with MemoryMax=64M" systemd_scope
check "AppArmor" apparmor
check "network" network
check "overlayfs" overlay
check "native state dirs" native_dirs
check "kernel" uname -r
exit $((fails > 0))

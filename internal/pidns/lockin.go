package pidns

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// nobody is the writer's uid and gid.
const nobody = 65534

// lockIn shuts the calling (locked) thread in, as the writer it forks must
// be from its first instruction in the pod's PID namespace: namespaces of
// its own (mount, network, IPC, UTS) whose only mount is an empty
// read-only tmpfs (as the pause's, pause.c's isolate_root), children in the
// PID namespace nsfd, uid and gid nobody without groups, and no capability
// but CAP_CHECKPOINT_RESTORE (which ns_last_pid asks for), not even in its
// bounding set, no_new_privs, not dumpable. So a process of the pod that
// traces the writer or opens its /proc/<pid>/root reaches nothing of the
// host.
func lockIn(nsfd int) error {
	if err := unix.Unshare(unix.CLONE_FS | unix.CLONE_NEWNS | unix.CLONE_NEWNET | unix.CLONE_NEWIPC | unix.CLONE_NEWUTS); err != nil {
		return fmt.Errorf("unshare: %w", err)
	}
	if err := emptyRoot(); err != nil {
		return err
	}
	if err := unix.Setns(nsfd, unix.CLONE_NEWPID); err != nil {
		return fmt.Errorf("join pid namespace: %w", err)
	}
	return dropPrivileges()
}

// emptyRoot makes an empty read-only tmpfs the root of this thread's new
// mount namespace, its only mount.
func emptyRoot() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	// Over /proc, a directory every host has (in this namespace only).
	if err := unix.Mount("tmpfs", "/proc", "tmpfs", unix.MS_RDONLY|unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC,
		"size=4k,nr_inodes=2,mode=0555"); err != nil {
		return fmt.Errorf("mount empty root: %w", err)
	}
	if err := unix.Chdir("/proc"); err != nil {
		return fmt.Errorf("enter empty root: %w", err)
	}
	if err := unix.PivotRoot(".", "."); err != nil {
		return fmt.Errorf("pivot to empty root: %w", err)
	}
	if err := unix.Unmount(".", unix.MNT_DETACH); err != nil {
		return fmt.Errorf("detach old root: %w", err)
	}
	return unix.Chdir("/")
}

// dropPrivileges leaves this thread nobody with CAP_CHECKPOINT_RESTORE
// alone. Per thread: x/sys/unix's Setresuid changes every thread.
func dropPrivileges() error {
	for c := 0; c < 64; c++ { // EINVAL past the kernel's last capability
		if c == unix.CAP_CHECKPOINT_RESTORE {
			continue
		}
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	steps := []struct {
		what       string
		nr         uintptr
		a1, a2, a3 uintptr
	}{
		{what: "keep capabilities", nr: unix.SYS_PRCTL, a1: unix.PR_SET_KEEPCAPS, a2: 1},
		{what: "drop groups", nr: unix.SYS_SETGROUPS},
		{what: "set gid", nr: unix.SYS_SETRESGID, a1: nobody, a2: nobody, a3: nobody},
		{what: "set uid", nr: unix.SYS_SETRESUID, a1: nobody, a2: nobody, a3: nobody},
	}
	for _, s := range steps {
		if _, _, e := unix.RawSyscall(s.nr, s.a1, s.a2, s.a3); e != 0 {
			return fmt.Errorf("%s: %w", s.what, e)
		}
	}
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	bit := uint32(1) << (unix.CAP_CHECKPOINT_RESTORE % 32)
	data[unix.CAP_CHECKPOINT_RESTORE/32] = unix.CapUserData{Effective: bit, Permitted: bit}
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("keep only CAP_CHECKPOINT_RESTORE (Linux >= 5.9): %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("no_new_privs: %w", err)
	}
	if err := unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0); err != nil {
		return fmt.Errorf("not dumpable: %w", err)
	}
	return nil
}

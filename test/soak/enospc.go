package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"golang.org/x/sys/unix"
)

// enospc fills the instance's root filesystem (its own loop-mounted ext4)
// for a few seconds, then frees it.
func (f *faults) enospc(hold time.Duration) {
	f.begin("enospc")
	defer f.end("enospc")
	var before, after unix.Statfs_t
	_ = unix.Statfs(f.s.inst.root, &before)
	err := fillFS(f.s.inst.root)
	_ = unix.Statfs(f.s.inst.root, &after)
	f.logf("enospc", "filled %s (%d MiB, %d KiB left) for %v (err %v)", f.s.inst.root,
		int64(before.Bfree-after.Bfree)*before.Bsize>>20, int64(after.Bfree)*after.Bsize>>10, hold, err)
	time.Sleep(hold)
	if err := os.RemoveAll(filepath.Join(f.s.inst.root, "soak-filler")); err != nil {
		f.s.find.add("restart", "cannot free the root: %v", err)
	}
}

// fillFS allocates every free block of the filesystem at root in files of
// root/soak-filler (an allocation that fails half-way keeps what it got).
func fillFS(root string) error {
	dir := filepath.Join(root, "soak-filler")
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	for n := 0; n < 64; n++ {
		var st unix.Statfs_t
		if err := unix.Statfs(root, &st); err != nil {
			return err
		}
		free := int64(st.Bfree) * st.Bsize
		if free < 64<<10 {
			return nil
		}
		fd, err := unix.Open(filepath.Join(dir, fmt.Sprint(n)), unix.O_CREAT|unix.O_WRONLY|unix.O_CLOEXEC, 0o600)
		if err != nil {
			return err
		}
		size := free
		if n > 0 {
			size = free / 2
		}
		_ = unix.Fallocate(fd, 0, 0, size)
		_ = unix.Close(fd)
	}
	return nil
}

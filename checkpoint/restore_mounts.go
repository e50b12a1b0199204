package checkpoint

import (
	"context"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// checkCheckpointMounts refuses a checkpoint whose mount images
// (mountpoints-*.img) would give the container another mount tree than its
// spec: CRIU rebuilds the tree from the images, not from the spec, so a
// crafted archive could leave /proc/sys writable, drop a masked path, or
// mount a filesystem the spec has none of (binfmt_misc, cgroup, a device).
func (x *restoration) checkCheckpointMounts(context.Context) error {
	return checkMountsAgainst(x.imagesDir(), x.t.Spec())
}

func checkMountsAgainst(images string, spec *specs.Spec) error {
	files, err := filepath.Glob(filepath.Join(images, "mountpoints-*.img"))
	if err != nil || len(files) == 0 {
		return fmt.Errorf("%w: checkpoint holds no mount image (mountpoints-*.img)", ErrInvalid)
	}
	for _, path := range files {
		ms, err := readMounts(path)
		if err != nil {
			return fmt.Errorf("%w: checkpoint image %s: %v", ErrInvalid, filepath.Base(path), err)
		}
		if err := checkMountTree(ms, spec); err != nil {
			return fmt.Errorf("%w: checkpoint mount image %s: %v", ErrFailedPrecondition, filepath.Base(path), err)
		}
	}
	return nil
}

// checkMountTree checks one mount namespace's entries: each at a clean
// absolute path the spec mounts (or masks, or makes read-only), once, under
// its right parent, of an allowed type, read-only where the spec says so;
// every masked or read-only path this kernel has is there.
func checkMountTree(ms []*mnt.MntEntry, spec *specs.Spec) error {
	byID := map[uint32]string{}
	seen := map[string]bool{}
	for _, m := range ms {
		mp := m.GetMountpoint()
		if mp != filepath.Clean(mp) || !filepath.IsAbs(mp) {
			return fmt.Errorf("mount point %q is not a clean absolute path", mp)
		}
		if seen[mp] {
			return fmt.Errorf("two mounts at %s", mp)
		}
		seen[mp] = true
		byID[m.GetMntId()] = mp
	}
	for _, m := range ms {
		mp := m.GetMountpoint()
		if mp != "/" && byID[m.GetParentMntId()] != parentMount(mp, seen) {
			return fmt.Errorf("mount at %s is not under its parent mount %s", mp, parentMount(mp, seen))
		}
		rule, ok := ruleFor(m, spec) // restore_mountrules.go
		if !ok {
			return fmt.Errorf("mount at %s, which the container's spec does not mount", mp)
		}
		if err := checkEntry(m, rule); err != nil {
			return err
		}
	}
	if spec.Linux == nil {
		return nil
	}
	for _, p := range slices.Concat(spec.Linux.MaskedPaths, spec.Linux.ReadonlyPaths) {
		if _, err := os.Lstat(p); err == nil && !seen[p] && kernelPath(p) {
			return fmt.Errorf("%s is not masked or read-only as the spec says", p)
		}
	}
	return nil
}

// fstypeOfEntry is the entry's type; a number beyond the enum is
// UNSUPPORTED (allowed nowhere but on external mounts).
func fstypeOfEntry(m *mnt.MntEntry) mnt.Fstype {
	if v := m.GetFstype(); v <= math.MaxInt32 {
		return mnt.Fstype(v)
	}
	return mnt.Fstype_UNSUPPORTED
}

// kernelPath: /proc and /sys paths are the same kernel's in the container
// as on the host, so whether the host has one tells whether the container's
// masked and read-only paths must be in the image.
func kernelPath(p string) bool {
	return strings.HasPrefix(p, "/proc/") || strings.HasPrefix(p, "/sys/")
}

// parentMount is the longest mount point in seen strictly above mp.
func parentMount(mp string, seen map[string]bool) string {
	for p := filepath.Dir(mp); ; p = filepath.Dir(p) {
		if seen[p] || p == "/" {
			return p
		}
	}
}

// readMounts decodes a mountpoints-*.img.
func readMounts(path string) ([]*mnt.MntEntry, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer func() { _ = f.Close() }()
	img, err := crit.New(f, nil, "", false, true).Decode(&mnt.MntEntry{})
	if err != nil {
		return nil, err
	}
	out := make([]*mnt.MntEntry, 0, len(img.Entries))
	for _, e := range img.Entries {
		m, ok := e.Message.(*mnt.MntEntry)
		if !ok {
			return nil, fmt.Errorf("not a mount entry")
		}
		out = append(out, m)
	}
	return out, nil
}

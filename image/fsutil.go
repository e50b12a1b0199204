package image

import (
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
)

// lazyUsageTTL is how long FsInfo's count stands while layers are lazily
// pulled (their caches fill in the background).
const lazyUsageTTL = 10 * time.Second

// FsInfo reports the bytes (allocated blocks) and inodes used by the store,
// counting hard-linked files once, and the mountpoint of its filesystem. A
// lazily pulled layer counts as the bytes its cache holds on disk, not its
// files (its mount point is not walked).
func (s *Store) FsInfo() (FsUsage, error) {
	s.fsMu.Lock()
	defer s.fsMu.Unlock()
	gen := s.fsGen.Load()
	// Lazily pulled layers grow in the background: their count is kept
	// for lazyUsageTTL only.
	fresh := !s.hasLazy() || time.Since(time.Unix(0, s.fsCache.usage.Timestamp)) < lazyUsageTTL
	if s.fsCache.valid && s.fsCache.gen == gen && fresh {
		u := s.fsCache.usage
		u.Timestamp = time.Now().UnixNano()
		return u, nil
	}
	u, err := s.walkUsage()
	if err == nil {
		s.fsCache = fsCache{gen: gen, valid: true, usage: u}
	}
	return u, err
}

// walkUsage counts what the store holds now.
func (s *Store) walkUsage() (FsUsage, error) {
	u := FsUsage{Timestamp: time.Now().UnixNano()}
	type key struct{ dev, ino uint64 }
	seen := map[key]bool{}
	lazyRoot := filepath.Join(s.cfg.Root, "lazy")
	err := filepath.WalkDir(s.cfg.Root, func(p string, d fs.DirEntry, err error) error {
		if d != nil && d.IsDir() && d.Name() == "mnt" && filepath.Dir(filepath.Dir(p)) == lazyRoot {
			return fs.SkipDir // a lazy layer's files: its cache is counted
		}
		if err != nil {
			if os.IsNotExist(err) {
				return nil // removed while we walk
			}
			return err
		}
		fi, err := d.Info()
		if err != nil {
			if os.IsNotExist(err) {
				return nil
			}
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return nil
		}
		k := key{uint64(st.Dev), st.Ino} //nolint:unconvert // Dev is not uint64 everywhere
		if seen[k] {
			return nil
		}
		seen[k] = true
		u.InodesUsed++
		u.UsedBytes += uint64(st.Blocks) * 512 //nolint:gosec // a block count from stat(2): never negative
		return nil
	})
	if err != nil {
		return FsUsage{}, err
	}
	mp, err := mountpointOf(s.cfg.Root)
	if err != nil {
		return FsUsage{}, err
	}
	u.Mountpoint = mp
	return u, nil
}

// mountpointOf returns the mountpoint of the filesystem holding path.
func mountpointOf(path string) (string, error) {
	p, err := filepath.EvalSymlinks(path)
	if err != nil {
		return "", err
	}
	mounts, err := mountinfo.GetMounts(nil)
	if err != nil {
		return "", err
	}
	best := "/"
	for _, m := range mounts {
		mp := m.Mountpoint
		if (p == mp || strings.HasPrefix(p, strings.TrimSuffix(mp, "/")+"/")) && len(mp) > len(best) {
			best = mp
		}
	}
	return best, nil
}

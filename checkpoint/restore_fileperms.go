package checkpoint

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"
)

// What the spec's process may open of a container path, for the checks of
// restore_files.go: the host file behind the path (the rootfs or a bind
// mount's source, looked up confined to it), its mode against the
// process's user and groups and DAC capabilities.

// containerMount is the spec mount a container path lies in: the one of
// the longest destination above or at it; nil for the rootfs.
func containerMount(name string, spec *specs.Spec) *specs.Mount {
	var best *specs.Mount
	for i := range spec.Mounts {
		m := &spec.Mounts[i]
		d := filepath.Clean(m.Destination)
		if (name == d || strings.HasPrefix(name, d+"/") || d == "/") && (best == nil || len(d) >= len(filepath.Clean(best.Destination))) {
			best = m
		}
	}
	return best
}

// readOnlyAt tells whether the spec makes the mount of name read-only:
// its mount's ro option, a read-only path at or above it, the read-only
// root when no mount holds it.
func readOnlyAt(name string, spec *specs.Spec) bool {
	if spec.Linux != nil {
		for _, p := range spec.Linux.ReadonlyPaths {
			if name == p || strings.HasPrefix(name, p+"/") {
				return true
			}
		}
	}
	if m := containerMount(name, spec); m != nil {
		return flagsOf(m.Options)&unix.MS_RDONLY != 0 // restore_mountrules.go
	}
	return spec.Root != nil && spec.Root.Readonly
}

func isBind(m *specs.Mount) bool {
	return m.Type == "bind" || slices.Contains(m.Options, "bind") || slices.Contains(m.Options, "rbind")
}

// statInContainer stats the host file behind container path name, symlinks
// followed but confined to the rootfs or the bind's source (os.Root). It
// returns nil, nil for a path on a mount of the kernel's or a tmpfs (no
// host file: only the mount's flags apply).
func statInContainer(name string, spec *specs.Spec) (*unix.Stat_t, error) {
	base, dest := "", "/"
	if m := containerMount(name, spec); m != nil {
		if !isBind(m) {
			return nil, nil
		}
		base, dest = m.Source, filepath.Clean(m.Destination)
	} else if spec.Root != nil {
		base = spec.Root.Path
	}
	if base == "" {
		return nil, nil
	}
	rel, err := filepath.Rel(dest, name)
	if err != nil {
		return nil, err
	}
	fi, err := os.Stat(base)
	if err == nil && !fi.IsDir() {
		if rel != "." {
			return nil, fmt.Errorf("%s is under a file bind", name)
		}
		return statOf(fi)
	}
	r, err := os.OpenRoot(base)
	if err != nil {
		return nil, err
	}
	defer func() { _ = r.Close() }()
	fi, err = r.Stat(rel)
	if err != nil {
		return nil, err
	}
	return statOf(fi)
}

func statOf(fi os.FileInfo) (*unix.Stat_t, error) {
	st, ok := fi.Sys().(*syscall.Stat_t)
	if !ok {
		return nil, fmt.Errorf("%s: no stat", fi.Name())
	}
	return &unix.Stat_t{Mode: st.Mode, Uid: st.Uid, Gid: st.Gid}, nil
}

// mayAccess tells whether the spec's process may access a file of st for
// want (4 read, 2 write, 1 search/execute, ORed), as the kernel's DAC check
// does: CAP_DAC_OVERRIDE allows all (execute of a file only with some x
// bit), CAP_DAC_READ_SEARCH reading and directory search; else the owner's,
// group's or others' bits.
func mayAccess(st *unix.Stat_t, p *specs.Process, want uint32) bool {
	if mayUse(p, "CAP_DAC_OVERRIDE") { // restore_rootfs.go
		return want&1 == 0 || st.Mode&unix.S_IFMT == unix.S_IFDIR || st.Mode&0o111 != 0
	}
	if mayUse(p, "CAP_DAC_READ_SEARCH") && (want == 4 || st.Mode&unix.S_IFMT == unix.S_IFDIR && want&2 == 0) {
		return true
	}
	bits := st.Mode & 0o7
	switch {
	case st.Uid == p.User.UID:
		bits = st.Mode >> 6 & 0o7
	case inGroup(p, st.Gid): // restore_rootfs.go
		bits = st.Mode >> 3 & 0o7
	}
	return bits&want == want
}

// unprivilegedPortStart is the first port a process binds without
// CAP_NET_BIND_SERVICE: the spec's sysctl, else the kernel's default.
func unprivilegedPortStart(spec *specs.Spec) uint32 {
	if spec.Linux != nil {
		if v, err := strconv.ParseUint(spec.Linux.Sysctl["net.ipv4.ip_unprivileged_port_start"], 10, 32); err == nil {
			return uint32(v)
		}
	}
	return 1024
}

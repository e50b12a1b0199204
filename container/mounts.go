package container

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Container paths of the files and directories every container gets from
// its pod.
const (
	etcHostname    = "/etc/hostname"
	etcHosts       = "/etc/hosts"
	etcResolvConf  = "/etc/resolv.conf"
	devShm         = "/dev/shm"
	sysFsCgroup    = "/sys/fs/cgroup"
	hostDevMqueue  = "/dev/mqueue"
	hostDevShmPath = "/dev/shm"
)

// Hooks for tests.
var (
	lookupMountFn = lookupMount
)

// defaultMounts are containerd's default mounts (pkg/oci defaultMounts,
// without /run: the CRI plugin drops it) followed by the cgroup mount its
// CRI plugin adds, with the options cgroupmount chose (read-only unless
// privileged or READ_WRITE; the host's nsdelegate/memory_recursiveprot in
// the host's cgroup namespace). A privileged container gets sysfs
// read-write.
func defaultMounts(privileged bool, cgroupOptions []string) []specs.Mount {
	mode := "ro"
	if privileged {
		mode = "rw"
	}
	return []specs.Mount{
		{
			Destination: "/proc",
			Type:        "proc",
			Source:      "proc",
			Options:     []string{"nosuid", "noexec", "nodev"},
		},
		{
			Destination: "/dev",
			Type:        "tmpfs",
			Source:      "tmpfs",
			Options:     []string{"nosuid", "strictatime", "mode=755", "size=65536k"},
		},
		{
			Destination: "/dev/pts",
			Type:        "devpts",
			Source:      "devpts",
			Options:     []string{"nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620", "gid=5"},
		},
		{
			// Used only when the pod has no /dev/shm to bind (see podMounts).
			Destination: devShm,
			Type:        "tmpfs",
			Source:      "shm",
			Options:     []string{"nosuid", "noexec", "nodev", "mode=1777", "size=65536k"},
		},
		{
			// In the host's IPC namespace this mounts the host's mqueue
			// instance, as containerd does.
			Destination: hostDevMqueue,
			Type:        "mqueue",
			Source:      "mqueue",
			Options:     []string{"nosuid", "noexec", "nodev"},
		},
		{
			Destination: "/sys",
			Type:        "sysfs",
			Source:      "sysfs",
			Options:     []string{"nosuid", "noexec", "nodev", mode},
		},
		{
			Destination: sysFsCgroup,
			Type:        "cgroup",
			Source:      "cgroup",
			Options:     cgroupOptions,
		},
	}
}

// podMounts are the files every container takes from its pod, in
// containerd's order (linuxContainerMounts). Like containerd, a file that
// does not exist on the host is skipped, and a CRI mount at the same
// container path replaces it.
func podMounts(pod *PodInfo, sec *Security, cri []Mount) []Mount {
	var out []Mount
	add := func(containerPath, hostPath string, readonly bool) {
		if hostPath == "" || inMounts(containerPath, cri) {
			return
		}
		if _, err := os.Stat(hostPath); err != nil {
			return
		}
		out = append(out, Mount{ContainerPath: containerPath, HostPath: hostPath, Readonly: readonly})
	}
	add(etcHostname, pod.HostnameFile, sec.ReadonlyRootfs)
	add(etcHosts, pod.HostsFile, sec.ReadonlyRootfs)
	add(etcResolvConf, pod.ResolvConfFile, sec.ReadonlyRootfs)
	shm := pod.ShmPath
	if pod.HostIPC || shm == "" {
		shm = hostDevShmPath
	}
	add(devShm, shm, false)
	return out
}

func inMounts(containerPath string, mounts []Mount) bool {
	for _, m := range mounts {
		if filepath.Clean(m.ContainerPath) == filepath.Clean(containerPath) {
			return true
		}
	}
	return false
}

// validateMounts rejects what cannot be a valid CRI mount before anything
// is created on the host.
func validateMounts(mounts []Mount) error {
	for _, m := range mounts {
		if m.Image != "" {
			// Create mounts image volumes and hands them over as binds.
			return fmt.Errorf("%w: mount at %q: image volume was not mounted", ErrInvalid, m.ContainerPath)
		}
		if m.ContainerPath == "" || !filepath.IsAbs(m.ContainerPath) {
			return fmt.Errorf("%w: mount container path %q is not absolute", ErrInvalid, m.ContainerPath)
		}
		if m.HostPath == "" {
			return fmt.Errorf("%w: mount at %q has no host path", ErrInvalid, m.ContainerPath)
		}
		if m.RecursiveReadOnly {
			if !m.Readonly {
				return fmt.Errorf("%w: recursive read-only mount conflicts with RW mount (hostPath=%q)", ErrInvalid, m.HostPath)
			}
			if m.Propagation != PropagationPrivate {
				return fmt.Errorf("%w: recursive read-only mount needs private propagation, got %s (hostPath=%q)",
					ErrInvalid, propagationName(m.Propagation), m.HostPath)
			}
		}
		if err := checkMountOptions(m); err != nil {
			return err
		}
		switch m.Propagation {
		case PropagationPrivate, PropagationHostToContainer, PropagationBidirectional:
		default:
			return fmt.Errorf("%w: mount at %q: unknown propagation %d", ErrInvalid, m.ContainerPath, m.Propagation)
		}
	}
	return nil
}

func propagationName(p Propagation) string {
	switch p {
	case PropagationPrivate:
		return "PROPAGATION_PRIVATE"
	case PropagationHostToContainer:
		return "PROPAGATION_HOST_TO_CONTAINER"
	case PropagationBidirectional:
		return "PROPAGATION_BIDIRECTIONAL"
	}
	return fmt.Sprintf("propagation(%d)", int(p))
}

// buildMounts mirrors containerd's CRI WithMounts: default mounts first
// (less the ones a CRI or pod mount replaces, and everything under /dev
// when /dev itself is mounted), then the CRI mounts and the pod's files,
// stably sorted by depth so that a parent never shadows a child. It
// returns the rootfs propagation the mounts need ("" for the default).
func buildMounts(in *SpecInput, cgroupOptions []string) ([]specs.Mount, string, error) {
	sec := &in.Config.Security
	if err := validateMounts(in.Config.Mounts); err != nil {
		return nil, "", err
	}
	if err := checkMountIDMaps(in.Config.Mounts, &in.Pod); err != nil {
		return nil, "", err
	}
	mounts := append([]Mount{}, in.Config.Mounts...)
	mounts = append(mounts, podMounts(&in.Pod, sec, in.Config.Mounts)...)
	sort.SliceStable(mounts, func(i, j int) bool {
		return mountDepth(mounts[i].ContainerPath) < mountDepth(mounts[j].ContainerPath)
	})
	out := defaultsNotOverridden(mounts, sec.Privileged, cgroupOptions)
	var rootfsPropagation string
	for _, m := range mounts {
		src, err := bindSource(m.HostPath)
		if err != nil {
			return nil, "", err
		}
		propagation, err := bindPropagation(m.Propagation, src, &rootfsPropagation)
		if err != nil {
			return nil, "", err
		}
		options := append([]string{"rbind", propagation, bindAccess(m)}, m.MountOptions...)
		sm := specs.Mount{Source: src, Destination: m.ContainerPath, Type: "bind", Options: options}
		withIDMapping(&sm, m, &in.Pod)
		out = append(out, sm)
	}
	return out, rootfsPropagation, nil
}

// defaultsNotOverridden are the default mounts that no mount of the request
// (or of the pod) replaces; a request's /dev replaces every /dev/... default.
func defaultsNotOverridden(mounts []Mount, privileged bool, cgroupOptions []string) []specs.Mount {
	overridden := make(map[string]bool, len(mounts))
	for _, m := range mounts {
		overridden[filepath.Clean(m.ContainerPath)] = true
	}
	var out []specs.Mount
	for _, m := range defaultMounts(privileged, cgroupOptions) {
		dst := filepath.Clean(m.Destination)
		if overridden[dst] {
			continue
		}
		if overridden["/dev"] && strings.HasPrefix(dst, "/dev/") {
			continue
		}
		out = append(out, m)
	}
	return out
}

// bindSource is a bind's host path, created if missing (as containerd does)
// and with its symlinks resolved.
func bindSource(hostPath string) (string, error) {
	if _, err := os.Stat(hostPath); err != nil {
		if !errors.Is(err, os.ErrNotExist) {
			return "", fmt.Errorf("failed to stat %q: %w", hostPath, err)
		}
		// 0755 as containerd (and the kubelet's hostPath
		// DirectoryOrCreate) create it: the container's user, often not
		// root, must be able to use it.
		if err := os.MkdirAll(hostPath, 0o755); err != nil { //nolint:gosec // see above
			return "", fmt.Errorf("failed to mkdir %q: %w", hostPath, err)
		}
	}
	src, err := filepath.EvalSymlinks(hostPath)
	if err != nil {
		return "", fmt.Errorf("failed to resolve symlink %q: %w", hostPath, err)
	}
	return src, nil
}

// bindPropagation is a bind's propagation option; a shared or slave bind
// makes the rootfs at least as shared (*rootfs, "rshared" wins).
func bindPropagation(p Propagation, src string, rootfs *string) (string, error) {
	switch p {
	case PropagationBidirectional:
		if err := ensureShared(src); err != nil {
			return "", err
		}
		*rootfs = "rshared"
		return "rshared", nil
	case PropagationHostToContainer:
		if err := ensureSharedOrSlave(src); err != nil {
			return "", err
		}
		if *rootfs != "rshared" {
			*rootfs = "rslave"
		}
		return "rslave", nil
	default:
		return "rprivate", nil
	}
}

// bindAccess is a bind's ro/rro/rw option.
func bindAccess(m Mount) string {
	switch {
	case m.Readonly && m.RecursiveReadOnly:
		return "rro"
	case m.Readonly:
		return "ro"
	default:
		return "rw"
	}
}

func mountDepth(p string) int {
	return strings.Count(filepath.Clean(p), string(os.PathSeparator))
}

// ensureShared checks that the mount holding path is shared
// (containerd's ensureShared).
func ensureShared(path string) error {
	info, err := lookupMountFn(path)
	if err != nil {
		return err
	}
	for _, opt := range strings.Fields(info.Optional) {
		if strings.HasPrefix(opt, "shared:") {
			return nil
		}
	}
	return fmt.Errorf("path %q is mounted on %q but it is not a shared mount", path, info.Mountpoint)
}

// ensureSharedOrSlave checks that the mount holding path is shared or a
// slave (containerd's ensureSharedOrSlave).
func ensureSharedOrSlave(path string) error {
	info, err := lookupMountFn(path)
	if err != nil {
		return err
	}
	for _, opt := range strings.Fields(info.Optional) {
		if strings.HasPrefix(opt, "shared:") || strings.HasPrefix(opt, "master:") {
			return nil
		}
	}
	return fmt.Errorf("path %q is mounted on %q but it is not a shared or slave mount", path, info.Mountpoint)
}

// lookupMount returns the mount that holds path (already free of symlinks):
// the entry of /proc/self/mountinfo with the longest mount point that is
// path or one of its parents; the last such entry (the top of a stack of
// mounts on the same point) wins.
func lookupMount(path string) (*mountinfo.Info, error) {
	path = filepath.Clean(path)
	isParent := func(mp string) bool {
		return mp == "/" || mp == path || strings.HasPrefix(path, mp+"/")
	}
	infos, err := mountinfo.GetMounts(func(m *mountinfo.Info) (skip, stop bool) {
		return !isParent(m.Mountpoint), false
	})
	if err != nil {
		return nil, fmt.Errorf("read mountinfo: %w", err)
	}
	var best *mountinfo.Info
	for _, m := range infos {
		if best == nil || len(m.Mountpoint) >= len(best.Mountpoint) {
			best = m
		}
	}
	if best == nil {
		return nil, fmt.Errorf("no mount holds %q", path)
	}
	return best, nil
}

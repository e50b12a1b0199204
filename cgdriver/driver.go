package cgdriver

import (
	"errors"
	"fmt"
	"path"
	"slices"
	"strings"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/cgroups/systemd"
)

// Driver is a cgroup driver: Systemd or Cgroupfs.
type Driver string

// The drivers, named as in the kubelet's cgroupDriver.
const (
	Systemd  Driver = "systemd"
	Cgroupfs Driver = "cgroupfs"
	// Auto picks Systemd when systemd is PID 1, else Cgroupfs.
	Auto = "auto"
)

// ScopePrefix prefixes the systemd scopes of pods and containers
// (minicri-<id>.scope), as cri-containerd does.
const ScopePrefix = "minicri"

// defaultSlice holds the pods that name no parent under systemd.
const defaultSlice = "minicri.slice"

// ErrInvalidParent is a cgroup parent the driver cannot use.
var ErrInvalidParent = errors.New("invalid cgroup parent")

// Resolve turns the configured driver ("auto", "systemd", "cgroupfs"; empty
// is auto) into the one to use.
func Resolve(name string) (Driver, error) {
	switch name {
	case "", Auto:
		if systemd.IsRunningSystemd() {
			return Systemd, nil
		}
		return Cgroupfs, nil
	case string(Systemd):
		if !systemd.IsRunningSystemd() {
			return "", errors.New("cgroup driver systemd: systemd is not running on this host")
		}
		return Systemd, nil
	case string(Cgroupfs):
		return Cgroupfs, nil
	}
	return "", fmt.Errorf("unknown cgroup driver %q (want auto, systemd or cgroupfs)", name)
}

// DefaultParent is the parent of pods that name none, from the configured
// one: under systemd a path "/name" is read as the slice name.slice (the
// default "/minicri" is minicri.slice); what does not suit the driver
// falls back to its default.
func (d Driver) DefaultParent(configured string) string {
	if d == Systemd {
		name := strings.TrimPrefix(configured, "/")
		if !strings.HasSuffix(name, ".slice") {
			name += ".slice"
		}
		if p, err := d.Parent(name); err == nil && name != ".slice" {
			return p
		}
		return defaultSlice
	}
	if p, err := d.Parent(configured); err == nil && p != "" {
		return p
	}
	return "/minicri"
}

// Parent normalises a pod's cgroup parent for the driver. Systemd takes a
// slice name ("kubepods-burstable-pod<uid>.slice"), or a path whose last
// element is one (the slice path expands to it). Cgroupfs takes an absolute
// path; a bare slice name becomes the path systemd would give it, and any
// other relative path is made absolute: nothing lands below the daemon's
// own cgroup.
func (d Driver) Parent(parent string) (string, error) {
	if parent == "" {
		return "", nil
	}
	if strings.ContainsAny(parent, ":\x00") || slices.Contains(strings.Split(parent, "/"), "..") {
		return "", fmt.Errorf("%w %q", ErrInvalidParent, parent)
	}
	if d == Systemd {
		slice := path.Base(parent)
		full, err := systemd.ExpandSlice(slice)
		if err != nil {
			return "", fmt.Errorf("%w %q: the systemd cgroup driver takes a slice (name.slice)", ErrInvalidParent, parent)
		}
		if strings.Contains(parent, "/") && path.Clean("/"+parent) != full {
			return "", fmt.Errorf("%w %q: not the path of slice %s (%s)", ErrInvalidParent, parent, slice, full)
		}
		return slice, nil
	}
	if !strings.Contains(parent, "/") && strings.HasSuffix(parent, ".slice") {
		if full, err := systemd.ExpandSlice(parent); err == nil {
			return full, nil
		}
	}
	return path.Clean("/" + parent), nil
}

// Path is the cgroup path of name (a pod or container ID) under parent,
// which Parent has normalised.
func (d Driver) Path(parent, name string) string {
	if d == Systemd {
		return parent + ":" + ScopePrefix + ":" + name
	}
	return path.Join(parent, name)
}

// IsSystemd reports whether p is a systemd cgroup path.
func IsSystemd(p string) bool { return strings.Count(p, ":") == 2 }

// ParentOf is the parent that Path was given for p.
func ParentOf(p string) string {
	if IsSystemd(p) {
		return p[:strings.IndexByte(p, ':')]
	}
	return path.Dir(p)
}

// Config is the cgroup configuration of path p, without resources.
func Config(p string) *cgroups.Cgroup {
	res := &cgroups.Resources{SkipDevices: true}
	if IsSystemd(p) {
		parts := strings.SplitN(p, ":", 3)
		return &cgroups.Cgroup{Parent: parts[0], ScopePrefix: parts[1], Name: parts[2], Systemd: true, Resources: res}
	}
	return &cgroups.Cgroup{Path: p, Resources: res}
}

// Manager is the cgroup manager of path p.
func Manager(p string) (cgroups.Manager, error) {
	mgr, err := cgmanager.New(Config(p))
	if err != nil {
		return nil, fmt.Errorf("cgroup %s: %w", p, err)
	}
	return mgr, nil
}

// Remove removes the cgroup at p (stops its scope under systemd); a missing
// one is fine. It fails while processes remain in it.
func Remove(p string) error {
	if p == "" {
		return nil
	}
	mgr, err := Manager(p)
	if err != nil {
		return err
	}
	if err := mgr.Destroy(); err != nil {
		return fmt.Errorf("remove cgroup %s: %w", p, err)
	}
	return nil
}

// FSPath is p's path inside the cgroup hierarchy ("/kubepods.slice/
// kubepods-besteffort.slice/.../minicri-<id>.scope" for a systemd path).
func FSPath(p string) string {
	if !IsSystemd(p) {
		return path.Join("/", p)
	}
	c := Config(p)
	slice, err := systemd.ExpandSlice(c.Parent)
	if err != nil {
		slice = "/" + c.Parent
	}
	return path.Join(slice, c.ScopePrefix+"-"+c.Name+".scope")
}

// Sibling is the path of name next to p, under the same parent and driver:
// a container's cgroup beside its pod's pause.
func Sibling(p, name string) string {
	if IsSystemd(p) {
		return Systemd.Path(ParentOf(p), name)
	}
	return Cgroupfs.Path(ParentOf(p), name)
}

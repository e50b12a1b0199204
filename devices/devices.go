package devices

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/errdefs"
)

// Device is one CRI device.
type Device struct {
	ContainerPath string `json:"container_path"`
	HostPath      string `json:"host_path"`
	Permissions   string `json:"permissions,omitempty"` // "rwm" subset; empty means rwm
}

var errNotADevice = errors.New("not a device node")

// hostDevRoot is where the host's devices are looked up for a privileged
// container.
const hostDevRoot = "/dev"

// Build mirrors containerd's CRI WithDevices plus, for a privileged
// container, WithHostDevices and WithAllDevicesAllowed. The device cgroup
// starts from deny-all (containerd's default spec); runc's specconv then
// appends its default allowed devices (null, zero, full, tty, random,
// urandom, ptmx, pts) after these rules. moved maps the container path of
// each device found somewhere else on the host to its host path (see
// BindMoved).
func Build(requested []Device, privileged bool) ([]specs.LinuxDevice, []specs.LinuxDeviceCgroup, map[string]string, error) {
	var devs []specs.LinuxDevice
	var moved map[string]string
	rules := []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}}

	for _, d := range requested {
		perms := d.Permissions
		if perms == "" {
			perms = "rwm"
		}
		if strings.Trim(perms, "rwm") != "" {
			return nil, nil, nil, fmt.Errorf("%w: device %q: invalid permissions %q", errdefs.ErrInvalid, d.HostPath, d.Permissions)
		}
		if d.HostPath == "" {
			return nil, nil, nil, fmt.Errorf("%w: device with container path %q has no host path", errdefs.ErrInvalid, d.ContainerPath)
		}
		if d.ContainerPath != "" && !filepath.IsAbs(d.ContainerPath) {
			return nil, nil, nil, fmt.Errorf("%w: device container path %q is not absolute", errdefs.ErrInvalid, d.ContainerPath)
		}
		path, err := filepath.EvalSymlinks(d.HostPath)
		if err != nil {
			if errors.Is(err, os.ErrNotExist) {
				return nil, nil, nil, fmt.Errorf("%w: device %q: %w", errdefs.ErrInvalid, d.HostPath, err)
			}
			return nil, nil, nil, fmt.Errorf("resolve device %q: %w", d.HostPath, err)
		}
		found, err := getDevices(path, d.ContainerPath)
		if err != nil {
			if errors.Is(err, errNotADevice) || errors.Is(err, os.ErrNotExist) {
				return nil, nil, nil, fmt.Errorf("%w: %w", errdefs.ErrInvalid, err)
			}
			return nil, nil, nil, err
		}
		for i := range found {
			if host := deviceHostPath(path, d.ContainerPath, found[i].Path); host != found[i].Path {
				if moved == nil {
					moved = map[string]string{}
				}
				moved[found[i].Path] = host
			}
			if found[i].Type == "p" {
				return nil, nil, nil, fmt.Errorf("%w: device %q is a fifo, not a device node", errdefs.ErrInvalid, d.HostPath)
			}
			major, minor := found[i].Major, found[i].Minor
			devs = append(devs, found[i])
			rules = append(rules, specs.LinuxDeviceCgroup{
				Allow:  true,
				Type:   found[i].Type,
				Major:  &major,
				Minor:  &minor,
				Access: perms,
			})
		}
	}

	if privileged {
		host, err := getDevices(hostDevRoot, "")
		if err != nil {
			return nil, nil, nil, fmt.Errorf("list host devices: %w", err)
		}
		have := make(map[string]bool, len(devs))
		for _, d := range devs {
			have[d.Path] = true
		}
		for _, d := range host {
			if !have[d.Path] {
				devs = append(devs, d)
			}
		}
		rules = []specs.LinuxDeviceCgroup{{Allow: true, Access: "rwm"}}
	}
	return devs, rules, moved, nil
}

// deviceHostPath is the host path of a device getDevices found at
// devPath for the request's hostPath (resolved) and containerPath.
func deviceHostPath(hostPath, containerPath, devPath string) string {
	if containerPath == "" {
		return devPath
	}
	rel, err := filepath.Rel(containerPath, devPath)
	if err != nil {
		return hostPath
	}
	return filepath.Join(hostPath, rel)
}

// getDevices is containerd's pkg/oci getDevices: a device node, or every
// device node under a directory (recursively, skipping pts, shm, fd,
// mqueue and a few tool directories, console and fifos). containerPath,
// when set, replaces path in the result.
func getDevices(path, containerPath string) ([]specs.LinuxDevice, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("error stating device path: %w", err)
	}
	if !st.IsDir() {
		dev, err := deviceFromPath(path)
		if err != nil {
			if errors.Is(err, errNotADevice) {
				return nil, fmt.Errorf("get device path: %q containerPath: %q error: %w", path, containerPath, err)
			}
			return nil, err
		}
		if containerPath != "" {
			dev.Path = containerPath
		}
		return []specs.LinuxDevice{*dev}, nil
	}

	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, err
	}
	var out []specs.LinuxDevice
	for _, e := range entries {
		switch {
		case e.IsDir():
			switch e.Name() {
			case "pts", "shm", "fd", "mqueue", ".lxc", ".lxd-mounts", ".udev":
				continue
			}
			var cp string
			if containerPath != "" {
				cp = filepath.Join(containerPath, e.Name())
			}
			sub, err := getDevices(filepath.Join(path, e.Name()), cp)
			if err != nil {
				return nil, err
			}
			out = append(out, sub...)
		case e.Name() == "console":
			continue
		default:
			dev, err := deviceFromPath(filepath.Join(path, e.Name()))
			if err != nil {
				if errors.Is(err, errNotADevice) || errors.Is(err, os.ErrNotExist) {
					continue
				}
				return nil, err
			}
			if dev.Type == "p" {
				continue
			}
			if containerPath != "" {
				dev.Path = filepath.Join(containerPath, e.Name())
			}
			out = append(out, *dev)
		}
	}
	return out, nil
}

// deviceFromPath describes the device node at path (not following a final
// symlink), like containerd's oci.DeviceFromPath.
func deviceFromPath(path string) (*specs.LinuxDevice, error) {
	var st unix.Stat_t
	if err := unix.Lstat(path, &st); err != nil {
		return nil, &os.PathError{Op: "lstat", Path: path, Err: err}
	}
	var typ string
	switch st.Mode & unix.S_IFMT {
	case unix.S_IFBLK:
		typ = "b"
	case unix.S_IFCHR:
		typ = "c"
	case unix.S_IFIFO:
		typ = "p"
	default:
		return nil, errNotADevice
	}
	rdev := uint64(st.Rdev) //nolint:unconvert // 32-bit on some platforms
	mode := os.FileMode(st.Mode &^ unix.S_IFMT)
	uid, gid := st.Uid, st.Gid
	return &specs.LinuxDevice{
		Type:     typ,
		Path:     path,
		Major:    int64(unix.Major(rdev)),
		Minor:    int64(unix.Minor(rdev)),
		FileMode: &mode,
		UID:      &uid,
		GID:      &gid,
	}, nil
}

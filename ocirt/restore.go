package ocirt

import (
	"errors"
	"fmt"
	"os"
	"syscall"

	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cgdriver"
)

// LibcontainerRestore is the built-in runtime restoring a container from
// CRIU images instead of starting a new init: its Create makes the
// libcontainer container of the bundle and has CRIU restore the dumped
// process tree into it, as a child of the calling process (CRIU's
// --restore-sibling), so the caller waits for it as for any init. The
// dumped stdio pipes are replaced by io's (the images' descriptors.json
// names them); a TTY cannot be restored.
type LibcontainerRestore struct {
	Root   string // libcontainer's state root
	Images string // CRIU's image directory
	Work   string // CRIU's work directory (its restore.log)
}

// Create implements Runtime: the returned container is already running
// (Start must not be called).
func (r LibcontainerRestore) Create(id, bundle string, spec *specs.Spec, io Stdio) (Container, error) {
	if io.TTY {
		return nil, errors.New("restore a TTY container: not supported")
	}
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName: id, Spec: spec, UseSystemdCgroup: cgdriver.IsSystemd(spec.Linux.CgroupsPath),
	})
	if err != nil {
		return nil, fmt.Errorf("convert spec: %w", err)
	}
	cfg.Labels = withBundle(cfg.Labels, bundle)
	c, err := libcontainer.Create(r.Root, id, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	p := &libcontainer.Process{Init: true}
	setStdio(p, io.Stdin, io.Stdout, io.Stderr)
	err = c.Restore(p, &libcontainer.CriuOpts{
		ImagesDirectory:         r.Images,
		WorkDirectory:           r.Work,
		TcpEstablished:          true,
		ExternalUnixConnections: true,
		FileLocks:               true,
		// The restored tasks stay in the cgroups libcontainer puts CRIU
		// in (the new container's): the image's cgroup paths are the old
		// container's, and an archive's to choose (they climbed out with "..").
		ManageCgroupsMode: "ignore",
		// The request's LSM label, not the images': the daemon refused
		// images whose labels differ (checkpoint/restore_lsm.go); CRIU
		// rewrites every restored task's label to this one.
		LsmProfile: lsmProfile(spec.Process),
	})
	if err != nil {
		if derr := c.Destroy(); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroy after a failed restore: %w", derr))
		}
		return nil, fmt.Errorf("criu restore: %w", err)
	}
	// runc's Restore leaves the container's init start time unset (only Load
	// and a started init set it), so its Signal takes the restored init for
	// gone and sends nothing when the container has its own PID namespace (a
	// shared one is killed through the cgroup): such a container could not be
	// stopped. The container loaded from the state Restore saved knows it.
	loaded, err := libcontainer.Load(r.Root, id)
	if err != nil {
		_ = p.Signal(syscall.SIGKILL)
		_, _ = p.Wait()
		if derr := c.Destroy(); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroy after a failed load: %w", derr))
		}
		return nil, fmt.Errorf("load the restored container: %w", err)
	}
	return &lcContainer{lcHandle: lcHandle{c: loaded}, p: p}, nil
}

// lsmProfile is CRIU's --lsm-profile for the spec's process: its
// AppArmor profile or SELinux label, "" (the images' labels, which the
// daemon checked are none) when it has neither.
func lsmProfile(p *specs.Process) string {
	switch {
	case p == nil:
		return ""
	case p.ApparmorProfile != "":
		return "apparmor:" + p.ApparmorProfile
	case p.SelinuxLabel != "":
		return "selinux:" + p.SelinuxLabel
	}
	return ""
}

// Load implements Runtime.
func (r LibcontainerRestore) Load(id, cgroupsPath string) (Handle, error) {
	return Libcontainer{Root: r.Root}.Load(id, cgroupsPath)
}

// CriuImagesPresent reports whether dir holds CRIU images (inventory.img).
func CriuImagesPresent(dir string) bool {
	fi, err := os.Stat(dir + "/inventory.img")
	return err == nil && fi.Mode().IsRegular()
}

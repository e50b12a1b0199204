package container

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/imagevolume"
	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/internal/idindex"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/steps"
	"github.com/minicri/minicri/monitor"
)

// createTimeout bounds one container creation.
const createTimeout = 2 * time.Minute

// Create makes a container in a ready pod; its process waits for Start.
func (m *Manager) Create(ctx context.Context, podID string, cfg Config) (string, error) {
	if cfg.Name == "" {
		return "", fmt.Errorf("%w: container metadata.name is required", ErrInvalid)
	}
	if cfg.Image == "" {
		return "", fmt.Errorf("%w: container image is required", ErrInvalid)
	}
	if cfg.LogPath != "" && (!filepath.IsLocal(cfg.LogPath) || filepath.Clean(cfg.LogPath) == ".") {
		return "", fmt.Errorf("%w: log_path %q must be a file path inside the pod's log directory", ErrInvalid, cfg.LogPath)
	}
	pod, err := m.opts.Pods.Pod(podID)
	if err != nil {
		return "", err
	}
	if !pod.Ready {
		return "", fmt.Errorf("%w: pod sandbox %s is not ready", ErrFailedPrecondition, pod.ID)
	}
	if cfg.LogPath != "" && pod.LogDirectory != "" && !filepath.IsAbs(pod.LogDirectory) {
		return "", fmt.Errorf("%w: pod log_directory %q is not absolute", ErrInvalid, pod.LogDirectory)
	}
	if err := m.checkAgainstPod(pod, &cfg.Security); err != nil {
		return "", err
	}
	if err := m.resolveSeccompOCI(&cfg.Security.Seccomp); err != nil {
		return "", err
	}
	id := idindex.NewID()
	key := nameKey(pod.ID, cfg)
	if err := m.names.reserve(key, id); err != nil {
		return "", err
	}
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
	defer cancel()
	if err := m.create(cctx, id, pod, cfg); err != nil {
		m.names.release(key, id)
		return "", err
	}
	return id, nil
}

// creation carries one CreateContainer through its steps.
type creation struct {
	m       *Manager
	pod     PodInfo
	rec     Record
	img     image.Image
	spec    *specs.Spec
	release func() // from Hooks.CreateContainer, called once published or undone
}

func (m *Manager) create(ctx context.Context, id string, pod PodInfo, cfg Config) error {
	c := &creation{m: m, pod: pod, rec: Record{
		ID:             id,
		PodID:          pod.ID,
		Config:         cfg,
		CreatedAt:      time.Now(),
		CgroupsPath:    cgdriver.Sibling(pod.CgroupPath, id),
		RuntimeHandler: pod.RuntimeHandler,
		Status:         Status{State: StateCreating},
	}}
	if pod.LogDirectory != "" && cfg.LogPath != "" {
		c.rec.LogPath = filepath.Join(pod.LogDirectory, cfg.LogPath)
	}
	log := m.log.With("pod", pod.ID, "container", id, "name", cfg.Name)
	list := []steps.Step{
		{Name: "acquire image", Do: c.acquireImage, Undo: c.releaseImage},
		{Name: "record intent", Do: c.recordIntent, Undo: c.removeDirs},
		{Name: "acquire image volumes", Do: c.acquireImageVolumes, Undo: c.releaseImageVolumes},
		{Name: "mount rootfs", Do: c.mountRootfs, Undo: c.unmountRootfs},
		{Name: "build spec", Do: c.buildSpec},
		{Name: "nri create container", Do: c.hookCreate, Undo: c.unhookCreate},
		{Name: "write spec", Do: c.writeSpec},
		{Name: "create in monitor", Do: c.createInMonitor, Undo: c.destroy},
		{Name: "delegate cgroup", Do: c.delegateCgroup},
		{Name: "publish created", Do: c.publish},
	}
	if m.restores(cfg.Image) {
		list = c.restoreSteps() // restoring.go
	}
	timings, err := steps.Run(ctx, log, list)
	if c.release != nil {
		c.release()
	}
	attrs := []any{"err", err}
	for _, t := range timings {
		attrs = append(attrs, t.Name, t.Duration.Round(10*time.Microsecond).String())
	}
	if err != nil {
		log.Error("CreateContainer failed", attrs...)
		return err
	}
	log.Info("container created", attrs[2:]...)
	if m.opts.Hooks.Active() {
		m.opts.Hooks.PostCreateContainer(ctx, Info{Record: c.rec}.Hook())
	}
	return nil
}

func (c *creation) acquireImage(context.Context) error {
	img, err := c.m.opts.Images.Acquire(c.rec.Config.Image, c.rec.ID)
	if err != nil {
		return err
	}
	if err := refuseArtifact(c.m.opts.Images, img, c.rec.Config.Image, c.rec.ID); err != nil {
		return err
	}
	c.img = img
	c.rec.ImageID = img.ID
	c.rec.ImageRef = img.ID
	if len(img.RepoDigests) > 0 {
		c.rec.ImageRef = img.RepoDigests[0]
	}
	c.rec.ImageName = c.rec.Config.Image
	c.rec.ImageStopSignal = imageConfig(img).StopSignal
	if len(img.RepoTags) > 0 {
		c.rec.ImageName = img.RepoTags[0]
	}
	return nil
}

func (c *creation) releaseImage(context.Context) error {
	if c.img.ID == "" {
		return nil // never acquired (or already released)
	}
	if err := c.m.opts.Images.Release(c.rec.ID); err != nil {
		return err
	}
	c.img.ID = ""
	return nil
}

func (c *creation) acquireImageVolumes(ctx context.Context) error {
	ims, err := acquireImageVolumes(c.m.opts.Images, imageVolumesHolder(c.rec.ID), c.rec.Config.Mounts, c.m.imageVolumesDir(c.rec.ID), c.usernsPath())
	c.rec.ImageMounts = ims // on error too: what was pinned and mounted, for the undo
	return err
}

func (c *creation) releaseImageVolumes(context.Context) error {
	if err := imagevolume.Release(c.m.opts.Images, imageVolumesHolder(c.rec.ID), c.m.imageVolumesDir(c.rec.ID)); err != nil {
		return err
	}
	c.rec.ImageMounts = nil
	return nil
}

func (c *creation) recordIntent(context.Context) error {
	for _, d := range []string{c.m.rootDir(c.rec.ID), c.m.ctrStateDir(c.rec.ID)} {
		if err := os.Mkdir(d, hostdir.Private); err != nil {
			return fmt.Errorf("create container directory: %w", err)
		}
	}
	return atomicfile.WriteJSON(c.m.recordPath(c.rec.ID), c.rec)
}

func (c *creation) removeDirs(context.Context) error { return c.m.removeDirs(c.rec.ID) }

// usernsPath names the pod's user namespace, "" for the host's.
func (c *creation) usernsPath() string {
	if c.pod.UserNS == nil {
		return ""
	}
	return fmt.Sprintf("/proc/%d/ns/user", c.pod.PausePID)
}

func (c *creation) mountRootfs(context.Context) error {
	var hostRoot [2]int
	if u := c.pod.UserNS; u != nil {
		hostRoot[0], hostRoot[1] = u.HostRoot()
	}
	return mountRootfs(c.img.Layers, c.m.rootDir(c.rec.ID), c.m.rootfsPath(c.rec.ID), c.usernsPath(), hostRoot)
}

func (c *creation) unmountRootfs(context.Context) error {
	return unmountRootfs(c.m.rootfsPath(c.rec.ID))
}

func (c *creation) buildSpec(context.Context) error {
	cfg := c.rec.Config
	cfg.Mounts = withImageVolumes(cfg.Mounts, c.rec.ImageMounts)
	in := SpecInput{
		ID:          c.rec.ID,
		Config:      cfg,
		Image:       imageConfig(c.img),
		Rootfs:      c.m.rootfsPath(c.rec.ID),
		Pod:         c.pod,
		CgroupsPath: c.rec.CgroupsPath,
		HostCaps:    c.m.opts.HostCaps,
		AppArmor:    c.m.opts.AppArmor,
	}
	if c.rec.Config.Security.PID == ModeTarget {
		pid, err := c.m.targetPID(c.rec.Config.Security.TargetID)
		if err != nil {
			return err
		}
		in.TargetPID = pid
	}
	spec, err := BuildSpec(in)
	if err != nil {
		return err
	}
	if err := c.m.injectCDI(spec, &c.rec.Config); err != nil {
		return err
	}
	c.spec = spec
	u := spec.Process.User
	c.rec.User = &User{UID: u.UID, GID: u.GID, Groups: u.AdditionalGids}
	return nil
}

// writeSpec writes the spec, as the hooks left it, into the bundle. A new
// file in the container's fresh state dir, read by nothing before the
// container is created (a crash before then leaves an intent-only record,
// which recovery removes), and needed only while the container's processes
// live: no temp file, no fsync (two fsyncs were ~2 ms of CreateContainer).
func (c *creation) writeSpec(context.Context) error {
	data, err := json.Marshal(c.spec)
	if err != nil {
		return fmt.Errorf("marshal spec: %w", err)
	}
	return writeNewFile(filepath.Join(c.m.ctrStateDir(c.rec.ID), "config.json"), data)
}

// writeSpecSynced writes the spec durably (temp, fsync, rename): a restored
// container has no process until StartContainer, which reads it.
func (c *creation) writeSpecSynced(context.Context) error {
	data, err := json.Marshal(c.spec)
	if err != nil {
		return fmt.Errorf("marshal spec: %w", err)
	}
	return atomicfile.Write(filepath.Join(c.m.ctrStateDir(c.rec.ID), "config.json"), data, 0o600)
}

// createInMonitor has the pod's monitor create the container: its init
// sets up the rootfs, pivots into it and waits for Start. The init of a
// container in a pod user namespace reaches its rootfs by path as an
// unprivileged host user, so the container's state directory is searchable
// by the pod's root group only meanwhile (see hostdirs.go).
func (c *creation) createInMonitor(ctx context.Context) error {
	if u := c.pod.UserNS; u != nil {
		_, gid := u.HostRoot()
		if err := c.m.openRootfsPath(c.rec.ID, gid); err != nil {
			return errors.Join(err, c.m.closeRootfsPath(c.rec.ID))
		}
	}
	err := c.callCreate(ctx)
	if c.pod.UserNS != nil {
		err = errors.Join(err, c.m.closeRootfsPath(c.rec.ID))
	}
	return err
}

func (c *creation) callCreate(ctx context.Context) error {
	rt, err := c.m.monitorRuntime(c.rec.RuntimeHandler)
	if err != nil {
		return err
	}
	resp, err := monitor.Call(ctx, monitor.SocketPath(c.pod.MonitorDir), monitor.Request{
		Op: monitor.OpCreate, ID: c.rec.ID,
		Create: &monitor.CreateRequest{
			Bundle:    c.m.ctrStateDir(c.rec.ID),
			Dir:       c.m.ctrStateDir(c.rec.ID),
			RuncRoot:  c.m.runcRoot(),
			LogDir:    c.logDir(),
			LogPath:   c.logName(),
			Stdin:     c.rec.Config.Stdin,
			StdinOnce: c.rec.Config.StdinOnce,
			TTY:       c.rec.Config.TTY,
			Runtime:   rt,
		},
	})
	if err != nil {
		return err
	}
	if rt != nil && resp.Container.Runtime != rt.Path {
		// A monitor started before runtime handlers ran it with libcontainer.
		return fmt.Errorf("%w: the monitor of pod %s cannot run runtime handler %q: recreate the pod",
			ErrFailedPrecondition, c.pod.ID, c.rec.RuntimeHandler)
	}
	ref, err := proc.RefOf(resp.Container.PID)
	if err != nil {
		return fmt.Errorf("container init %d: %w", resp.Container.PID, err)
	}
	c.rec.Status.Init = ref
	return nil
}

// logDir and logName tell the monitor where the log is: the monitor opens
// logName beneath logDir, never following a link ("" without a log).
func (c *creation) logDir() string {
	if c.rec.LogPath == "" {
		return ""
	}
	return c.pod.LogDirectory
}

func (c *creation) logName() string {
	if c.rec.LogPath == "" {
		return ""
	}
	return filepath.Clean(c.rec.Config.LogPath)
}

func (c *creation) destroy(ctx context.Context) error {
	return c.m.destroy(ctx, c.rec, c.pod.MonitorDir)
}

func (c *creation) publish(context.Context) error {
	ctr := c.m.newContainer(c.rec)
	if _, err := ctr.update(func(s Status) Status { s.State = StateCreated; return s }); err != nil {
		return err
	}
	c.m.store.add(ctr)
	c.rec.Status = ctr.Status()
	return nil
}

// targetPID is the init PID of the running container whose PID namespace a
// ModeTarget container joins.
func (m *Manager) targetPID(id string) (int, error) {
	if id == "" {
		return 0, fmt.Errorf("%w: PID namespace mode TARGET needs a target_id", ErrInvalid)
	}
	t, err := m.store.get(id)
	if err != nil {
		return 0, fmt.Errorf("%w: target container %s: %v", ErrNotFound, id, err)
	}
	st := m.info(t).Status
	if st.State != StateRunning && st.State != StateCreated {
		return 0, fmt.Errorf("%w: target container %s is %s", ErrFailedPrecondition, id, st.State)
	}
	return st.Init.PID, nil
}

func imageConfig(img image.Image) ImageConfig {
	if img.Config == nil {
		return ImageConfig{}
	}
	c := img.Config.Config
	return ImageConfig{
		Entrypoint: c.Entrypoint, Cmd: c.Cmd, Env: c.Env,
		WorkingDir: c.WorkingDir, User: c.User, StopSignal: c.StopSignal,
	}
}

// removeDirs deletes the container's state and root directories.
func (m *Manager) removeDirs(id string) error {
	// Never walk into a mount: an image volume, the rootfs or a layer.
	if err := imagevolume.Unmount(m.imageVolumesDir(id)); err != nil {
		return err
	}
	if err := unmountRootfs(m.rootfsPath(id)); err != nil {
		return err
	}
	if err := os.RemoveAll(m.ctrStateDir(id)); err != nil {
		return fmt.Errorf("remove state dir: %w", err)
	}
	if err := os.RemoveAll(m.rootDir(id)); err != nil {
		return fmt.Errorf("remove root dir: %w", err)
	}
	return nil
}

package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path"
	"sort"
	"time"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/events"
	"github.com/minicri/minicri/internal/hostdir"
	"github.com/minicri/minicri/internal/idindex"
	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/steps"
	"github.com/minicri/minicri/monitor"
	"github.com/minicri/minicri/network"
)

// createTimeout bounds one sandbox creation; it runs detached from the
// caller's context so that a kubelet retry can pick up the result.
const createTimeout = 4 * time.Minute

// Run creates and starts a pod sandbox and returns its ID. A second call for
// the same pod while the first is in flight (a kubelet retrying after its RPC
// timed out) returns the first call's pod once it is ready.
func (m *Manager) Run(ctx context.Context, cfg Config) (string, error) {
	if err := m.resolveSeccompOCI(&cfg.Security.Seccomp); err != nil { // security.go
		return "", err
	}
	if err := validate(&cfg); err != nil {
		return "", err
	}
	if err := m.checkHandler(cfg); err != nil {
		return "", err
	}
	if _, err := m.opts.CgroupDriver.Parent(cfg.CgroupParent); err != nil {
		return "", fmt.Errorf("%w: %v", ErrInvalid, err)
	}
	key := cfg.Metadata.key()
	op, leader := m.inflight.begin(key)
	if !leader {
		m.log.Info("RunPodSandbox already in flight; waiting for it", "pod", key)
		return m.inflight.wait(ctx, key, op)
	}
	if sb := m.store.byKey(key); sb != nil {
		err := fmt.Errorf("%w: pod %s is sandbox %s", ErrAlreadyExists, key, sb.ID())
		m.inflight.finish(key, op, "", err)
		return "", err
	}
	go func() {
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), createTimeout)
		defer cancel()
		id, err := m.create(cctx, cfg)
		m.inflight.finish(key, op, id, err)
	}()
	return m.inflight.wait(ctx, key, op)
}

// creation carries one RunPodSandbox through its steps.
type creation struct {
	m       *Manager
	rec     Record
	procs   []*proc.Handle // the pause and the monitor
	release func()         // from Hooks.RunPod, called once published or undone
}

func (m *Manager) create(ctx context.Context, cfg Config) (string, error) {
	id := idindex.NewID()
	parent, _ := m.opts.CgroupDriver.Parent(cfg.CgroupParent) // checked by Run
	if parent == "" {
		parent = m.opts.CgroupParent
	}
	c := &creation{m: m, rec: Record{
		ID:         id,
		Config:     cfg,
		CreatedAt:  time.Now(),
		CgroupPath: m.opts.CgroupDriver.Path(parent, id),
		Status:     Status{State: StateCreating},
	}}
	if cfg.Namespaces.Network != ModeNode {
		c.rec.NetNSPath = m.netnsPath(id)
	}
	if cfg.Namespaces.IPC != ModeNode {
		c.rec.ShmPath = m.shmPath(id)
	}
	log := m.log.With("pod", id, "name", cfg.Metadata.Namespace+"/"+cfg.Metadata.Name)
	timings, err := steps.Run(ctx, log, c.steps())
	if c.release != nil {
		c.release()
	}
	attrs := []any{"err", err}
	for _, t := range timings {
		attrs = append(attrs, t.Name, t.Duration.Round(10*time.Microsecond).String())
	}
	if err != nil {
		log.Error("RunPodSandbox failed", attrs...)
		return "", err
	}
	log.Info("pod sandbox ready", append(attrs[2:], "ips", c.rec.Status.IPs)...)
	return id, nil
}

// steps lists what RunPodSandbox does. A pod on the host's user namespace
// gets its netns pinned first, and CNI ADD runs while its pause starts. A
// pod with its own user namespace needs the pause to create the netns
// inside that user namespace (so the pod owns it): the netns is pinned from
// the pause, then wired.
func (c *creation) steps() []steps.Step {
	prefix := []steps.Step{
		{Name: "record intent", Do: c.recordIntent, Undo: c.removeDirs},
		{Name: "write pod files", Do: c.writeFiles},
		{Name: "mount shm", Do: c.mountShm, Undo: c.unmountShm},
	}
	network := steps.Step{Name: "cni add", Do: c.setupNetwork, Undo: c.teardownNetwork}
	monitor := steps.Step{Name: "start monitor and pause", Do: c.startMonitor, Undo: c.stopMonitor}
	hook := steps.Step{Name: "nri run pod sandbox", Do: c.hookRunPod, Undo: c.unhookRunPod}
	publish := steps.Step{Name: "publish ready", Do: c.publish}
	if c.rec.Config.Namespaces.OwnUserNS() {
		return append(prefix, monitor,
			steps.Step{Name: "pin netns of the pause", Do: c.pinPauseNetNS, Undo: c.removeNetNS},
			network, hook, publish)
	}
	return append(prefix,
		steps.Step{Name: "pin netns", Do: c.pinNetNS, Undo: c.removeNetNS},
		steps.Parallel("network and pause", network, monitor),
		hook, publish)
}

func (m *Manager) netnsPath(id string) string { return path.Join(m.netnsDir(), id) }
func (m *Manager) shmPath(id string) string   { return path.Join(m.podStateDir(id), "shm") }

func (c *creation) recordIntent(context.Context) error {
	for _, d := range []string{c.m.podRootDir(c.rec.ID), c.m.podStateDir(c.rec.ID)} {
		if err := os.MkdirAll(d, hostdir.Private); err != nil {
			return err
		}
	}
	return atomicfile.WriteJSON(c.m.recordPath(c.rec.ID), c.rec)
}

func (c *creation) removeDirs(context.Context) error {
	return c.m.removeDirs(c.rec.ID)
}

func (c *creation) writeFiles(context.Context) error {
	return writePodFiles(c.m.podRootDir(c.rec.ID), c.rec.Config)
}

func (c *creation) mountShm(context.Context) error {
	if c.rec.ShmPath == "" {
		return nil
	}
	return mountShm(c.rec.ShmPath)
}

func (c *creation) unmountShm(context.Context) error { return unmountShm(c.rec.ShmPath) }

func (c *creation) pinNetNS(context.Context) error {
	if c.rec.NetNSPath == "" {
		return nil
	}
	_, err := network.NewNetNS(c.m.netnsDir(), c.rec.ID)
	return err
}

func (c *creation) pinPauseNetNS(context.Context) error {
	_, err := network.PinNetNS(c.m.netnsDir(), c.rec.ID, fmt.Sprintf("/proc/%d/ns/net", c.rec.Status.Pause.PID))
	return err
}

func (c *creation) removeNetNS(context.Context) error { return removeNetNS(c.rec.NetNSPath) }

func (c *creation) setupNetwork(ctx context.Context) error {
	if c.rec.NetNSPath == "" {
		return nil
	}
	res, err := c.m.opts.Network.Setup(ctx, c.rec.networkPod())
	if err != nil {
		return err
	}
	c.rec.Status.IPs, c.rec.Status.Network = res.IPs, res.Network
	return nil
}

func (c *creation) teardownNetwork(ctx context.Context) error {
	if c.rec.NetNSPath == "" {
		return nil
	}
	return c.m.opts.Network.Teardown(ctx, c.rec.networkPod())
}

func (c *creation) startMonitor(ctx context.Context) error {
	st, err := monitor.Launch(ctx, c.m.opts.Exe, c.rec.monitorSpec(c.m))
	if err != nil {
		return err
	}
	c.rec.Status.Monitor, c.rec.Status.Pause = st.Monitor, st.Pause
	hs, err := openProcs(c.rec.Status)
	if err != nil {
		return err
	}
	c.procs = hs
	return nil
}

func (c *creation) stopMonitor(ctx context.Context) error {
	closeAll(c.procs)
	c.procs = nil
	return errors.Join(monitor.Shutdown(ctx, c.m.podStateDir(c.rec.ID), stopGrace), removeCgroup(c.rec.CgroupPath))
}

func (c *creation) publish(context.Context) error {
	sb := newSandbox(c.rec, c.m.recordPath(c.rec.ID))
	if err := sb.update(func(s Status) Status { s.State = StateReady; return s }); err != nil {
		return err
	}
	sb.setProcs(c.procs...)
	c.rec.Status = sb.Status()
	c.m.store.add(sb)
	c.m.emit(events.Created, sb.ID())
	c.m.emit(events.Started, sb.ID())
	return nil
}

// networkPod is what CNI ADD and DEL are called with; both get the same.
func (r Record) networkPod() network.Pod {
	md := r.Config.Metadata
	return network.Pod{
		ID: r.ID, Name: md.Name, Namespace: md.Namespace, UID: md.UID,
		NetNSPath: r.NetNSPath, PortMappings: r.Config.PortMappings, CgroupParent: r.Config.CgroupParent,
	}
}

func (r Record) monitorSpec(m *Manager) monitor.Spec {
	ns := r.Config.Namespaces
	sysctls := make([]string, 0, len(r.Config.Sysctls))
	for k, v := range r.Config.Sysctls {
		sysctls = append(sysctls, sysctlPath(k)+"="+v) // the pause writes /proc/sys/<path>
	}
	sort.Strings(sysctls)
	netns, userns := r.NetNSPath, (*idmap.Mappings)(nil)
	if ns.OwnUserNS() {
		netns, userns = "", &idmap.Mappings{UIDs: ns.UserNS.UIDs, GIDs: ns.UserNS.GIDs}
	}
	return monitor.Spec{
		PodID: r.ID,
		Dir:   m.podStateDir(r.ID),
		Pause: monitor.Pause{
			Path:       m.opts.PausePath,
			Hostname:   r.Config.Hostname,
			Sysctls:    sysctls,
			NetNSPath:  netns,
			UserNS:     userns,
			NewIPC:     ns.IPC != ModeNode,
			NewUTS:     ns.Network != ModeNode,
			NewPID:     ns.PID != ModeNode,
			CgroupPath: r.CgroupPath,
			RunAsUser:  r.Config.Security.RunAsUser,
			RunAsGroup: r.Config.Security.RunAsGroup,
			Groups:     r.Config.Security.SupplementalGroups,
		},
	}
}

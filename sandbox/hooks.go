package sandbox

import (
	"context"

	"github.com/minicri/minicri/hook"
)

// Hooks hear of each sandbox's lifecycle (NRI plugins), each pod handed
// over as a hook.Pod (Info.Hook). A failing RunPod fails RunPodSandbox;
// the other calls are told, their errors logged.
type Hooks interface {
	// RunPod is called once the pod's resources exist, before it is
	// published. The returned release (never nil) must be called once the
	// pod is published or its creation undone: until then hooks may hold
	// off work that must see the pod published (a late plugin's sync).
	RunPod(ctx context.Context, pod hook.Pod) (release func(), err error)
	// StopPod is called after the pod's containers have stopped, before
	// its network and namespaces go.
	StopPod(ctx context.Context, pod hook.Pod) error
	// RemovePod is called after the pod's containers are removed.
	RemovePod(ctx context.Context, pod hook.Pod) error
	// UpdatePodResources passes on the pod-level resources the kubelet set.
	UpdatePodResources(ctx context.Context, pod hook.Pod, overhead, resources *hook.PodResources) error
}

// PodResources are pod-level cgroup limits (UpdatePodSandboxResources).
type PodResources struct {
	CPUPeriod   int64
	CPUQuota    int64
	CPUShares   int64
	MemoryLimit int64
	CpusetCPUs  string
	CpusetMems  string
	Hugepages   map[string]uint64 // page size ("2MB") -> limit in bytes
	Unified     map[string]string
}

// noHooks is used when nothing listens.
type noHooks struct{}

func (noHooks) RunPod(context.Context, hook.Pod) (func(), error) { return func() {}, nil }
func (noHooks) StopPod(context.Context, hook.Pod) error          { return nil }
func (noHooks) RemovePod(context.Context, hook.Pod) error        { return nil }
func (noHooks) UpdatePodResources(context.Context, hook.Pod, *hook.PodResources, *hook.PodResources) error {
	return nil
}

// UpdateResources passes the pod-level resources the kubelet has applied to
// the hooks; the pod must exist.
func (m *Manager) UpdateResources(ctx context.Context, id string, overhead, resources *PodResources) error {
	sb, err := m.store.get(id)
	if err != nil {
		return err
	}
	return m.opts.Hooks.UpdatePodResources(ctx, sb.Info().Hook(), overhead.hook(), resources.hook())
}

// hookRunPod is the RunPodSandbox step that tells the hooks; its undo tells
// them the pod is gone again.
func (c *creation) hookRunPod(ctx context.Context) error {
	release, err := c.m.opts.Hooks.RunPod(ctx, Info{Record: c.rec}.Hook())
	c.release = release
	return err
}

func (c *creation) unhookRunPod(ctx context.Context) error {
	info := Info{Record: c.rec}.Hook()
	if err := c.m.opts.Hooks.StopPod(ctx, info); err != nil {
		c.m.log.Warn("NRI StopPodSandbox of a failed pod", "pod", c.rec.ID, "err", err)
	}
	if err := c.m.opts.Hooks.RemovePod(ctx, info); err != nil {
		c.m.log.Warn("NRI RemovePodSandbox of a failed pod", "pod", c.rec.ID, "err", err)
	}
	return nil
}

// Hook is the pod as hooks see it.
func (i Info) Hook() hook.Pod {
	cfg := i.Config
	p := hook.Pod{
		ID: i.ID, Name: cfg.Metadata.Name, UID: cfg.Metadata.UID, Namespace: cfg.Metadata.Namespace,
		Labels: cfg.Labels, Annotations: cfg.Annotations, RuntimeHandler: cfg.RuntimeHandler,
		CgroupParent: cfg.CgroupParent, CgroupPath: i.CgroupPath,
		Overhead: cfg.Overhead.hook(), Resources: cfg.Resources.hook(),
		PausePID: i.Status.Pause.PID, IPs: i.Status.IPs,
	}
	if cfg.Namespaces.Network != ModeNode {
		p.NetNSPath = i.NetNSPath
	}
	return p
}

// hook is r as hooks see it (nil: none).
func (r *PodResources) hook() *hook.PodResources {
	if r == nil {
		return nil
	}
	h := hook.PodResources(*r)
	return &h
}

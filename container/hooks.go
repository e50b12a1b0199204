package container

import (
	"context"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// Hooks hear of each container's lifecycle (NRI plugins). A failing
// CreateContainer or StartContainer fails the request; the Post* calls,
// StopContainer and RemoveContainer are told, their errors logged.
type Hooks interface {
	// Active reports whether anyone listens: exits are then watched for
	// even without event subscribers, so that they are told promptly.
	Active() bool
	// CreateContainer may adjust spec before the container is created. The
	// returned release (never nil) must be called once the container is
	// published or its creation undone.
	CreateContainer(ctx context.Context, pod PodInfo, ctr Info, spec *specs.Spec) (release func(), err error)
	PostCreateContainer(ctx context.Context, ctr Info)
	StartContainer(ctx context.Context, ctr Info) error
	PostStartContainer(ctx context.Context, ctr Info)
	// UpdateContainer may change the resources about to be applied.
	UpdateContainer(ctx context.Context, ctr Info, res *specs.LinuxResources) (*specs.LinuxResources, error)
	PostUpdateContainer(ctx context.Context, ctr Info)
	// StopContainer is told once per container, when its exit is recorded
	// (stopped by a request or exited on its own).
	StopContainer(ctx context.Context, ctr Info)
	RemoveContainer(ctx context.Context, ctr Info)
}

type noHooks struct{}

func (noHooks) Active() bool { return false }
func (noHooks) CreateContainer(context.Context, PodInfo, Info, *specs.Spec) (func(), error) {
	return func() {}, nil
}
func (noHooks) PostCreateContainer(context.Context, Info)  {}
func (noHooks) StartContainer(context.Context, Info) error { return nil }
func (noHooks) PostStartContainer(context.Context, Info)   {}
func (noHooks) PostUpdateContainer(context.Context, Info)  {}
func (noHooks) StopContainer(context.Context, Info)        {}
func (noHooks) RemoveContainer(context.Context, Info)      {}
func (noHooks) UpdateContainer(_ context.Context, _ Info, r *specs.LinuxResources) (*specs.LinuxResources, error) {
	return r, nil
}

// hookCreate is the CreateContainer step that lets the hooks adjust the
// spec; its undo tells them the container is gone again.
func (c *creation) hookCreate(ctx context.Context) error {
	release, err := c.m.opts.Hooks.CreateContainer(ctx, c.pod, Info{Record: c.rec}, c.spec)
	c.release = release
	if err != nil {
		return err
	}
	// A plugin may have moved the container's cgroup.
	if c.spec.Linux != nil && c.spec.Linux.CgroupsPath != "" {
		c.rec.CgroupsPath = c.spec.Linux.CgroupsPath
	}
	return nil
}

func (c *creation) unhookCreate(ctx context.Context) error {
	info := Info{Record: c.rec}
	info.Status.State = StateExited
	c.m.opts.Hooks.StopContainer(ctx, info)
	c.m.opts.Hooks.RemoveContainer(ctx, info)
	return nil
}

// hookExited tells the hooks of a container's recorded exit.
func (m *Manager) hookExited(c *Container) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	m.opts.Hooks.StopContainer(ctx, m.infoOf(c))
}

// infoOf is c's view as last published, without looking for an exit.
func (m *Manager) infoOf(c *Container) Info {
	rec := c.rec
	rec.Status = c.Status()
	if rec.Status.Resources != nil {
		rec.Config.Resources = *rec.Status.Resources
	}
	return Info{Record: rec}
}

// hookTimeout bounds telling the hooks of an exit (each plugin has its own,
// shorter, request timeout).
const hookTimeout = 30 * time.Second

package container

import (
	"context"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// Hooks hear of each container's lifecycle (NRI plugins), each container
// handed over as a hook.Container (Info.Hook). A failing CreateContainer or
// StartContainer fails the request; the Post* calls, StopContainer and
// RemoveContainer are told, their errors logged.
type Hooks interface {
	// Active reports whether anyone listens: exits are then watched for
	// even without event subscribers, so that they are told promptly.
	Active() bool
	// CreateContainer may adjust spec before the container is created. The
	// returned release (never nil) must be called once the container is
	// published or its creation undone.
	CreateContainer(ctx context.Context, ctr hook.Container, spec *specs.Spec) (release func(), err error)
	PostCreateContainer(ctx context.Context, ctr hook.Container)
	StartContainer(ctx context.Context, ctr hook.Container) error
	PostStartContainer(ctx context.Context, ctr hook.Container)
	// UpdateContainer may change the resources about to be applied.
	UpdateContainer(ctx context.Context, ctr hook.Container, res *specs.LinuxResources) (*specs.LinuxResources, error)
	PostUpdateContainer(ctx context.Context, ctr hook.Container)
	// StopContainer is told once per container, when its exit is recorded
	// (stopped by a request or exited on its own).
	StopContainer(ctx context.Context, ctr hook.Container)
	RemoveContainer(ctx context.Context, ctr hook.Container)
}

type noHooks struct{}

func (noHooks) Active() bool { return false }
func (noHooks) CreateContainer(context.Context, hook.Container, *specs.Spec) (func(), error) {
	return func() {}, nil
}
func (noHooks) PostCreateContainer(context.Context, hook.Container)  {}
func (noHooks) StartContainer(context.Context, hook.Container) error { return nil }
func (noHooks) PostStartContainer(context.Context, hook.Container)   {}
func (noHooks) PostUpdateContainer(context.Context, hook.Container)  {}
func (noHooks) StopContainer(context.Context, hook.Container)        {}
func (noHooks) RemoveContainer(context.Context, hook.Container)      {}
func (noHooks) UpdateContainer(_ context.Context, _ hook.Container, r *specs.LinuxResources) (*specs.LinuxResources, error) {
	return r, nil
}

// hookCreate is the CreateContainer step that lets the hooks adjust the
// spec; its undo tells them the container is gone again.
func (c *creation) hookCreate(ctx context.Context) error {
	release, err := c.m.opts.Hooks.CreateContainer(ctx, Info{Record: c.rec}.Hook(), c.spec)
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
	c.m.opts.Hooks.StopContainer(ctx, info.Hook())
	c.m.opts.Hooks.RemoveContainer(ctx, info.Hook())
	return nil
}

// hookExited tells the hooks of a container's recorded exit.
func (m *Manager) hookExited(c *Container) {
	ctx, cancel := context.WithTimeout(context.Background(), hookTimeout)
	defer cancel()
	m.opts.Hooks.StopContainer(ctx, m.infoOf(c).Hook())
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

// Hook is the container as hooks see it.
func (i Info) Hook() hook.Container {
	cfg, st := i.Config, i.Status
	h := hook.Container{
		ID: i.ID, PodID: i.PodID, Name: cfg.Name, State: hookState(st.State),
		Labels: cfg.Labels, Annotations: cfg.Annotations,
		Args: append(append([]string(nil), cfg.Command...), cfg.Args...), Env: cfg.Env,
		CgroupsPath: i.CgroupsPath, PID: st.Init.PID, CreatedAt: i.CreatedAt,
		StartedAt: st.StartedAt, FinishedAt: st.FinishedAt,
		ExitCode: st.ExitCode, Reason: st.Reason, Message: st.Message,
		ImageName: i.ImageName, ImageRef: i.ImageRef, ImageID: i.ImageID,
		Seccomp: hookSeccomp(cfg.Security.Seccomp),
	}
	if u := i.User; u != nil {
		h.User = &hook.User{UID: u.UID, GID: u.GID, Groups: u.Groups}
	}
	return h
}

func hookState(s State) hook.ContainerState {
	switch s {
	case StateCreated:
		return hook.StateCreated
	case StateRunning:
		return hook.StateRunning
	case StateExited, StateRemoving:
		return hook.StateStopped
	default:
		return hook.StateUnknown
	}
}

func hookSeccomp(p Profile) hook.SeccompProfile {
	switch p.Type {
	case ProfileRuntimeDefault:
		return hook.SeccompProfile{Type: hook.SeccompRuntimeDefault}
	case ProfileLocalhost:
		return hook.SeccompProfile{Type: hook.SeccompLocalhost, Path: p.Path}
	case ProfileOCI:
		// NRI has no type for a profile pulled from a registry: it is
		// reported as its base, which its filter is at least as strict as
		// (it was reported as Unconfined).
		if p.Path != "" {
			return hook.SeccompProfile{Type: hook.SeccompLocalhost, Path: p.Path}
		}
		return hook.SeccompProfile{Type: hook.SeccompRuntimeDefault}
	default:
		return hook.SeccompProfile{Type: hook.SeccompUnconfined}
	}
}

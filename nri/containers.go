package nri

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// podOf is the container's pod as plugins see it; a pod already gone is
// named by its ID only.
func (n *NRI) podOf(podID string) *api.PodSandbox {
	pod, err := n.pods.Pod(podID)
	if err != nil {
		return &api.PodSandbox{Id: podID}
	}
	return podToNRI(pod)
}

// CreateContainer lets the plugins adjust the container's spec; a plugin's
// error fails CreateContainer, a validator's refusal of the adjustment with
// hook.ErrPermissionDenied. Updates and evictions of other containers
// they ask for are applied once the creation is done. Sync stays blocked
// until release.
func (n *NRI) CreateContainer(ctx context.Context, ctr hook.Container, spec *specs.Spec) (func(), error) {
	release := n.blockSync()
	if !n.Active() && !n.mustValidate(ctr.PodID) {
		return release, nil
	}
	resp, err := n.a.CreateContainer(ctx, &api.CreateContainerRequest{
		Pod: n.podOf(ctr.PodID), Container: containerToNRI(ctr, spec),
	})
	if err != nil && isRefusal(err) {
		return release, fmt.Errorf("%w: NRI %w", hook.ErrPermissionDenied, err)
	}
	if err != nil {
		return release, fmt.Errorf("nri CreateContainer: %w", err)
	}
	if err := adjustSpec(spec, resp.GetAdjust(), n.ctrs.InjectCDIDevices); err != nil {
		return release, err
	}
	if len(resp.GetUpdate()) > 0 || len(resp.GetEvict()) > 0 {
		return func() {
			release()
			go n.apply(context.WithoutCancel(ctx), resp.GetUpdate(), resp.GetEvict())
		}, nil
	}
	return release, nil
}

// PostCreateContainer tells the plugins the container was created.
func (n *NRI) PostCreateContainer(ctx context.Context, ctr hook.Container) {
	n.tell(ctx, "PostCreateContainer", ctr, func(p *api.PodSandbox, c *api.Container) error {
		return n.a.PostCreateContainer(ctx, &api.PostCreateContainerRequest{Pod: p, Container: c})
	})
}

// StartContainer tells the plugins the container is about to start; a
// plugin's error fails StartContainer.
func (n *NRI) StartContainer(ctx context.Context, ctr hook.Container) error {
	if !n.Active() {
		return nil
	}
	err := n.a.StartContainer(ctx, &api.StartContainerRequest{Pod: n.podOf(ctr.PodID), Container: containerToNRI(ctr, nil)})
	if err != nil {
		return fmt.Errorf("nri StartContainer: %w", err)
	}
	return nil
}

// PostStartContainer tells the plugins the container started.
func (n *NRI) PostStartContainer(ctx context.Context, ctr hook.Container) {
	n.tell(ctx, "PostStartContainer", ctr, func(p *api.PodSandbox, c *api.Container) error {
		return n.a.PostStartContainer(ctx, &api.PostStartContainerRequest{Pod: p, Container: c})
	})
}

// UpdateContainer lets the plugins change resources about to be applied
// (UpdateContainerResources).
func (n *NRI) UpdateContainer(ctx context.Context, ctr hook.Container, res *specs.LinuxResources) (*specs.LinuxResources, error) {
	if !n.Active() {
		return res, nil
	}
	resp, err := n.a.UpdateContainer(ctx, &api.UpdateContainerRequest{
		Pod: n.podOf(ctr.PodID), Container: containerToNRI(ctr, nil),
		LinuxResources: api.FromOCILinuxResources(res, nil),
	})
	if err != nil {
		return nil, fmt.Errorf("nri UpdateContainer: %w", err)
	}
	var others []*api.ContainerUpdate
	for _, u := range resp.GetUpdate() {
		if u.GetContainerId() != ctr.ID {
			others = append(others, u)
			continue
		}
		if err := n.checkUpdate(u); err != nil {
			return nil, err
		}
		if err := mergeResources(res, u.GetLinux().GetResources()); err != nil {
			return nil, err
		}
	}
	if len(others) > 0 || len(resp.GetEvict()) > 0 {
		go n.apply(context.WithoutCancel(ctx), others, resp.GetEvict())
	}
	return res, nil
}

// PostUpdateContainer tells the plugins the container's resources changed.
func (n *NRI) PostUpdateContainer(ctx context.Context, ctr hook.Container) {
	n.tell(ctx, "PostUpdateContainer", ctr, func(p *api.PodSandbox, c *api.Container) error {
		return n.a.PostUpdateContainer(ctx, &api.PostUpdateContainerRequest{Pod: p, Container: c})
	})
}

// StopContainer tells the plugins the container has exited; updates they
// ask for in return are applied in the background.
func (n *NRI) StopContainer(ctx context.Context, ctr hook.Container) {
	n.tell(ctx, "StopContainer", ctr, func(p *api.PodSandbox, c *api.Container) error {
		resp, err := n.a.StopContainer(ctx, &api.StopContainerRequest{Pod: p, Container: c})
		if len(resp.GetUpdate()) > 0 {
			go n.apply(context.WithoutCancel(ctx), resp.GetUpdate(), nil)
		}
		return err
	})
}

// RemoveContainer tells the plugins the container is gone.
func (n *NRI) RemoveContainer(ctx context.Context, ctr hook.Container) {
	n.tell(ctx, "RemoveContainer", ctr, func(p *api.PodSandbox, c *api.Container) error {
		return n.a.RemoveContainer(ctx, &api.RemoveContainerRequest{Pod: p, Container: c})
	})
}

// tell relays an event whose failure changes nothing but a log line.
func (n *NRI) tell(_ context.Context, event string, ctr hook.Container, call func(*api.PodSandbox, *api.Container) error) {
	if !n.Active() {
		return
	}
	if err := call(n.podOf(ctr.PodID), containerToNRI(ctr, nil)); err != nil {
		n.log.Warn("NRI "+event, "pod", ctr.PodID, "container", ctr.ID, "err", err)
	}
}

package daemon

import (
	"context"
	"errors"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// pods tells containers about their sandbox.
type pods struct{ m *sandbox.Manager }

func (p pods) Pod(id string) (container.PodInfo, error) {
	info, err := p.m.Get(id)
	if err != nil {
		return container.PodInfo{}, err
	}
	ns := info.Config.Namespaces
	return container.PodInfo{
		ID:             info.ID,
		NetNSPath:      info.NetNSPath,
		PausePID:       info.Status.Pause.PID,
		HostIPC:        ns.IPC == sandbox.ModeNode,
		HostPID:        ns.PID == sandbox.ModeNode,
		Privileged:     info.Config.Privileged,
		Hostname:       info.Config.Hostname,
		HostnameFile:   p.m.PodFile(info.ID, sandbox.HostnameFile),
		HostsFile:      p.m.PodFile(info.ID, sandbox.HostsFile),
		ResolvConfFile: p.m.PodFile(info.ID, sandbox.ResolvConfFile),
		ShmPath:        info.ShmPath,
		CgroupPath:     info.CgroupPath,
		OwnCgroup:      info.Config.CgroupParent != "",
		Sysctls:        info.Config.Sysctls,
		MonitorDir:     p.m.MonitorDir(info.ID),
		LogDirectory:   info.Config.LogDirectory,
		Ready:          info.Ready,
		UserNS:         podUserNS(ns),
		RuntimeHandler: info.Config.RuntimeHandler,
	}, nil
}

func podUserNS(ns sandbox.Namespaces) *container.IDMappings {
	if !ns.OwnUserNS() {
		return nil
	}
	return &container.IDMappings{UIDs: ns.UserNS.UIDs, GIDs: ns.UserNS.GIDs}
}

// podContainers lets sandboxes stop and remove their containers; it is
// bound to the container manager once that exists (the two need each other).
type podContainers struct{ m *container.Manager }

var errNotWired = errors.New("container manager not ready")

func (c *podContainers) StopPod(ctx context.Context, podID string) error {
	if c.m == nil {
		return errNotWired
	}
	return c.m.StopPod(ctx, podID)
}

func (c *podContainers) RemovePod(ctx context.Context, podID string) error {
	if c.m == nil {
		return errNotWired
	}
	return c.m.RemovePod(ctx, podID)
}

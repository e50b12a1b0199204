package nri

import (
	"context"
	"errors"
	"fmt"

	"github.com/containerd/nri/pkg/adaptation"
	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// synchronize hands a plugin that just registered every published pod and
// container. It runs with new pods and containers held off (blockSync), so
// each one is either in this set or told to the plugin by its events once
// it is registered.
func (n *NRI) synchronize(ctx context.Context, cb adaptation.SyncCB) error {
	var pods []*api.PodSandbox
	for _, p := range n.pods.Pods() {
		pods = append(pods, podToNRI(p))
	}
	var ctrs []*api.Container
	for _, c := range n.ctrs.Containers() {
		ctrs = append(ctrs, containerToNRI(c, nil))
	}
	updates, err := cb(ctx, pods, ctrs)
	if err != nil {
		return err
	}
	n.log.Info("NRI plugin synchronized", "pods", len(pods), "containers", len(ctrs), "updates", len(updates))
	n.apply(ctx, updates, nil)
	return nil
}

// updateContainers applies a plugin's unsolicited updates; it returns the
// ones that failed.
func (n *NRI) updateContainers(ctx context.Context, updates []*api.ContainerUpdate) ([]*api.ContainerUpdate, error) {
	var failed []*api.ContainerUpdate
	var errs []error
	for _, u := range updates {
		if err := n.update(ctx, u); err != nil {
			failed = append(failed, u)
			if !u.GetIgnoreFailure() {
				errs = append(errs, err)
			}
		}
	}
	return failed, errors.Join(errs...)
}

// apply carries out updates and evictions plugins asked for in reply to
// an event; failures are logged.
func (n *NRI) apply(ctx context.Context, updates []*api.ContainerUpdate, evicts []*api.ContainerEviction) {
	for _, u := range updates {
		if err := n.update(ctx, u); err != nil && !u.GetIgnoreFailure() {
			n.log.Warn("NRI container update failed", "container", u.GetContainerId(), "err", err)
		}
	}
	for _, e := range evicts {
		n.log.Info("NRI plugin evicts container", "container", e.GetContainerId(), "reason", e.GetReason())
		if err := n.ctrs.Stop(ctx, e.GetContainerId(), 0); err != nil {
			n.log.Warn("NRI eviction failed", "container", e.GetContainerId(), "err", err)
		}
	}
}

func (n *NRI) update(ctx context.Context, u *api.ContainerUpdate) error {
	res := u.GetLinux().GetResources()
	if res == nil {
		return nil
	}
	if err := n.checkUpdate(u); err != nil {
		return err
	}
	err := n.ctrs.AdjustResources(ctx, u.GetContainerId(), func(cur *specs.LinuxResources) error {
		return mergeResources(cur, res)
	})
	if err != nil {
		return fmt.Errorf("update container %s: %w", u.GetContainerId(), err)
	}
	return nil
}

// checkUpdate refuses an update that allows devices when the validator
// refuses device adjustments (NRI validates creations only).
func (n *NRI) checkUpdate(u *api.ContainerUpdate) error {
	if !n.rejectDevices {
		return nil
	}
	if err := allowRule(u.GetLinux().GetResources()); err != nil {
		return fmt.Errorf("%w: NRI update of container %s: device cgroup rule refused (%w), nri.default_validator.reject_device_adjustment is set",
			hook.ErrPermissionDenied, u.GetContainerId(), err)
	}
	return nil
}

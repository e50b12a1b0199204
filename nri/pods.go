package nri

import (
	"context"
	"fmt"

	"github.com/containerd/nri/pkg/api"

	"github.com/minicri/minicri/hook"
)

// RunPod tells the plugins of a pod about to be published; a plugin's
// error fails RunPodSandbox. Sync stays blocked until release.
func (n *NRI) RunPod(ctx context.Context, pod hook.Pod) (func(), error) {
	release := n.blockSync()
	if !n.Active() {
		return release, nil
	}
	if err := n.a.RunPodSandbox(ctx, &api.RunPodSandboxRequest{Pod: podToNRI(pod)}); err != nil {
		return release, fmt.Errorf("nri RunPodSandbox: %w", err)
	}
	return release, nil
}

// StopPod tells the plugins the pod stopped (its containers have).
func (n *NRI) StopPod(ctx context.Context, pod hook.Pod) error {
	if !n.Active() {
		return nil
	}
	return n.a.StopPodSandbox(ctx, &api.StopPodSandboxRequest{Pod: podToNRI(pod)})
}

// RemovePod tells the plugins the pod is gone.
func (n *NRI) RemovePod(ctx context.Context, pod hook.Pod) error {
	if !n.Active() {
		return nil
	}
	return n.a.RemovePodSandbox(ctx, &api.RemovePodSandboxRequest{Pod: podToNRI(pod)})
}

// UpdatePodResources passes the pod-level resources the kubelet set on.
func (n *NRI) UpdatePodResources(ctx context.Context, pod hook.Pod, overhead, resources *hook.PodResources) error {
	if !n.Active() {
		return nil
	}
	p := podToNRI(pod)
	p.Linux.PodOverhead, p.Linux.PodResources = podResourcesToNRI(overhead), podResourcesToNRI(resources)
	req := &api.UpdatePodSandboxRequest{
		Pod: p, OverheadLinuxResources: p.Linux.PodOverhead, LinuxResources: p.Linux.PodResources,
	}
	if _, err := n.a.UpdatePodSandbox(ctx, req); err != nil {
		return fmt.Errorf("nri UpdatePodSandbox: %w", err)
	}
	if err := n.a.PostUpdatePodSandbox(ctx, &api.PostUpdatePodSandboxRequest{Pod: p}); err != nil {
		n.log.Warn("NRI PostUpdatePodSandbox", "pod", pod.ID, "err", err)
	}
	return nil
}

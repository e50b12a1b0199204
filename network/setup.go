package network

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// cleanupTimeout bounds the DEL run after a failed ADD.
const cleanupTimeout = 2 * time.Minute

// Setup networks pod: it brings `lo` up in the pod's netns and runs CNI
// ADD with the current network (first config in ConfDir, else the built-in
// network). If ADD fails, DEL runs before Setup returns, so nothing leaks.
// Calling Setup again for a pod that is already set up in the same netns
// returns the cached result.
func (m *Manager) Setup(ctx context.Context, pod Pod) (Result, error) {
	if pod.ID == "" || pod.NetNSPath == "" {
		return Result{}, fmt.Errorf("setup network: pod ID and netns path are required: %w", ErrInvalidPod)
	}
	unlock, err := m.locks.lock(ctx, pod.ID)
	if err != nil {
		return Result{}, err
	}
	defer unlock()
	log := logger().With("pod", pod.ID, "name", pod.Namespace+"/"+pod.Name)
	start := time.Now()

	list, isDefault, err := m.readyList()
	if err != nil {
		return Result{}, fmt.Errorf("setup network for pod %s: %w", pod.ID, err)
	}
	if isDefault {
		if err := m.ensureMasquerade(); err != nil {
			return Result{}, fmt.Errorf("setup network for pod %s: %w", pod.ID, err)
		}
	}
	if !isNetNSPath(pod.NetNSPath) {
		return Result{}, fmt.Errorf("setup network for pod %s: %s is not a network namespace: %w", pod.ID, pod.NetNSPath, ErrInvalidPod)
	}
	if err := bringUpLoopback(pod.NetNSPath); err != nil {
		return Result{}, fmt.Errorf("setup network for pod %s: %w", pod.ID, err)
	}

	if res, ok, err := m.reuseOrClearCached(ctx, pod, list.Name); err != nil {
		return Result{}, fmt.Errorf("setup network for pod %s: %w", pod.ID, err)
	} else if ok {
		log.Info("pod network already set up; reusing cached result", "network", res.Network, "ips", res.IPs)
		return res, nil
	}

	rt := runtimeConf(pod, pod.NetNSPath)
	list = m.forPod(list, isDefault, rt)
	cniRes, err := m.cni.AddNetworkList(ctx, list, rt)
	var ips []string
	if err == nil {
		ips, err = resultIPs(cniRes, ifName)
	}
	if err != nil {
		addErr := fmt.Errorf("setup network for pod %s: CNI ADD on network %q: %w", pod.ID, list.Name, err)
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
		defer cancel()
		if delErr := m.cni.DelNetworkList(cctx, list, rt); delErr != nil {
			log.Error("CNI DEL after failed ADD failed; resources may leak", "network", list.Name, "error", delErr)
			return Result{}, errors.Join(addErr, fmt.Errorf("cleanup CNI DEL: %w", delErr))
		}
		return Result{}, addErr
	}
	log.Info("pod network set up", "network", list.Name, "ips", ips, "duration", time.Since(start))
	return Result{IPs: ips, Network: list.Name}, nil
}

// reuseOrClearCached looks at libcni's cache for pod. An attachment to
// network in the same, live netns is returned for reuse; any other
// attachment is stale and torn down first.
func (m *Manager) reuseOrClearCached(ctx context.Context, pod Pod, network string) (Result, bool, error) {
	atts, err := m.cni.GetCachedAttachments(pod.ID)
	if err != nil {
		return Result{}, false, fmt.Errorf("read CNI cache: %w", err)
	}
	var errs []error
	for _, att := range atts {
		list, err := libcni.NetworkConfFromBytes(att.Config)
		if err != nil || len(list.Plugins) == 0 {
			errs = append(errs, fmt.Errorf("cached config of network %q: unusable: %v", att.Network, err))
			continue
		}
		rt := cachedRuntimeConf(att, pod.NetNSPath)
		if att.Network == network && att.IfName == ifName && att.NetNS == pod.NetNSPath {
			res, err := m.cni.GetNetworkListCachedResult(list, rt)
			if err == nil && res != nil {
				if ips, err := resultIPs(res, ifName); err == nil {
					return Result{IPs: ips, Network: network}, true, nil
				}
			}
		}
		logger().Info("tearing down stale CNI attachment before ADD", "pod", pod.ID, "network", att.Network, "netns", att.NetNS)
		if !isNetNSPath(rt.NetNS) {
			rt.NetNS = ""
		}
		if err := m.cni.DelNetworkList(ctx, list, rt); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL of stale attachment to %q: %w", att.Network, err))
		}
	}
	return Result{}, false, errors.Join(errs...)
}

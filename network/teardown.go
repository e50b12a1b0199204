package network

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/containernetworking/cni/libcni"
)

// Teardown runs CNI DEL for pod with the network config and arguments that
// ADD used (from libcni's cache; the current config if nothing is cached).
// It works when the netns is already gone, and is idempotent: an unknown
// pod is not an error.
func (m *Manager) Teardown(ctx context.Context, pod Pod) error {
	if pod.ID == "" {
		return fmt.Errorf("teardown network: pod ID is required: %w", ErrInvalidPod)
	}
	unlock, err := m.locks.lock(ctx, pod.ID)
	if err != nil {
		return err
	}
	defer unlock()
	log := logger().With("pod", pod.ID, "name", pod.Namespace+"/"+pod.Name)
	start := time.Now()

	netnsPath := pod.NetNSPath
	if !isNetNSPath(netnsPath) {
		netnsPath = "" // gone: plugins skip in-netns work, the kernel frees it
	}

	atts, err := m.cni.GetCachedAttachments(pod.ID)
	if err != nil {
		return fmt.Errorf("teardown network for pod %s: read CNI cache: %w", pod.ID, err)
	}
	var errs []error
	done := 0
	for _, att := range atts {
		list, err := libcni.NetworkConfFromBytes(att.Config)
		if err != nil || len(list.Plugins) == 0 {
			log.Warn("cached CNI config unusable; using the current config", "network", att.Network, "error", err)
			continue
		}
		if err := m.cni.DelNetworkList(ctx, list, cachedRuntimeConf(att, netnsPath)); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL on network %q: %w", att.Network, err))
			continue
		}
		done++
	}
	if len(errs) == 0 && done == 0 {
		// Nothing cached: ADD never finished (or never ran). DEL with the
		// current config anyway, since a failed or interrupted ADD can
		// leave allocations behind.
		list, _, err := m.currentList()
		if err != nil {
			return fmt.Errorf("teardown network for pod %s: %w", pod.ID, err)
		}
		if list == nil {
			log.Debug("no network config; nothing to tear down")
			return nil
		}
		if err := m.cni.DelNetworkList(ctx, list, runtimeConf(pod, netnsPath)); err != nil {
			errs = append(errs, fmt.Errorf("CNI DEL on network %q: %w", list.Name, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("teardown network for pod %s: %w", pod.ID, err)
	}
	log.Info("pod network torn down", "netns", netnsPath != "", "duration", time.Since(start))
	return nil
}

// NetNSNeededForTeardown reports whether Teardown of pod podID needs the
// pod's netns to still exist. It is false when every cached attachment of
// the pod is to the built-in network (no per-pod ipMasq rules): the caller
// may then remove the netns pin first, which makes DEL about twice as fast
// because the kernel deletes the veth asynchronously. When in doubt
// (admin configs, no cache entry, unreadable cache) it returns true.
func (m *Manager) NetNSNeededForTeardown(podID string) bool {
	if !m.cfg.DefaultNetwork || podID == "" {
		return true
	}
	atts, err := m.cni.GetCachedAttachments(podID)
	if err != nil || len(atts) == 0 {
		return true
	}
	for _, att := range atts {
		if att.Network != m.cfg.DefaultName {
			return true
		}
	}
	return false
}

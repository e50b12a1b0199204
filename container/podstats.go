package container

import (
	"time"

	"github.com/minicri/minicri/network"
	"github.com/minicri/minicri/stats"
)

// PodStats is a pod's usage: its pause and containers summed, its network
// interfaces, and each container's own stats.
type PodStats struct {
	PodID      string
	Usage      Usage
	Interfaces []network.InterfaceStats
	Containers []Stats
}

// PodStats reads the usage of a pod.
func (m *Manager) PodStats(podID string) (PodStats, error) {
	pod, err := m.opts.Pods.Pod(podID)
	if err != nil {
		return PodStats{}, err
	}
	ps := PodStats{PodID: pod.ID, Containers: m.ListStats(Filter{PodID: pod.ID})}
	if pause, err := m.cgroupUsage(pod.CgroupPath, podRateKey(pod.ID)); err == nil {
		ps.Usage = pause
	}
	ps.Usage.Timestamp = time.Now()
	// The pause's limit and pressure are not the pod's: those are its own
	// cgroup's, the parent of the pause's and the containers'.
	ps.Usage.MemoryLimit, ps.Usage.CPUPressure, ps.Usage.MemoryPressure, ps.Usage.IOPressure = 0, nil, nil, nil
	if pod.OwnCgroup {
		stats.PodCgroupView(pod.CgroupPath, &ps.Usage)
	}
	for _, c := range ps.Containers {
		ps.Usage.Add(c.Usage)
	}
	if pod.NetNSPath != "" && pod.Ready {
		ps.Interfaces, _ = network.PodInterfaceStats(pod.PausePID)
	}
	return ps, nil
}

// podRateKey keys a pod's CPU samples in the rates (RemovePod forgets it).
func podRateKey(podID string) string { return "pod:" + podID }

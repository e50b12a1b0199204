package container

import (
	"time"

	"github.com/minicri/minicri/network"
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
	for _, c := range ps.Containers {
		u := &ps.Usage
		u.CPUNanos += c.CPUNanos
		u.NanoCores += c.NanoCores
		u.MemoryUsage += c.MemoryUsage
		u.MemoryWorkingSet += c.MemoryWorkingSet
		u.MemoryRSS += c.MemoryRSS
		u.PageFaults += c.PageFaults
		u.MajorPageFaults += c.MajorPageFaults
		u.Processes += c.Processes
	}
	if pod.NetNSPath != "" && pod.Ready {
		ps.Interfaces, _ = network.PodInterfaceStats(pod.PausePID)
	}
	return ps, nil
}

// podRateKey keys a pod's CPU samples in the rates (RemovePod forgets it).
func podRateKey(podID string) string { return "pod:" + podID }

package container

import (
	"path"
	"time"

	"github.com/minicri/minicri/cgdriver"
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
	// The pause's limit and pressure are not the pod's: those are its own
	// cgroup's, the parent of the pause's and the containers'.
	ps.Usage.MemoryLimit, ps.Usage.CPUPressure, ps.Usage.MemoryPressure, ps.Usage.IOPressure = 0, nil, nil, nil
	if pod.OwnCgroup {
		podCgroupView(pod.CgroupPath, &ps.Usage)
	}
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

// podCgroupView reads the pod's own cgroup (the kubelet's pod<UID>, the
// parent of the pause's): its memory limit and pressure, which the sums of
// its members cannot give. It only reads.
func podCgroupView(pausePath string, u *Usage) {
	mgr, err := cgdriver.Manager(path.Dir(cgdriver.FSPath(pausePath)))
	if err != nil {
		return
	}
	st, err := mgr.GetStats()
	if err != nil {
		return
	}
	u.MemoryLimit = memoryLimit(st.MemoryStats.Usage.Limit)
	u.CPUPressure = psiOf(st.CpuStats.PSI)
	u.MemoryPressure = psiOf(st.MemoryStats.PSI)
	u.IOPressure = psiOf(st.BlkioStats.PSI)
}

// podRateKey keys a pod's CPU samples in the rates (RemovePod forgets it).
func podRateKey(podID string) string { return "pod:" + podID }

package stats

import (
	"fmt"
	"path"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/minicri/minicri/cgdriver"
)

// Usage is resource usage read from a cgroup.
type Usage struct {
	Timestamp        time.Time
	CPUNanos         uint64 // cumulative CPU time
	NanoCores        uint64 // CPU rate since the previous sample
	MemoryUsage      uint64
	MemoryWorkingSet uint64 // usage minus inactive file pages
	MemoryRSS        uint64
	PageFaults       uint64
	MajorPageFaults  uint64
	Processes        uint64
	MemoryLimit      uint64 // 0: none
	SwapUsage        uint64
	SwapLimit        uint64 // 0: none
	// Pressure stall information (cgroup v2 with PSI); nil where the
	// kernel has none.
	CPUPressure, MemoryPressure, IOPressure *PSI
}

// PSI is pressure stall information of one resource.
type PSI struct{ Some, Full PSIData }

// PSIData is one line of a pressure file: averages in percent, total in
// microseconds.
type PSIData struct {
	Avg10, Avg60, Avg300 float64
	Total                uint64
}

// Cgroup reads the usage of any cgroup path in cgdriver's notation (a
// pod's pause, say).
func Cgroup(path string) (Usage, error) {
	mgr, err := cgdriver.Manager(path)
	if err != nil {
		return Usage{}, err
	}
	st, err := mgr.GetStats()
	if err != nil {
		return Usage{}, fmt.Errorf("cgroup stats of %s: %w", path, err)
	}
	return UsageOf(st), nil
}

// UsageOf is the usage in a cgroup's stats, read now.
func UsageOf(st *cgroups.Stats) Usage {
	u := Usage{
		Timestamp:   time.Now(),
		CPUNanos:    st.CpuStats.CpuUsage.TotalUsage,
		MemoryUsage: st.MemoryStats.Usage.Usage,
		Processes:   st.PidsStats.Current,
	}
	m := memoryOf(&st.MemoryStats)
	u.MemoryWorkingSet, u.MemoryRSS = m.workingSet, m.rss
	u.PageFaults, u.MajorPageFaults = m.pgfault, m.pgmajfault
	u.SwapUsage, u.SwapLimit = m.swap, m.swapLimit
	u.MemoryLimit = memoryLimit(st.MemoryStats.Usage.Limit)
	u.CPUPressure = psiOf(st.CpuStats.PSI)
	u.MemoryPressure = psiOf(st.MemoryStats.PSI)
	u.IOPressure = psiOf(st.BlkioStats.PSI)
	return u
}

// Add adds a member's counters (a container's, to its pod's): CPU, memory,
// page faults and processes; not its limits, swap or pressure.
func (u *Usage) Add(c Usage) {
	u.CPUNanos += c.CPUNanos
	u.NanoCores += c.NanoCores
	u.MemoryUsage += c.MemoryUsage
	u.MemoryWorkingSet += c.MemoryWorkingSet
	u.MemoryRSS += c.MemoryRSS
	u.PageFaults += c.PageFaults
	u.MajorPageFaults += c.MajorPageFaults
	u.Processes += c.Processes
}

// PodCgroupView reads the pod's own cgroup (the kubelet's pod<UID>, the
// parent of the pause's at pausePath): its memory limit and pressure, which
// the sums of its members cannot give. It only reads.
func PodCgroupView(pausePath string, u *Usage) {
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

// MemoryAvailable is the limit minus the working set, as cAdvisor and the
// CRI define it; ok is false without a limit.
func (u Usage) MemoryAvailable() (avail uint64, ok bool) {
	if u.MemoryLimit == 0 {
		return 0, false
	}
	if u.MemoryWorkingSet >= u.MemoryLimit {
		return 0, true
	}
	return u.MemoryLimit - u.MemoryWorkingSet, true
}

func psiOf(p *cgroups.PSIStats) *PSI {
	if p == nil {
		return nil
	}
	d := func(x cgroups.PSIData) PSIData {
		return PSIData{Avg10: x.Avg10, Avg60: x.Avg60, Avg300: x.Avg300, Total: x.Total}
	}
	return &PSI{Some: d(p.Some), Full: d(p.Full)}
}

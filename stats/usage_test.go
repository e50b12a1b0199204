package stats

import (
	"testing"

	"github.com/opencontainers/cgroups"
)

// The kubelet ranks evictions and kubectl top shows the working set: page
// cache that can be dropped (inactive_file) is not part of it, on either
// cgroup version; RSS is anonymous memory.
func TestUsageMeaningPerCgroupVersion(t *testing.T) {
	const mib = 1 << 20
	v2 := &cgroups.Stats{MemoryStats: cgroups.MemoryStats{
		Usage:        cgroups.MemoryData{Usage: 300 * mib},
		UseHierarchy: true,
		Stats: map[string]uint64{"anon": 40 * mib, "file": 250 * mib, "inactive_file": 240 * mib,
			"active_file": 10 * mib, "pgfault": 1234, "pgmajfault": 5},
		SwapOnlyUsage: cgroups.MemoryData{Usage: 3 * mib, Limit: 64 * mib},
	}}
	u := UsageOf(v2)
	if u.MemoryWorkingSet != 60*mib || u.MemoryRSS != 40*mib || u.PageFaults != 1234 || u.MajorPageFaults != 5 {
		t.Errorf("v2: working set %d MiB, rss %d MiB, faults %d/%d", u.MemoryWorkingSet/mib, u.MemoryRSS/mib, u.PageFaults, u.MajorPageFaults)
	}
	if u.SwapUsage != 3*mib || u.SwapLimit != 64*mib {
		t.Errorf("v2 swap %d limit %d", u.SwapUsage, u.SwapLimit)
	}
	v1 := &cgroups.Stats{MemoryStats: cgroups.MemoryStats{
		Usage:        cgroups.MemoryData{Usage: 300 * mib, Limit: 512 * mib},
		SwapUsage:    cgroups.MemoryData{Usage: 300 * mib, Limit: 512 * mib},
		UseHierarchy: true,
		Stats: map[string]uint64{"rss": 1, "total_rss": 40 * mib, "total_cache": 250 * mib,
			"inactive_file": 1, "total_inactive_file": 240 * mib, "pgfault": 1, "total_pgfault": 1234, "total_pgmajfault": 5},
	}}
	u = UsageOf(v1)
	if u.MemoryWorkingSet != 60*mib || u.MemoryRSS != 40*mib || u.PageFaults != 1234 || u.MajorPageFaults != 5 || u.SwapLimit != 0 {
		t.Errorf("v1: working set %d MiB, rss %d MiB, faults %d/%d, swap limit %d", u.MemoryWorkingSet/mib, u.MemoryRSS/mib, u.PageFaults, u.MajorPageFaults, u.SwapLimit)
	}
}

package stats

import (
	"math"

	"github.com/opencontainers/cgroups"
)

// memory is what the kubelet's figures mean, from either cgroup version.
type memory struct {
	workingSet, rss      uint64 // usage - inactive file; anonymous memory
	pgfault, pgmajfault  uint64 // of the cgroup and its children
	swap, swapLimit      uint64 // swap alone; 0 limit: none
	cache, mappedFile    uint64
	ownPgfault, ownPgmaj uint64 // of the cgroup alone (v1), or as v2 counts them
}

// memoryOf reads memory.stat with its version's keys: cgroup v2 names
// anon, file, inactive_file and pgfault (recursive already); v1 names rss,
// cache and the total_* sums of a hierarchy.
func memoryOf(mem *cgroups.MemoryStats) memory {
	s := mem.Stats
	var m memory
	var inactive uint64
	if _, v2 := s["anon"]; v2 {
		inactive, m.rss, m.cache, m.mappedFile = s["inactive_file"], s["anon"], s["file"], s["file_mapped"]
		m.pgfault, m.pgmajfault = s["pgfault"], s["pgmajfault"]
		m.ownPgfault, m.ownPgmaj = m.pgfault, m.pgmajfault
		m.swap = mem.SwapOnlyUsage.Usage
		if l := mem.SwapOnlyUsage.Limit; l != 0 && l < math.MaxInt64 {
			m.swapLimit = l
		}
	} else {
		inactive = firstOf(s, "total_inactive_file", "inactive_file")
		m.rss = firstOf(s, "total_rss", "rss")
		m.cache = firstOf(s, "total_cache", "cache")
		m.mappedFile = firstOf(s, "total_mapped_file", "mapped_file")
		m.pgfault = firstOf(s, "total_pgfault", "pgfault")
		m.pgmajfault = firstOf(s, "total_pgmajfault", "pgmajfault")
		m.ownPgfault, m.ownPgmaj = s["pgfault"], s["pgmajfault"]
		m.swap = firstOf(s, "total_swap", "swap")
		// memsw counts memory and swap together.
		if l, ml := mem.SwapUsage.Limit, mem.Usage.Limit; l != 0 && l < math.MaxInt64 && l >= ml {
			m.swapLimit = l - ml
		}
	}
	if mem.Usage.Usage > inactive {
		m.workingSet = mem.Usage.Usage - inactive
	}
	return m
}

// firstOf is the first of the keys that m has.
func firstOf(m map[string]uint64, keys ...string) uint64 {
	for _, k := range keys {
		if v, ok := m[k]; ok {
			return v
		}
	}
	return 0
}

// unlimitedMemory is where a limit means none, as the kubelet and cAdvisor
// read it (v1 reports PAGE_COUNTER_MAX pages, v2 "max").
const unlimitedMemory = 1 << 62

// memoryLimit is the cgroup's memory limit, 0 for none.
func memoryLimit(l uint64) uint64 {
	if l == 0 || l > unlimitedMemory {
		return 0
	}
	return l
}

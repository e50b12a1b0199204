package container

import (
	"fmt"
	"io/fs"
	"math"
	"path/filepath"
	"sync"
	"syscall"
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

// Stats are a container's usage and its writable layer.
type Stats struct {
	Info
	Usage
	WritableBytes, WritableInodes uint64
	Mountpoint                    string
}

// rates remembers the last CPU sample of each cgroup to compute NanoCores.
type rates struct {
	mu   sync.Mutex
	last map[string]Usage
}

func (r *rates) rate(key string, u *Usage) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if prev, ok := r.last[key]; ok && u.Timestamp.After(prev.Timestamp) && u.CPUNanos >= prev.CPUNanos {
		u.NanoCores = uint64(float64(u.CPUNanos-prev.CPUNanos) / u.Timestamp.Sub(prev.Timestamp).Seconds())
	}
	r.last[key] = *u
}

func (r *rates) forget(key string) {
	r.mu.Lock()
	delete(r.last, key)
	r.mu.Unlock()
}

// Stats reads one container's usage.
func (m *Manager) Stats(id string) (Stats, error) {
	c, err := m.store.get(id)
	if err != nil {
		return Stats{}, err
	}
	return m.stats(c)
}

// ListStats reads the usage of the containers that match f.
func (m *Manager) ListStats(f Filter) []Stats {
	var out []Stats
	for _, info := range m.List(f) {
		c, err := m.store.get(info.ID)
		if err != nil {
			continue
		}
		if s, err := m.stats(c); err == nil {
			out = append(out, s)
		}
	}
	return out
}

func (m *Manager) stats(c *Container) (Stats, error) {
	s := Stats{Info: m.info(c)}
	if h, err := m.loadOf(c); err == nil {
		if st, err := h.Stats(); err == nil {
			s.Usage = usageOf(st)
		}
	}
	if s.Timestamp.IsZero() {
		s.Timestamp = time.Now()
	}
	m.rates.rate(c.ID(), &s.Usage)
	d := m.writableUsage(c.ID(), s.Timestamp)
	s.WritableBytes, s.WritableInodes = d.bytes, d.inodes
	if mi, err := lookupMount(m.upperDir(c.ID())); err == nil {
		s.Mountpoint = mi.Mountpoint
	}
	return s, nil
}

// cgroupUsage reads the usage of any cgroup path (the pod's, say); its CPU
// rate is computed against the last sample kept under key, which the caller
// must forget when the cgroup goes.
func (m *Manager) cgroupUsage(path, key string) (Usage, error) {
	mgr, err := cgdriver.Manager(path)
	if err != nil {
		return Usage{}, err
	}
	st, err := mgr.GetStats()
	if err != nil {
		return Usage{}, fmt.Errorf("cgroup stats of %s: %w", path, err)
	}
	u := usageOf(st)
	m.rates.rate(key, &u)
	return u, nil
}

func usageOf(st *cgroups.Stats) Usage {
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

// diskUsage counts the allocated bytes and inodes under dir.
func diskUsage(dir string) (bytes, inodes uint64) {
	// The walk never fails: an entry it cannot read is skipped.
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				bytes += uint64(st.Blocks) * 512 //nolint:gosec // st_blocks is never negative
			}
			inodes++
		}
		return nil
	})
	return bytes, inodes
}

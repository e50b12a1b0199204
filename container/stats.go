package container

import (
	"fmt"
	"io/fs"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	cgmanager "github.com/opencontainers/cgroups/manager"
	"github.com/opencontainers/runc/libcontainer"
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
	if lc, err := libcontainer.Load(m.runcRoot(), c.ID()); err == nil {
		if st, err := lc.Stats(); err == nil && st.CgroupStats != nil {
			s.Usage = usageOf(st.CgroupStats)
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
	mgr, err := cgmanager.New(&cgroups.Cgroup{Path: path, Resources: &cgroups.Resources{SkipDevices: true}})
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
	mem := st.MemoryStats
	u := Usage{
		Timestamp:   time.Now(),
		CPUNanos:    st.CpuStats.CpuUsage.TotalUsage,
		MemoryUsage: mem.Usage.Usage,
		Processes:   st.PidsStats.Current,
	}
	inactive := mem.Stats["total_inactive_file"]
	if v, ok := mem.Stats["inactive_file"]; ok && !mem.UseHierarchy {
		inactive = v
	}
	if u.MemoryUsage > inactive {
		u.MemoryWorkingSet = u.MemoryUsage - inactive
	}
	u.MemoryRSS = mem.Stats["total_rss"]
	if u.MemoryRSS == 0 {
		u.MemoryRSS = mem.Stats["rss"]
	}
	u.PageFaults = mem.Stats["total_pgfault"]
	u.MajorPageFaults = mem.Stats["total_pgmajfault"]
	return u
}

// diskUsage counts the allocated bytes and inodes under dir.
func diskUsage(dir string) (bytes, inodes uint64) {
	filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if fi, err := d.Info(); err == nil {
			if st, ok := fi.Sys().(*syscall.Stat_t); ok {
				bytes += uint64(st.Blocks) * 512
			}
			inodes++
		}
		return nil
	})
	return bytes, inodes
}

package container

import (
	"time"

	"github.com/minicri/minicri/stats"
)

// Usage is resource usage read from a cgroup (see stats.Usage).
type Usage = stats.Usage

// PSI is pressure stall information of one resource.
type PSI = stats.PSI

// PSIData is one line of a pressure file.
type PSIData = stats.PSIData

// Stats are a container's usage and its writable layer.
type Stats struct {
	Info
	Usage
	WritableBytes, WritableInodes uint64
	Mountpoint                    string
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
			s.Usage = stats.UsageOf(st)
		}
	}
	if s.Timestamp.IsZero() {
		s.Timestamp = time.Now()
	}
	m.rates.Rate(c.ID(), &s.Usage)
	d := m.writableUsage(c.ID(), s.Timestamp)
	s.WritableBytes, s.WritableInodes = d.Bytes, d.Inodes
	if mi, err := lookupMount(m.upperDir(c.ID())); err == nil {
		s.Mountpoint = mi.Mountpoint
	}
	return s, nil
}

// cgroupUsage reads the usage of any cgroup path (the pod's, say); its CPU
// rate is computed against the last sample kept under key, which the caller
// must forget when the cgroup goes.
func (m *Manager) cgroupUsage(path, key string) (Usage, error) {
	u, err := stats.Cgroup(path)
	if err != nil {
		return Usage{}, err
	}
	m.rates.Rate(key, &u)
	return u, nil
}

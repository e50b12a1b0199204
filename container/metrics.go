package container

import (
	"path"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/network"
	"github.com/minicri/minicri/stats"
)

// Sample is everything the CRI metrics report about one container: its
// info and its resources (see stats.Sample).
type Sample struct {
	Info
	stats.Sample
}

// BlkioDevice is the block I/O of a container on one device.
type BlkioDevice = stats.BlkioDevice

// FSUsage is the container's writable layer and its filesystem.
type FSUsage = stats.FSUsage

// PodSample is a pod's network counters and its containers' samples.
type PodSample struct {
	PodID string
	// CgroupPath is the pod's cgroup ("/<parent>/<pod id>").
	CgroupPath string
	Timestamp  time.Time
	Interfaces []network.InterfaceStats
	Containers []Sample
}

// PodMetrics samples a pod: its network namespace's interfaces and each
// of its running or created containers.
func (m *Manager) PodMetrics(podID string) (PodSample, error) {
	pod, err := m.opts.Pods.Pod(podID)
	if err != nil {
		return PodSample{}, err
	}
	ps := PodSample{PodID: pod.ID, CgroupPath: cgdriver.FSPath(pod.CgroupPath), Timestamp: time.Now()}
	if pod.NetNSPath != "" && pod.Ready {
		ps.Interfaces, _ = network.PodInterfaceStats(pod.PausePID)
	}
	for _, c := range m.store.all(pod.ID) {
		info := m.info(c)
		if info.Status.State != StateRunning && info.Status.State != StateCreated {
			continue
		}
		ps.Containers = append(ps.Containers, m.sample(c, info))
	}
	return ps, nil
}

// sample returns the container's cached sample, or reads a new one.
func (m *Manager) sample(c *Container, info Info) Sample {
	now := time.Now()
	s := m.metrics.Sample(c.ID(), now, func() stats.Sample { return m.readSample(c, now) })
	return Sample{Info: info, Sample: s}
}

func (m *Manager) readSample(c *Container, now time.Time) stats.Sample {
	s := stats.Sample{Timestamp: now}
	if h, err := m.loadOf(c); err != nil {
		s.Err = err
	} else {
		s.Read(h)
	}
	s.FS = m.fsUsage(c.ID(), now)
	return s
}

// upperDir is the container's writable layer.
func (m *Manager) upperDir(id string) string { return path.Join(m.rootDir(id), "fs", "upper") }

// writableUsage is the space and inodes of the writable layer, walked at
// most every stats.DiskTTL, for both stats and metrics.
func (m *Manager) writableUsage(id string, now time.Time) stats.Disk {
	return m.metrics.Writable(id, m.upperDir(id), now)
}

// fsUsage reports the writable layer: its usage (walked at most every
// stats.DiskTTL) and its filesystem's size and inodes.
func (m *Manager) fsUsage(id string, now time.Time) FSUsage {
	upper := m.upperDir(id)
	d := m.writableUsage(id, now)
	fs := FSUsage{UsageBytes: d.Bytes, UsageInodes: d.Inodes}
	if mi, err := lookupMount(upper); err == nil {
		fs.Device = mi.Source
	}
	var st unix.Statfs_t
	if err := unix.Statfs(upper, &st); err == nil {
		fs.LimitBytes = st.Blocks * uint64(st.Bsize) //nolint:gosec // f_bsize is never negative
		fs.InodesTotal, fs.InodesFree = st.Files, st.Ffree
	}
	return fs
}

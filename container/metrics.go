package container

import (
	"os"
	"path"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/opencontainers/cgroups"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/network"
)

// Sample is everything the CRI metrics report about one container, read
// in one pass: one cgroup stats read, one walk of its processes, one
// statfs of its writable layer.
type Sample struct {
	Info
	Timestamp time.Time

	CPUTotal, CPUUser, CPUSystem      uint64 // nanoseconds
	CFSPeriods, CFSThrottledPeriods   uint64
	CFSThrottledNanos                 uint64
	MemoryUsage, MemoryMaxUsage       uint64
	MemoryWorkingSet, MemoryRSS       uint64
	MemoryCache, MemoryMappedFile     uint64
	MemorySwap, MemoryKernel          uint64
	MemoryFailcnt                     uint64
	PgFault, PgMajFault               uint64 // this cgroup
	HierPgFault, HierPgMajFault       uint64 // with its children
	OOMEvents                         uint64
	Processes, Threads, ThreadsMax    uint64
	FileDescriptors, Sockets          uint64
	Hugetlb                           map[string]cgroups.HugetlbStats // by page size
	Blkio                             []BlkioDevice
	FS                                FSUsage
	CgroupStatsErr, ProcessesErr, Err error // what could not be read (for logs)
}

// BlkioDevice is the block I/O of a container on one device.
type BlkioDevice struct {
	Major, Minor                         uint64
	Device                               string
	ReadBytes, WriteBytes, Reads, Writes uint64
}

// FSUsage is the container's writable layer and its filesystem.
type FSUsage struct {
	Device                  string
	UsageBytes, LimitBytes  uint64
	InodesTotal, InodesFree uint64
	UsageInodes             uint64
}

// PodSample is a pod's network counters and its containers' samples.
type PodSample struct {
	PodID string
	// CgroupPath is the pod's cgroup ("/<parent>/<pod id>").
	CgroupPath string
	Timestamp  time.Time
	Interfaces []network.InterfaceStats
	Containers []Sample
}

// Metrics are cached this long per container: scrapes closer together
// reuse one read of the cgroup and the processes.
const metricsTTL = time.Second

// diskTTL bounds how often the writable layer is walked for its usage.
const diskTTL = 10 * time.Second

// metricsCache keeps the last sample of each container.
type metricsCache struct {
	mu      sync.Mutex
	samples map[string]Sample
	disk    map[string]diskEntry
}

type diskEntry struct {
	at            time.Time
	bytes, inodes uint64
}

func newMetricsCache() *metricsCache {
	return &metricsCache{samples: map[string]Sample{}, disk: map[string]diskEntry{}}
}

func (mc *metricsCache) forget(id string) {
	mc.mu.Lock()
	delete(mc.samples, id)
	delete(mc.disk, id)
	mc.mu.Unlock()
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
	mc := m.metrics
	mc.mu.Lock()
	s, ok := mc.samples[c.ID()]
	mc.mu.Unlock()
	if ok && now.Sub(s.Timestamp) < metricsTTL {
		s.Info = info
		return s
	}
	s = m.readSample(c, info, now)
	mc.mu.Lock()
	mc.samples[c.ID()] = s
	mc.mu.Unlock()
	return s
}

func (m *Manager) readSample(c *Container, info Info, now time.Time) Sample {
	id := c.ID()
	s := Sample{Info: info, Timestamp: now}
	h, err := m.loadOf(c)
	if err != nil {
		s.Err = err
	} else {
		if st, err := h.Stats(); err == nil {
			s.fromCgroup(st)
		} else {
			s.CgroupStatsErr = err
		}
		if paths, err := h.CgroupPaths(); err == nil {
			s.OOMEvents, _ = cgdriver.OOMKills(paths)
		}
		if pids, err := h.Processes(); err == nil {
			s.fromProcesses(pids)
		} else {
			s.ProcessesErr = err
		}
	}
	s.FS = m.fsUsage(id, now)
	return s
}

func (s *Sample) fromCgroup(st *cgroups.Stats) {
	cpu := st.CpuStats
	s.CPUTotal, s.CPUUser, s.CPUSystem = cpu.CpuUsage.TotalUsage, cpu.CpuUsage.UsageInUsermode, cpu.CpuUsage.UsageInKernelmode
	s.CFSPeriods, s.CFSThrottledPeriods = cpu.ThrottlingData.Periods, cpu.ThrottlingData.ThrottledPeriods
	s.CFSThrottledNanos = cpu.ThrottlingData.ThrottledTime

	mem := st.MemoryStats
	m := memoryOf(&mem)
	s.MemoryUsage, s.MemoryWorkingSet, s.MemoryRSS = mem.Usage.Usage, m.workingSet, m.rss
	s.MemoryMaxUsage, s.MemoryFailcnt = mem.Usage.MaxUsage, mem.Usage.Failcnt
	s.MemoryKernel = mem.KernelUsage.Usage
	s.MemoryCache, s.MemoryMappedFile, s.MemorySwap = m.cache, m.mappedFile, m.swap
	s.PgFault, s.PgMajFault = m.ownPgfault, m.ownPgmaj
	s.HierPgFault, s.HierPgMajFault = m.pgfault, m.pgmajfault
	if st.PidsStats.Limit > 0 && st.PidsStats.Limit < 1<<62 {
		s.ThreadsMax = st.PidsStats.Limit
	}
	s.Hugetlb = st.HugetlbStats
	s.Blkio = blkioDevices(&st.BlkioStats)
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

// fromProcesses counts the threads, file descriptors and sockets of the
// container's processes.
func (s *Sample) fromProcesses(pids []int) {
	s.Processes = uint64(len(pids))
	for _, pid := range pids {
		dir := "/proc/" + strconv.Itoa(pid)
		if tasks, err := os.ReadDir(dir + "/task"); err == nil {
			s.Threads += uint64(len(tasks))
		}
		fds, err := os.ReadDir(dir + "/fd")
		if err != nil {
			continue
		}
		s.FileDescriptors += uint64(len(fds))
		for _, fd := range fds {
			if l, err := os.Readlink(dir + "/fd/" + fd.Name()); err == nil && strings.HasPrefix(l, "socket:") {
				s.Sockets++
			}
		}
	}
}

// blkioDevices sums the recursive blkio counters per device.
func blkioDevices(b *cgroups.BlkioStats) []BlkioDevice {
	var out []BlkioDevice
	dev := func(major, minor uint64) *BlkioDevice {
		for i := range out {
			if out[i].Major == major && out[i].Minor == minor {
				return &out[i]
			}
		}
		out = append(out, BlkioDevice{Major: major, Minor: minor, Device: blockDeviceName(major, minor)})
		return &out[len(out)-1]
	}
	for _, e := range b.IoServiceBytesRecursive {
		switch strings.ToLower(e.Op) {
		case "read":
			dev(e.Major, e.Minor).ReadBytes += e.Value
		case "write":
			dev(e.Major, e.Minor).WriteBytes += e.Value
		}
	}
	for _, e := range b.IoServicedRecursive {
		switch strings.ToLower(e.Op) {
		case "read":
			dev(e.Major, e.Minor).Reads += e.Value
		case "write":
			dev(e.Major, e.Minor).Writes += e.Value
		}
	}
	return out
}

// blockDeviceName is /dev/<name> of a block device, from sysfs.
func blockDeviceName(major, minor uint64) string {
	l, err := os.Readlink("/sys/dev/block/" + strconv.FormatUint(major, 10) + ":" + strconv.FormatUint(minor, 10))
	if err != nil {
		return ""
	}
	return "/dev/" + path.Base(l)
}

// upperDir is the container's writable layer.
func (m *Manager) upperDir(id string) string { return path.Join(m.rootDir(id), "fs", "upper") }

// writableUsage is the space and inodes of the writable layer, walked at
// most every diskTTL, for both stats and metrics.
func (m *Manager) writableUsage(id string, now time.Time) diskEntry {
	mc := m.metrics
	mc.mu.Lock()
	d, ok := mc.disk[id]
	mc.mu.Unlock()
	if !ok || now.Sub(d.at) >= diskTTL {
		d.at = now
		d.bytes, d.inodes = diskUsage(m.upperDir(id))
		mc.mu.Lock()
		mc.disk[id] = d
		mc.mu.Unlock()
	}
	return d
}

// fsUsage reports the writable layer: its usage (walked at most every
// diskTTL) and its filesystem's size and inodes.
func (m *Manager) fsUsage(id string, now time.Time) FSUsage {
	upper := m.upperDir(id)
	d := m.writableUsage(id, now)
	fs := FSUsage{UsageBytes: d.bytes, UsageInodes: d.inodes}
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

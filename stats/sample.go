package stats

import (
	"os"
	"path"
	"strconv"
	"strings"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/minicri/minicri/cgdriver"
)

// Sample is everything the CRI metrics report about one container's
// resources, read in one pass: one cgroup stats read, one walk of its
// processes, one statfs of its writable layer.
type Sample struct {
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

// Source is what a sample reads of a container's runtime (an
// ocirt.Handle).
type Source interface {
	Stats() (*cgroups.Stats, error)
	CgroupPaths() (map[string]string, error)
	Processes() ([]int, error)
}

// Read fills s from the container's cgroup, its OOM kills and its
// processes; what cannot be read is left zero and its error kept.
func (s *Sample) Read(h Source) {
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

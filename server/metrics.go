package server

import (
	"context"
	"slices"
	"strconv"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// ListMetricDescriptors lists the cAdvisor-named metrics that
// ListPodSandboxMetrics reports.
func (s *Server) ListMetricDescriptors(context.Context, *runtimeapi.ListMetricDescriptorsRequest) (*runtimeapi.ListMetricDescriptorsResponse, error) {
	return &runtimeapi.ListMetricDescriptorsResponse{Descriptors: metricDescriptors()}, nil
}

// ListPodSandboxMetrics reports the metrics of every ready pod: the pod's
// network interfaces, and its running containers' cgroups, processes and
// writable layers.
func (s *Server) ListPodSandboxMetrics(context.Context, *runtimeapi.ListPodSandboxMetricsRequest) (*runtimeapi.ListPodSandboxMetricsResponse, error) {
	var out []*runtimeapi.PodSandboxMetrics
	for _, info := range s.sandboxes.List(sandbox.Filter{}) {
		if !info.Ready {
			continue
		}
		ps, err := s.containers.PodMetrics(info.ID)
		if err != nil {
			s.log.Debug("pod metrics", "pod", info.ID, "err", err)
			continue
		}
		out = append(out, podMetricsToCRI(ps))
	}
	return &runtimeapi.ListPodSandboxMetricsResponse{PodMetrics: out}, nil
}

// metricSet builds the metrics of one pod or container; every metric takes
// the base label values (id, name, image) first.
type metricSet struct {
	ts   int64
	base []string
	out  []*runtimeapi.Metric
}

func (ms *metricSet) add(name string, v uint64, extra ...string) {
	ms.out = append(ms.out, &runtimeapi.Metric{
		Name:        name,
		Timestamp:   ms.ts,
		MetricType:  metricTypes[name],
		LabelValues: append(slices.Clone(ms.base), extra...),
		Value:       &runtimeapi.UInt64Value{Value: v},
	})
}

// addSeconds adds a metric the kernel counts in nanoseconds and cAdvisor
// names in seconds: double_value carries the exact seconds (the 1.38
// kubelet prefers it), value still the whole seconds older consumers read.
func (ms *metricSet) addSeconds(name string, ns uint64, extra ...string) {
	ms.add(name, ns/uint64(time.Second), extra...)
	exact := float64(ns/uint64(time.Second)) + float64(ns%uint64(time.Second))/1e9
	ms.out[len(ms.out)-1].DoubleValue = &runtimeapi.DoubleValue{Value: exact}
}

// addTime adds a time in seconds since the epoch, as addSeconds (a time
// before the epoch is 0).
func (ms *metricSet) addTime(name string, t time.Time) {
	ns := t.UnixNano()
	if t.Unix() < 0 || ns < 0 { // before the epoch, or past 2262 (UnixNano overflows)
		ms.addSeconds(name, 0)
		return
	}
	ms.addSeconds(name, uint64(ns))
}

func podMetricsToCRI(ps container.PodSample) *runtimeapi.PodSandboxMetrics {
	pm := &runtimeapi.PodSandboxMetrics{PodSandboxId: ps.PodID}
	set := &metricSet{ts: ps.Timestamp.UnixNano(), base: []string{ps.CgroupPath, ps.PodID, ""}}
	for _, i := range ps.Interfaces {
		set.add("container_network_receive_bytes_total", i.RxBytes, i.Name)
		set.add("container_network_receive_packets_total", i.RxPackets, i.Name)
		set.add("container_network_receive_packets_dropped_total", i.RxDropped, i.Name)
		set.add("container_network_receive_errors_total", i.RxErrors, i.Name)
		set.add("container_network_transmit_bytes_total", i.TxBytes, i.Name)
		set.add("container_network_transmit_packets_total", i.TxPackets, i.Name)
		set.add("container_network_transmit_packets_dropped_total", i.TxDropped, i.Name)
		set.add("container_network_transmit_errors_total", i.TxErrors, i.Name)
	}
	pm.Metrics = set.out
	for _, c := range ps.Containers {
		pm.ContainerMetrics = append(pm.ContainerMetrics, &runtimeapi.ContainerMetrics{
			ContainerId: c.ID, Metrics: containerMetricsToCRI(c),
		})
	}
	return pm
}

func containerMetricsToCRI(c container.Sample) []*runtimeapi.Metric {
	set := &metricSet{ts: c.Timestamp.UnixNano(), base: []string{"/" + trimSlash(c.CgroupsPath), c.ID, c.ImageName}}

	set.addSeconds("container_cpu_usage_seconds_total", c.CPUTotal)
	set.addSeconds("container_cpu_user_seconds_total", c.CPUUser)
	set.addSeconds("container_cpu_system_seconds_total", c.CPUSystem)
	set.add("container_cpu_cfs_periods_total", c.CFSPeriods)
	set.add("container_cpu_cfs_throttled_periods_total", c.CFSThrottledPeriods)
	set.addSeconds("container_cpu_cfs_throttled_seconds_total", c.CFSThrottledNanos)

	set.add("container_memory_usage_bytes", c.MemoryUsage)
	set.add("container_memory_max_usage_bytes", c.MemoryMaxUsage)
	set.add("container_memory_working_set_bytes", c.MemoryWorkingSet)
	set.add("container_memory_rss", c.MemoryRSS)
	set.add("container_memory_cache", c.MemoryCache)
	set.add("container_memory_mapped_file", c.MemoryMappedFile)
	set.add("container_memory_swap", c.MemorySwap)
	set.add("container_memory_kernel_usage", c.MemoryKernel)
	set.add("container_memory_failcnt", c.MemoryFailcnt)
	set.add("container_memory_failures_total", c.PgFault, "pgfault", "container")
	set.add("container_memory_failures_total", c.PgMajFault, "pgmajfault", "container")
	set.add("container_memory_failures_total", c.HierPgFault, "pgfault", "hierarchy")
	set.add("container_memory_failures_total", c.HierPgMajFault, "pgmajfault", "hierarchy")
	set.add("container_oom_events_total", c.OOMEvents)
	for size, h := range c.Hugetlb {
		set.add("container_hugetlb_usage_bytes", h.Usage, size)
		set.add("container_hugetlb_max_usage_bytes", h.MaxUsage, size)
	}

	set.add("container_fs_usage_bytes", c.FS.UsageBytes, c.FS.Device)
	set.add("container_fs_limit_bytes", c.FS.LimitBytes, c.FS.Device)
	set.add("container_fs_inodes_total", c.FS.InodesTotal, c.FS.Device)
	set.add("container_fs_inodes_free", c.FS.InodesFree, c.FS.Device)
	for _, d := range c.Blkio {
		set.add("container_fs_reads_bytes_total", d.ReadBytes, d.Device)
		set.add("container_fs_writes_bytes_total", d.WriteBytes, d.Device)
		set.add("container_fs_reads_total", d.Reads, d.Device)
		set.add("container_fs_writes_total", d.Writes, d.Device)
		major, minor := strconv.FormatUint(d.Major, 10), strconv.FormatUint(d.Minor, 10)
		set.add("container_blkio_device_usage_total", d.ReadBytes, d.Device, major, minor, "Read")
		set.add("container_blkio_device_usage_total", d.WriteBytes, d.Device, major, minor, "Write")
	}

	set.add("container_processes", c.Processes)
	set.add("container_threads", c.Threads)
	set.add("container_threads_max", c.ThreadsMax)
	set.add("container_file_descriptors", c.FileDescriptors)
	set.add("container_sockets", c.Sockets)

	set.addTime("container_last_seen", c.Timestamp)
	start := c.Status.StartedAt
	if start.IsZero() {
		start = c.CreatedAt
	}
	set.addTime("container_start_time_seconds", start)

	r := c.Config.Resources
	period, shares := nonNegative(r.CPUPeriod), nonNegative(r.CPUShares)
	if period == 0 {
		period = 100000 // the kernel's default CFS period
	}
	if shares == 0 {
		shares = 1024 // the kernel's default weight
	}
	set.add("container_spec_cpu_period", period)
	set.add("container_spec_cpu_shares", shares)
	if r.CPUQuota > 0 {
		set.add("container_spec_cpu_quota", uint64(r.CPUQuota))
	}
	set.add("container_spec_memory_limit_bytes", nonNegative(r.MemoryLimit))
	set.add("container_spec_memory_swap_limit_bytes", nonNegative(r.MemorySwapLimit))
	set.add("container_spec_memory_reservation_limit_bytes", 0)
	return set.out
}

func nonNegative(v int64) uint64 {
	if v < 0 {
		return 0
	}
	return uint64(v)
}

func trimSlash(p string) string {
	for len(p) > 0 && p[0] == '/' {
		p = p[1:]
	}
	return p
}

package server

import (
	"slices"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// baseLabelKeys are cAdvisor's own labels: the cgroup path, the runtime's
// name of the container (its ID) and its image. The kubelet adds
// namespace, pod and container itself, so they must not appear here.
var baseLabelKeys = []string{"id", "name", "image"}

const (
	counter = runtimeapi.MetricType_COUNTER
	gauge   = runtimeapi.MetricType_GAUGE
)

// metricDef is one metric with cAdvisor's name and help; extra are its label
// keys after the base ones.
type metricDef struct {
	name, help string
	typ        runtimeapi.MetricType
	extra      []string
}

var (
	device = []string{"device"}
	iface  = []string{"interface"}
)

var metricDefs = []metricDef{
	{"container_cpu_usage_seconds_total", "Cumulative cpu time consumed in seconds.", counter, nil},
	{"container_cpu_user_seconds_total", "Cumulative user cpu time consumed in seconds.", counter, nil},
	{"container_cpu_system_seconds_total", "Cumulative system cpu time consumed in seconds.", counter, nil},
	{"container_cpu_cfs_periods_total", "Number of elapsed enforcement period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_periods_total", "Number of throttled period intervals.", counter, nil},
	{"container_cpu_cfs_throttled_seconds_total", "Total time duration the container has been throttled.", counter, nil},

	{"container_memory_usage_bytes", "Current memory usage in bytes, including all memory regardless of when it was accessed", gauge, nil},
	{"container_memory_max_usage_bytes", "Maximum memory usage recorded in bytes", gauge, nil},
	{"container_memory_working_set_bytes", "Current working set in bytes.", gauge, nil},
	{"container_memory_rss", "Size of RSS in bytes.", gauge, nil},
	{"container_memory_cache", "Number of bytes of page cache memory.", gauge, nil},
	{"container_memory_mapped_file", "Size of memory mapped files in bytes.", gauge, nil},
	{"container_memory_swap", "Container swap usage in bytes.", gauge, nil},
	{"container_memory_kernel_usage", "Size of kernel memory allocated in bytes.", gauge, nil},
	{"container_memory_failcnt", "Number of memory usage hits limits", counter, nil},
	{"container_memory_failures_total", "Cumulative count of memory allocation failures.", counter, []string{"failure_type", "scope"}},
	{"container_oom_events_total", "Count of out of memory events observed for the container", counter, nil},
	{"container_hugetlb_usage_bytes", "Current hugepage usage in bytes", gauge, []string{"pagesize"}},
	{"container_hugetlb_max_usage_bytes", "Maximum hugepage usage recorded in bytes", gauge, []string{"pagesize"}},

	{"container_fs_usage_bytes", "Number of bytes that are consumed by the container on this filesystem.", gauge, device},
	{"container_fs_limit_bytes", "Number of bytes that can be consumed by the container on this filesystem.", gauge, device},
	{"container_fs_inodes_total", "Number of Inodes", gauge, device},
	{"container_fs_inodes_free", "Number of available Inodes", gauge, device},
	{"container_fs_reads_bytes_total", "Cumulative count of bytes read", counter, device},
	{"container_fs_reads_total", "Cumulative count of reads completed", counter, device},
	{"container_fs_writes_bytes_total", "Cumulative count of bytes written", counter, device},
	{"container_fs_writes_total", "Cumulative count of writes completed", counter, device},
	{"container_blkio_device_usage_total", "Blkio Device bytes usage", counter, []string{"device", "major", "minor", "operation"}},

	{"container_network_receive_bytes_total", "Cumulative count of bytes received", counter, iface},
	{"container_network_receive_packets_total", "Cumulative count of packets received", counter, iface},
	{"container_network_receive_packets_dropped_total", "Cumulative count of packets dropped while receiving", counter, iface},
	{"container_network_receive_errors_total", "Cumulative count of errors encountered while receiving", counter, iface},
	{"container_network_transmit_bytes_total", "Cumulative count of bytes transmitted", counter, iface},
	{"container_network_transmit_packets_total", "Cumulative count of packets transmitted", counter, iface},
	{"container_network_transmit_packets_dropped_total", "Cumulative count of packets dropped while transmitting", counter, iface},
	{"container_network_transmit_errors_total", "Cumulative count of errors encountered while transmitting", counter, iface},

	{"container_processes", "Number of processes running inside the container.", gauge, nil},
	{"container_threads", "Number of threads running inside the container", gauge, nil},
	{"container_threads_max", "Maximum number of threads allowed inside the container, infinity if value is zero", gauge, nil},
	{"container_file_descriptors", "Number of open file descriptors for the container.", gauge, nil},
	{"container_sockets", "Number of open sockets for the container.", gauge, nil},

	{"container_last_seen", "Last time a container was seen by the exporter", gauge, nil},
	{"container_start_time_seconds", "Start time of the container since unix epoch in seconds.", gauge, nil},
	{"container_spec_cpu_period", "CPU period of the container.", gauge, nil},
	{"container_spec_cpu_quota", "CPU quota of the container.", gauge, nil},
	{"container_spec_cpu_shares", "CPU share of the container.", gauge, nil},
	{"container_spec_memory_limit_bytes", "Memory limit for the container.", gauge, nil},
	{"container_spec_memory_swap_limit_bytes", "Memory swap limit for the container.", gauge, nil},
	{"container_spec_memory_reservation_limit_bytes", "Memory reservation limit for the container.", gauge, nil},
}

// metricTypes maps each metric name to its type.
var metricTypes = func() map[string]runtimeapi.MetricType {
	m := make(map[string]runtimeapi.MetricType, len(metricDefs))
	for _, d := range metricDefs {
		m[d.name] = d.typ
	}
	return m
}()

func metricDescriptors() []*runtimeapi.MetricDescriptor {
	out := make([]*runtimeapi.MetricDescriptor, 0, len(metricDefs))
	for _, d := range metricDefs {
		out = append(out, &runtimeapi.MetricDescriptor{
			Name: d.name, Help: d.help, LabelKeys: append(slices.Clone(baseLabelKeys), d.extra...),
		})
	}
	return out
}

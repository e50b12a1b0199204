package integration

import (
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// ctrMetric is the value of a container metric (the first series of that
// name), and whether it was reported.
func (i *instance) ctrMetric(t *testing.T, podID, ctrID, name string) (uint64, bool) {
	t.Helper()
	resp, err := i.rt.ListPodSandboxMetrics(ctx(t), &runtimeapi.ListPodSandboxMetricsRequest{})
	if err != nil {
		t.Fatalf("ListPodSandboxMetrics: %v", err)
	}
	for _, pm := range resp.PodMetrics {
		if pm.PodSandboxId != podID {
			continue
		}
		for _, cm := range pm.ContainerMetrics {
			if cm.ContainerId != ctrID {
				continue
			}
			for _, m := range cm.Metrics {
				if m.Name == name {
					return m.Value.Value, true
				}
			}
		}
	}
	return 0, false
}

func TestPodMetricsFollowCPUAndMemory(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "metrics")
	cfg := ctrConfig("burn", "sleep 1000")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20, CpuPeriod: 100000, CpuQuota: 50000}
	id := i.run(t, podID, pod, cfg)

	descs, err := i.rt.ListMetricDescriptors(ctx(t), &runtimeapi.ListMetricDescriptorsRequest{})
	if err != nil || len(descs.Descriptors) == 0 {
		t.Fatalf("ListMetricDescriptors: %v", err)
	}
	cpu0, _ := i.ctrMetric(t, podID, id, "container_cpu_usage_seconds_total")
	mem0, ok := i.ctrMetric(t, podID, id, "container_memory_working_set_bytes")
	if !ok {
		t.Fatal("no working set metric")
	}
	if lim, _ := i.ctrMetric(t, podID, id, "container_spec_memory_limit_bytes"); lim != 256<<20 {
		t.Fatalf("spec memory limit = %d", lim)
	}
	if q, _ := i.ctrMetric(t, podID, id, "container_spec_cpu_quota"); q != 50000 {
		t.Fatalf("spec cpu quota = %d", q)
	}
	// Burn CPU for 3 s (at most half a CPU: the quota) and hold 64 MiB in
	// a tmpfs file (shmem counts in the container's memory).
	// A loaded machine (or the VM lab's emulated CPU) may take more than
	// ExecSync's usual 10 s to write it.
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Timeout: 60,
		Cmd: []string{"sh", "-c", "head -c 67108864 /dev/zero > /dev/shm/blob"}})
	if err != nil || res.ExitCode != 0 {
		t.Fatalf("allocate: %v %v", err, res)
	}
	// The loop is throttled once it gets more than its quota in a period,
	// which a machine busy with other work may not give it at first: up to
	// 10 rounds of 3 s.
	var thr uint64
	for round := 0; round < 10 && thr == 0; round++ {
		i.exec(t, id, "timeout", "3", "sh", "-c", "while :; do :; done")
		time.Sleep(1100 * time.Millisecond) // past the metrics cache
		thr, _ = i.ctrMetric(t, podID, id, "container_cpu_cfs_throttled_periods_total")
	}
	cpu1, _ := i.ctrMetric(t, podID, id, "container_cpu_usage_seconds_total")
	mem1, _ := i.ctrMetric(t, podID, id, "container_memory_working_set_bytes")
	if cpu1 <= cpu0 {
		t.Errorf("cpu seconds did not grow: %d -> %d", cpu0, cpu1)
	}
	if mem1 < mem0+32<<20 {
		t.Errorf("working set did not grow by the 64 MiB held: %d -> %d", mem0, mem1)
	}
	if thr == 0 {
		t.Errorf("a busy loop under a half-CPU quota was never throttled in 10 rounds of 3 s")
	}
	if n, _ := i.ctrMetric(t, podID, id, "container_processes"); n < 1 {
		t.Errorf("processes = %d", n)
	}
}

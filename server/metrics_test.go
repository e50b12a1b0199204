package server

import (
	"testing"
	"time"

	"github.com/opencontainers/cgroups"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/network"
	"github.com/minicri/minicri/stats"
)

func TestEveryMetricHasADescriptorWithItsLabels(t *testing.T) {
	keys := map[string]int{}
	for _, d := range metricDescriptors() {
		if d.Help == "" || len(d.LabelKeys) == 0 {
			t.Fatalf("descriptor %s lacks help or labels", d.Name)
		}
		if _, dup := keys[d.Name]; dup {
			t.Fatalf("descriptor %s twice", d.Name)
		}
		for _, k := range d.LabelKeys {
			if k == "namespace" || k == "pod" || k == "container" {
				t.Fatalf("%s: the kubelet adds label %q itself", d.Name, k)
			}
		}
		keys[d.Name] = len(d.LabelKeys)
	}
	c := container.Sample{Sample: stats.Sample{Timestamp: time.Now(), Hugetlb: map[string]cgroups.HugetlbStats{"2MB": {Usage: 1}},
		Blkio: []container.BlkioDevice{{Major: 8, Device: "/dev/sda", ReadBytes: 1}}}}
	c.ID, c.CgroupsPath, c.ImageName = "ctr", "minicri/pod/ctr", "busybox"
	c.Config.Resources.CPUQuota = 20000
	pm := podMetricsToCRI(container.PodSample{PodID: "pod", CgroupPath: "/minicri/pod", Timestamp: time.Now(),
		Interfaces: []network.InterfaceStats{{Name: "eth0", RxBytes: 5}}, Containers: []container.Sample{c}})
	seen := map[string]bool{}
	all := pm.Metrics
	for _, cm := range pm.ContainerMetrics {
		all = append(all, cm.Metrics...)
	}
	for _, m := range all {
		n, ok := keys[m.Name]
		if !ok {
			t.Fatalf("metric %s has no descriptor", m.Name)
		}
		if len(m.LabelValues) != n {
			t.Fatalf("metric %s: %d label values for %d keys", m.Name, len(m.LabelValues), n)
		}
		seen[m.Name] = true
	}
	for name := range keys {
		if !seen[name] {
			t.Errorf("descriptor %s has no metric in a full sample", name)
		}
	}
	if v := pm.ContainerMetrics[0].Metrics[0]; v.LabelValues[0] != "/minicri/pod/ctr" || v.LabelValues[1] != "ctr" {
		t.Fatalf("labels = %v", v.LabelValues)
	}
}

// TestFractionalMetricsCarryDoubleValue: every metric counted in seconds
// (CPU time, CFS throttled time, the start and last-seen times) carries its
// exact value in double_value, which the 1.38 kubelet prefers, and still
// the whole seconds in value for older consumers; the others carry no
// double_value.
func TestFractionalMetricsCarryDoubleValue(t *testing.T) {
	var c container.Sample
	c.ID, c.CgroupsPath, c.ImageName = "ctr", "minicri/pod/ctr", "busybox"
	c.CPUTotal, c.CPUUser, c.CPUSystem = 1_500_000_000, 1_250_000_000, 250_000_000
	c.CFSThrottledNanos = 3_000_000_001
	c.Timestamp = time.Unix(1_800_000_000, 750_000_000)
	c.Status.StartedAt = time.Unix(1_700_000_000, 500_000_000)
	c.CFSPeriods, c.MemoryUsage = 7, 4096
	want := map[string]struct {
		double float64
		value  uint64
	}{
		"container_cpu_usage_seconds_total":         {1.5, 1},
		"container_cpu_user_seconds_total":          {1.25, 1},
		"container_cpu_system_seconds_total":        {0.25, 0},
		"container_cpu_cfs_throttled_seconds_total": {3.000000001, 3},
		"container_last_seen":                       {1_800_000_000.75, 1_800_000_000},
		"container_start_time_seconds":              {1_700_000_000.5, 1_700_000_000},
	}
	for _, m := range containerMetricsToCRI(c) {
		w, fractional := want[m.Name]
		switch {
		case fractional && (m.GetDoubleValue() == nil || m.GetDoubleValue().GetValue() != w.double):
			t.Errorf("%s: double_value %v, want %v", m.Name, m.GetDoubleValue(), w.double)
		case fractional && m.GetValue().GetValue() != w.value:
			t.Errorf("%s: value %d, want %d (the whole seconds, for older consumers)", m.Name, m.GetValue().GetValue(), w.value)
		case !fractional && m.GetDoubleValue() != nil:
			t.Errorf("%s: double_value %v on a metric that is not fractional", m.Name, m.GetDoubleValue())
		}
		delete(want, m.Name)
	}
	for name := range want {
		t.Errorf("no metric %s", name)
	}
}

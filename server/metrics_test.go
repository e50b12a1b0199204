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

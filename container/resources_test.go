package container

import (
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func stubBool(p *func() bool, v bool) func() {
	old := *p
	*p = func() bool { return v }
	return func() { *p = old }
}

func TestBuildResources(t *testing.T) {
	defer stubBool(&swapAvailable, true)()
	defer stubBool(&hugetlbPresent, true)()
	defer stubBool(&cgroupUnified, false)()

	rules := []specs.LinuxDeviceCgroup{denyAll}
	r, err := buildResources(&Resources{}, rules)
	if err != nil {
		t.Fatal(err)
	}
	if r.CPU != nil || r.Memory != nil || r.HugepageLimits != nil || r.Unified != nil || r.Pids != nil || len(r.Devices) != 1 {
		t.Fatalf("empty resources = %+v", r)
	}

	r, err = buildResources(&Resources{
		CPUPeriod: 100000, CPUQuota: 50000, CPUShares: 512,
		CpusetCPUs: "0-1", CpusetMems: "0",
		MemoryLimit: 64 << 20,
		Hugepages:   map[string]uint64{"2MB": 4 << 20, "1GB": 0},
	}, rules)
	if err != nil {
		t.Fatal(err)
	}
	c := r.CPU
	if c == nil || *c.Period != 100000 || *c.Quota != 50000 || *c.Shares != 512 || c.Cpus != "0-1" || c.Mems != "0" {
		t.Fatalf("cpu = %+v", c)
	}
	m := r.Memory
	if m == nil || *m.Limit != 64<<20 || m.Swap == nil || *m.Swap != 64<<20 {
		t.Fatalf("memory = %+v (swap must default to the limit)", m)
	}
	if len(r.HugepageLimits) != 2 || r.HugepageLimits[0] != (specs.LinuxHugepageLimit{Pagesize: "1GB", Limit: 0}) ||
		r.HugepageLimits[1] != (specs.LinuxHugepageLimit{Pagesize: "2MB", Limit: 4 << 20}) {
		t.Fatalf("hugepages = %+v", r.HugepageLimits)
	}

	r, _ = buildResources(&Resources{MemoryLimit: 64 << 20, MemorySwapLimit: 128 << 20}, rules)
	if *r.Memory.Swap != 128<<20 {
		t.Fatalf("swap = %d", *r.Memory.Swap)
	}

	// Without the swap or hugetlb controllers, those limits are left out.
	defer stubBool(&swapAvailable, false)()
	defer stubBool(&hugetlbPresent, false)()
	r, _ = buildResources(&Resources{MemoryLimit: 64 << 20, MemorySwapLimit: 128 << 20, Hugepages: map[string]uint64{"2MB": 0}}, rules)
	if r.Memory.Swap != nil || r.HugepageLimits != nil {
		t.Fatalf("resources = %+v", r)
	}

	// Unified needs cgroup v2.
	_, err = buildResources(&Resources{Unified: map[string]string{"memory.high": "1"}}, rules)
	wantInvalid(t, err)
	defer stubBool(&cgroupUnified, true)()
	r, err = buildResources(&Resources{Unified: map[string]string{"memory.high": "1"}}, rules)
	if err != nil || r.Unified["memory.high"] != "1" {
		t.Fatalf("unified = %+v, %v", r.Unified, err)
	}

	_, err = buildResources(&Resources{CPUShares: -1}, rules)
	wantInvalid(t, err)
}

func TestBuildSpecResources(t *testing.T) {
	in := testInput(t)
	in.Config.Resources = Resources{CPUShares: 256, MemoryLimit: 32 << 20, OOMScoreAdj: -5}
	s := mustBuild(t, in)
	if *s.Linux.Resources.CPU.Shares != 256 || *s.Linux.Resources.Memory.Limit != 32<<20 || *s.Process.OOMScoreAdj != -5 {
		t.Fatalf("resources = %+v", s.Linux.Resources)
	}
}

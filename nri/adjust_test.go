package nri

import (
	"errors"
	"reflect"
	"slices"
	"testing"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"
)

func baseSpec() *specs.Spec {
	shares, quota := uint64(512), int64(50000)
	return &specs.Spec{
		Process: &specs.Process{
			Args:    []string{"/bin/app"},
			Env:     []string{"PATH=/bin", "KEEP=1", "DROP=1", "REPLACE=old"},
			Rlimits: []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 1024, Soft: 1024}},
		},
		Annotations: map[string]string{"keep": "1", "drop": "1"},
		Mounts: []specs.Mount{
			{Destination: "/proc", Type: "proc", Source: "proc"},
			{Destination: "/data", Type: "bind", Source: "/old", Options: []string{"rbind"}},
		},
		Linux: &specs.Linux{
			CgroupsPath: "/pods/abc",
			Resources: &specs.LinuxResources{
				CPU:     &specs.LinuxCPU{Shares: &shares, Quota: &quota},
				Devices: []specs.LinuxDeviceCgroup{{Allow: false, Access: "rwm"}},
			},
		},
	}
}

// TestAdjustSpec applies each kind of adjustment a plugin may ask for and
// checks the spec libcontainer will get.
func TestAdjustSpec(t *testing.T) {
	spec := baseSpec()
	adj := &api.ContainerAdjustment{}
	adj.AddAnnotation("added", "yes")
	adj.RemoveAnnotation("drop")
	adj.AddEnv("ADDED", "1")
	adj.AddEnv("REPLACE", "new")
	adj.RemoveEnv("DROP")
	adj.AddMount(&api.Mount{Destination: "/data", Type: "bind", Source: "/new", Options: []string{"rbind", "ro"}})
	adj.AddMount(&api.Mount{Destination: "/extra/deep", Type: "tmpfs", Source: "tmpfs"})
	adj.AddHooks(&api.Hooks{Prestart: []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "pre"}}},
		Poststop: []*api.Hook{{Path: "/bin/hook", Args: []string{"hook", "post"}}}})
	adj.AddDevice(&api.LinuxDevice{Path: "/dev/fake0", Type: "c", Major: 10, Minor: 200, FileMode: api.FileMode(0o620)})
	adj.SetLinuxMemoryLimit(64 << 20)
	adj.SetLinuxCPUShares(2048)
	adj.SetLinuxPidLimits(100)
	adj.AddRlimit("RLIMIT_NOFILE", 4096, 2048)
	adj.AddRlimit("RLIMIT_NPROC", 50, 40)
	score := 500
	adj.SetLinuxOomScoreAdj(&score)
	adj.SetLinuxCgroupsPath("/plugin/abc")
	adj.SetArgs([]string{"/bin/app", "--flag"})
	if err := adjustSpec(spec, adj, nil); err != nil {
		t.Fatal(err)
	}

	if want := map[string]string{"keep": "1", "added": "yes"}; !reflect.DeepEqual(spec.Annotations, want) {
		t.Errorf("annotations = %v, want %v", spec.Annotations, want)
	}
	if want := []string{"PATH=/bin", "KEEP=1", "REPLACE=new", "ADDED=1"}; !reflect.DeepEqual(spec.Process.Env, want) {
		t.Errorf("env = %v, want %v", spec.Process.Env, want)
	}
	if want := []string{"/bin/app", "--flag"}; !reflect.DeepEqual(spec.Process.Args, want) {
		t.Errorf("args = %v", spec.Process.Args)
	}
	var dests []string
	for _, m := range spec.Mounts {
		dests = append(dests, m.Destination)
		if m.Destination == "/data" && (m.Source != "/new" || !slices.Contains(m.Options, "ro")) {
			t.Errorf("/data not replaced: %+v", m)
		}
	}
	if want := []string{"/data", "/proc", "/extra/deep"}; !reflect.DeepEqual(dests, want) {
		t.Errorf("mounts = %v, want %v (one per destination, parents first)", dests, want)
	}
	//nolint:staticcheck // Prestart is what the plugin asked for
	if h := spec.Hooks; h == nil || len(h.Prestart) != 1 || h.Prestart[0].Path != "/bin/hook" || len(h.Poststop) != 1 {
		t.Errorf("hooks = %+v", spec.Hooks)
	}
	if d := spec.Linux.Devices; len(d) != 1 || d[0].Path != "/dev/fake0" || d[0].Major != 10 || d[0].Minor != 200 {
		t.Errorf("devices = %+v", d)
	}
	rules := spec.Linux.Resources.Devices
	if last := rules[len(rules)-1]; !last.Allow || last.Type != "c" || *last.Major != 10 || *last.Minor != 200 {
		t.Errorf("device not allowed in the cgroup: %+v", rules)
	}
	r := spec.Linux.Resources
	if *r.Memory.Limit != 64<<20 || *r.CPU.Shares != 2048 || *r.CPU.Quota != 50000 || r.Pids == nil || *r.Pids.Limit != 100 {
		t.Errorf("resources = mem %v shares %v quota %v pids %+v", *r.Memory.Limit, *r.CPU.Shares, *r.CPU.Quota, r.Pids)
	}
	wantRl := []specs.POSIXRlimit{{Type: "RLIMIT_NOFILE", Hard: 4096, Soft: 2048}, {Type: "RLIMIT_NPROC", Hard: 50, Soft: 40}}
	if !reflect.DeepEqual(spec.Process.Rlimits, wantRl) {
		t.Errorf("rlimits = %+v, want %+v (one per type, the plugin's)", spec.Process.Rlimits, wantRl)
	}
	if spec.Process.OOMScoreAdj == nil || *spec.Process.OOMScoreAdj != 500 {
		t.Errorf("oom_score_adj = %v", spec.Process.OOMScoreAdj)
	}
	if spec.Linux.CgroupsPath != "/plugin/abc" {
		t.Errorf("cgroups path = %q", spec.Linux.CgroupsPath)
	}
}

func TestAdjustSpecNil(t *testing.T) {
	spec, want := baseSpec(), baseSpec()
	if err := adjustSpec(spec, nil, nil); err != nil || !reflect.DeepEqual(spec, want) {
		t.Fatalf("a nil adjustment changed the spec (%v)", err)
	}
	if err := adjustSpec(spec, &api.ContainerAdjustment{}, nil); err != nil || !reflect.DeepEqual(spec, want) {
		t.Fatalf("an empty adjustment changed the spec (%v): %+v", err, spec)
	}
}

// TestAdjustSpecUnsupported: what minicri cannot honour fails, naming it,
// instead of being dropped silently.
func TestAdjustSpecUnsupported(t *testing.T) {
	for name, adj := range map[string]func(*api.ContainerAdjustment){
		"cdi":     func(a *api.ContainerAdjustment) { a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=0"}) },
		"blockio": func(a *api.ContainerAdjustment) { a.SetLinuxBlockIOClass("slow") },
		"rdt":     func(a *api.ContainerAdjustment) { a.SetLinuxRDTClass("gold") },
	} {
		a := &api.ContainerAdjustment{}
		adj(a)
		if err := adjustSpec(baseSpec(), a, nil); !errors.Is(err, errUnsupported) {
			t.Errorf("%s: err = %v, want errUnsupported", name, err)
		}
	}
}

// TestAdjustSpecCDI: CDI devices a plugin names go to the container
// manager's CDI registry, after the rest of the adjustment; its error fails
// the adjustment.
func TestAdjustSpecCDI(t *testing.T) {
	a := &api.ContainerAdjustment{}
	a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=0"})
	a.AddCDIDevice(&api.CDIDevice{Name: "vendor.com/gpu=1"})
	a.AddEnv("FROM_PLUGIN", "1")
	var got []string
	spec := baseSpec()
	inject := func(s *specs.Spec, names []string) error {
		if !slices.Contains(s.Process.Env, "FROM_PLUGIN=1") {
			t.Error("CDI devices injected before the rest of the adjustment")
		}
		got = names
		return nil
	}
	if err := adjustSpec(spec, a, inject); err != nil {
		t.Fatal(err)
	}
	if want := []string{"vendor.com/gpu=0", "vendor.com/gpu=1"}; !reflect.DeepEqual(got, want) {
		t.Errorf("injected %v, want %v", got, want)
	}
	boom := errors.New("unknown CDI device vendor.com/gpu=0")
	if err := adjustSpec(baseSpec(), a, func(*specs.Spec, []string) error { return boom }); !errors.Is(err, boom) {
		t.Errorf("err = %v, want the registry's", err)
	}
}

// TestMergeResources: an update replaces what it sets and keeps the rest.
func TestMergeResources(t *testing.T) {
	cur := baseSpec().Linux.Resources
	upd := &api.LinuxResources{
		Memory: &api.LinuxMemory{Limit: api.Int64(32 << 20)},
		Cpu:    &api.LinuxCPU{Cpus: "0"},
	}
	if err := mergeResources(cur, upd); err != nil {
		t.Fatal(err)
	}
	if *cur.Memory.Limit != 32<<20 || cur.CPU.Cpus != "0" || *cur.CPU.Shares != 512 || *cur.CPU.Quota != 50000 {
		t.Errorf("merged = mem %v cpus %q shares %v quota %v", *cur.Memory.Limit, cur.CPU.Cpus, *cur.CPU.Shares, *cur.CPU.Quota)
	}
	if err := mergeResources(cur, &api.LinuxResources{BlockioClass: api.String("x")}); !errors.Is(err, errUnsupported) {
		t.Errorf("block I/O class update: %v", err)
	}
}

func TestLastRlimits(t *testing.T) {
	in := []specs.POSIXRlimit{{Type: "A", Hard: 1}, {Type: "B", Hard: 2}, {Type: "A", Hard: 3}}
	want := []specs.POSIXRlimit{{Type: "A", Hard: 3}, {Type: "B", Hard: 2}}
	if got := lastRlimits(in); !reflect.DeepEqual(got, want) {
		t.Errorf("lastRlimits = %+v, want %+v", got, want)
	}
}

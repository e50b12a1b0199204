package integration

// Attack tests for issue 11 item 10 ("smaller holes"): each request below
// tries to get more than the kubelet would ever ask for, and must get a
// clear InvalidArgument and leave nothing behind.

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func withNamespaces(cfg *runtimeapi.ContainerConfig, ns *runtimeapi.NamespaceOption) *runtimeapi.ContainerConfig {
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}
	return cfg
}

func (i *instance) ctrPID(t *testing.T, id string) int {
	t.Helper()
	var info struct{ Pid int }
	resp, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus: %v", err)
	}
	jsonUnmarshal(t, resp.Info["info"], &info)
	return info.Pid
}

func (i *instance) containersOf(t *testing.T, podID string) []string {
	t.Helper()
	resp, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: podID}})
	if err != nil {
		t.Fatalf("ListContainers: %v", err)
	}
	var ids []string
	for _, c := range resp.Containers {
		ids = append(ids, c.Id)
	}
	return ids
}

// The attacks: a container of one pod asks for the PID namespace of
// another pod's container (TARGET), for the host's PID, network or IPC
// namespace in a pod that has its own, or to be privileged in a pod that is
// not. The same requests within the pod's own bounds still work.
func TestContainersCannotAskMoreThanTheirPod(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podA, cfgA := i.podWithLogs(t, "victim")
	victim := i.run(t, podA, cfgA, withNamespaces(ctrConfig("victim", "sleep 1000"),
		&runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_CONTAINER}))
	podB, cfgB := i.podWithLogs(t, "attacker")

	attacks := map[string]struct {
		pod string
		cfg *runtimeapi.PodSandboxConfig
		ctr *runtimeapi.ContainerConfig
	}{
		"TARGET PID namespace of another pod's container": {podB, cfgB, withNamespaces(ctrConfig("target", "sleep 1000"),
			&runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: victim})},
		"host PID namespace in a pod with its own": {podB, cfgB, withNamespaces(ctrConfig("hostpid", "sleep 1000"),
			&runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE})},
		"host network namespace in a pod with its own": {podB, cfgB, withNamespaces(ctrConfig("hostnet", "sleep 1000"),
			&runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE})},
		"host IPC namespace in a pod with its own": {podB, cfgB, withNamespaces(ctrConfig("hostipc", "sleep 1000"),
			&runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_NODE})},
	}
	priv := ctrConfig("privileged", "sleep 1000")
	priv.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Privileged: true}
	attacks["privileged container in a pod that is not"] = struct {
		pod string
		cfg *runtimeapi.PodSandboxConfig
		ctr *runtimeapi.ContainerConfig
	}{podB, cfgB, priv}
	for name, a := range attacks {
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: a.pod, Config: a.ctr, SandboxConfig: a.cfg})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if ids := i.containersOf(t, podB); len(ids) != 0 {
		t.Errorf("refused containers were created: %v", ids)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "containers")); len(entries) != 1 {
		t.Errorf("refused containers left records: %d entries, want the victim's only", len(entries))
	}

	// Within the pod: a debug container joins the victim's PID namespace.
	debug := i.run(t, podA, cfgA, withNamespaces(ctrConfig("debug", "sleep 1000"),
		&runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: victim[:12]}))
	if nsInode(t, i.ctrPID(t, debug), "pid") != nsInode(t, i.ctrPID(t, victim), "pid") {
		t.Error("a TARGET container of the same pod did not join its target's PID namespace")
	}
	// A privileged pod may hold a privileged container; a container
	// without a Linux section at all is fine anywhere.
	podC := podConfig("privileged")
	podC.LogDirectory = filepath.Join(i.dir, "logs", "privileged")
	podC.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	podCID := i.runPod(t, podC)
	i.create(t, podCID, podC, priv)
	bare := ctrConfig("bare", "sleep 1000")
	bare.Linux = nil
	i.create(t, podB, cfgB, bare)
	for _, p := range []string{podA, podB, podCID} {
		i.stopRemove(t, p)
	}
}

// The attack: a pod user namespace that maps the host's root, or that runs
// past the highest ID, or a privileged pod in a user namespace.
func TestUserNamespaceCannotMapHostRoot(t *testing.T) {
	i := newInstance(t)
	bad := map[string]*runtimeapi.PodSandboxConfig{
		"host ID 0":  usernsPodConfig("root", runtimeapi.NamespaceMode_POD, mapping(0, 0, 65536)),
		"overflow":   usernsPodConfig("overflow", runtimeapi.NamespaceMode_POD, mapping(0, 1<<32-1<<15, 65536)),
		"privileged": usernsPodConfig("privileged", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536)),
	}
	bad["privileged"].Linux.SecurityContext.Privileged = true
	for name, cfg := range bad {
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 0 {
		t.Errorf("refused pods left records: %v", entries)
	}
}

// The attack: sysctl names whose path under /proc/sys climbs out of the
// namespaced tree to the host's kernel.core_pattern (a pipe there runs as
// host root on the next crash).
func TestSysctlNamesCannotLeaveTheNamespacedTree(t *testing.T) {
	i := newInstance(t)
	before, err := os.ReadFile("/proc/sys/kernel/core_pattern")
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"net/../kernel/core_pattern", "net.//.kernel.core_pattern", "kernel.shm/.//.core_pattern"} {
		cfg := podConfig("sysctl")
		cfg.Linux.Sysctls = map[string]string{name: "|/bin/false"}
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("sysctl %q: want InvalidArgument, got %v", name, err)
		}
	}
	if after, _ := os.ReadFile("/proc/sys/kernel/core_pattern"); string(after) != string(before) {
		t.Fatalf("the host's core_pattern changed: %q -> %q", before, after)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 0 {
		t.Errorf("refused pods left records: %v", entries)
	}
	// Both spellings of a namespaced sysctl still reach the pod's netns.
	cfg := podConfig("sysctl-ok")
	cfg.Linux.Sysctls = map[string]string{"net/ipv4/conf/all/rp_filter": "2", "net.ipv4.ip_unprivileged_port_start": "80"}
	id := i.runPod(t, cfg)
	_, info := i.status(t, id)
	err = inNetNS(t, info.NetNS, func() error {
		for f, want := range map[string]string{"conf/all/rp_filter": "2\n", "ip_unprivileged_port_start": "80\n"} {
			if b, _ := os.ReadFile("/proc/sys/net/ipv4/" + f); string(b) != want {
				t.Errorf("%s in the pod is %q, want %q", f, b, want)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	i.stopRemove(t, id)
	i.assertNothingLeft(t, map[string]podInfo{id: info})
}

// The attack: two pods whose metadata differ only in where a "/" falls
// (namespace "a/b" with name "c", namespace "a" with name "b/c", same UID),
// created at once. Each must get a pod of its own: not AlreadyExists, and
// never the other's ID.
func TestPodsDifferingOnlyInWhereASlashFallsAreDistinct(t *testing.T) {
	i := newInstance(t)
	mk := func(ns, name string) *runtimeapi.PodSandboxConfig {
		cfg := podConfig("slash")
		cfg.Metadata = &runtimeapi.PodSandboxMetadata{Namespace: ns, Name: name, Uid: "uid-slash"}
		cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
		return cfg
	}
	cfgs := []*runtimeapi.PodSandboxConfig{mk("a/b", "c"), mk("a", "b/c")}
	ids := make([]string, len(cfgs))
	errs := make([]error, len(cfgs))
	var wg sync.WaitGroup
	for n, cfg := range cfgs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
			ids[n], errs[n] = resp.GetPodSandboxId(), err
		}()
	}
	wg.Wait()
	for n, err := range errs {
		if err != nil {
			t.Errorf("pod %v: %v", cfgs[n].Metadata, err)
		}
	}
	if ids[0] == ids[1] {
		t.Fatalf("two different pods were given the same sandbox %q", ids[0])
	}
	infos := map[string]podInfo{}
	for _, id := range ids {
		if id == "" {
			continue
		}
		_, infos[id] = i.status(t, id)
		i.stopRemove(t, id)
	}
	i.assertNothingLeft(t, infos)
}

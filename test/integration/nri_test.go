package integration

import (
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	"github.com/containerd/nri/pkg/stub"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nriPlugin is a small NRI plugin: it records every event, adjusts each
// container it sees created (env, annotation, a read-only bind mount, an
// rlimit; or only what adjust says, when set) and fails RunPodSandbox or
// CreateContainer when told to.
type nriPlugin struct {
	mountSrc   string
	adjust     atomic.Pointer[adjuster] // set: the only adjustment made
	failRun    atomic.Bool
	failCreate atomic.Bool
	podMemory  atomic.Int64 // the memory limit UpdatePodSandbox last passed
	runMemory  atomic.Int64 // pod resources + overhead memory RunPodSandbox last passed
	cdiDevice  atomic.Value // string: a CDI device each created container gets
	synced     chan struct{}
	syncOnce   sync.Once

	mu     sync.Mutex
	events []string // "Event <id>"
}

// adjuster makes a plugin's adjustment of a container being created.
type adjuster func(*api.ContainerAdjustment)

func (p *nriPlugin) record(event, id string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.events = append(p.events, event+" "+id)
}

// eventsOf lists the events of one pod or container, in order.
func (p *nriPlugin) eventsOf(id string) []string {
	p.mu.Lock()
	defer p.mu.Unlock()
	var out []string
	for _, e := range p.events {
		if name, eid, _ := strings.Cut(e, " "); eid == id {
			out = append(out, name)
		}
	}
	return out
}

// lastID is the ID of the latest event named event.
func (p *nriPlugin) lastID(event string) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, e := range slices.Backward(p.events) {
		if name, id, _ := strings.Cut(e, " "); name == event {
			return id
		}
	}
	return ""
}

func (p *nriPlugin) Synchronize(context.Context, []*api.PodSandbox, []*api.Container) ([]*api.ContainerUpdate, error) {
	p.syncOnce.Do(func() { close(p.synced) })
	return nil, nil
}

func (p *nriPlugin) RunPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("RunPodSandbox", pod.GetId())
	l := pod.GetLinux()
	p.runMemory.Store(l.GetPodResources().GetMemory().GetLimit().GetValue() + l.GetPodOverhead().GetMemory().GetLimit().GetValue())
	if p.failRun.Load() {
		return errors.New("nri test plugin refuses the pod")
	}
	return nil
}

func (p *nriPlugin) StopPodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("StopPodSandbox", pod.GetId())
	return nil
}

func (p *nriPlugin) RemovePodSandbox(_ context.Context, pod *api.PodSandbox) error {
	p.record("RemovePodSandbox", pod.GetId())
	return nil
}

func (p *nriPlugin) CreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) (*api.ContainerAdjustment, []*api.ContainerUpdate, error) {
	p.record("CreateContainer", ctr.GetId())
	if p.failCreate.Load() {
		return nil, nil, errors.New("nri test plugin refuses the container")
	}
	adj := &api.ContainerAdjustment{}
	if f := p.adjust.Load(); f != nil {
		(*f)(adj)
		return adj, nil, nil
	}
	adj.AddEnv("NRI_INJECTED", "by-plugin")
	adj.AddAnnotation("nri.minicri.test/adjusted", "yes")
	adj.AddMount(&api.Mount{Destination: "/nri", Type: "bind", Source: p.mountSrc, Options: []string{"rbind", "ro"}})
	adj.AddRlimit("RLIMIT_NOFILE", 4321, 1234)
	if dev, _ := p.cdiDevice.Load().(string); dev != "" {
		adj.AddCDIDevice(&api.CDIDevice{Name: dev})
	}
	return adj, nil, nil
}

func (p *nriPlugin) PostCreateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.record("PostCreateContainer", ctr.GetId())
	return nil
}

func (p *nriPlugin) PostStartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.record("PostStartContainer", ctr.GetId())
	return nil
}

// UpdateContainer raises a 256 MiB memory limit to 300 MiB.
func (p *nriPlugin) UpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container, r *api.LinuxResources) ([]*api.ContainerUpdate, error) {
	p.record("UpdateContainer", ctr.GetId())
	if r.GetMemory().GetLimit().GetValue() != 256<<20 {
		return nil, nil
	}
	u := &api.ContainerUpdate{ContainerId: ctr.GetId(), Linux: &api.LinuxContainerUpdate{}}
	u.SetLinuxMemoryLimit(300 << 20)
	return []*api.ContainerUpdate{u}, nil
}

func (p *nriPlugin) PostUpdateContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.record("PostUpdateContainer", ctr.GetId())
	return nil
}

func (p *nriPlugin) UpdatePodSandbox(_ context.Context, pod *api.PodSandbox, _, res *api.LinuxResources) error {
	p.record("UpdatePodSandbox", pod.GetId())
	p.podMemory.Store(res.GetMemory().GetLimit().GetValue())
	return nil
}

func (p *nriPlugin) StartContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.record("StartContainer", ctr.GetId())
	return nil
}

func (p *nriPlugin) StopContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) ([]*api.ContainerUpdate, error) {
	p.record("StopContainer", ctr.GetId())
	return nil, nil
}

func (p *nriPlugin) RemoveContainer(_ context.Context, _ *api.PodSandbox, ctr *api.Container) error {
	p.record("RemoveContainer", ctr.GetId())
	return nil
}

// allowHostMounts lets the plugin's read-only bind of a host directory
// through the default validator, which refuses host mounts.
var allowHostMounts = withNRIValidator("reject_host_mount_adjustment = false")

// startNRIPlugin connects the plugin to the instance's NRI socket and waits
// until it is synchronized.
func (i *instance) startNRIPlugin(t *testing.T) (*nriPlugin, stub.Stub) {
	t.Helper()
	src := filepath.Join(i.dir, "nri-mount")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "file"), []byte("from-the-host\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	p := &nriPlugin{mountSrc: src, synced: make(chan struct{})}
	s, err := stub.New(p, stub.WithPluginName("minicri-it"), stub.WithPluginIdx("10"), stub.WithSocketPath(i.nriSocket()))
	if err != nil {
		t.Fatal(err)
	}
	runCtx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.Run(runCtx) }()
	t.Cleanup(func() { cancel(); s.Stop() })
	select {
	case <-p.synced:
	case err := <-done:
		t.Fatalf("NRI plugin stopped before it was synchronized: %v", err)
	case <-time.After(15 * time.Second):
		t.Fatal("NRI plugin not synchronized within 15s")
	}
	return p, s
}

// waitEvents waits until the plugin has seen want for id, in that order.
func waitEvents(t *testing.T, p *nriPlugin, id string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := p.eventsOf(id)
		if slices.Equal(got, want) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("NRI events of %s = %v, want %v", id, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// waitSubsequence waits until the plugin has seen want for id in that
// order, maybe with other events between.
func waitSubsequence(t *testing.T, p *nriPlugin, id string, want ...string) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		got := p.eventsOf(id)
		rest := want
		for _, e := range got {
			if len(rest) > 0 && e == rest[0] {
				rest = rest[1:]
			}
		}
		if len(rest) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("NRI events of %s = %v, want %v in that order", id, got, want)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// A plugin adjusts a container (env, annotation, mount, rlimit): the
// container runs with them; it sees every event of the pod and the
// container in order, an exit included.
func TestNRIAdjustsContainerAndSeesEveryEvent(t *testing.T) {
	i := newInstance(t, withRegistry(), allowHostMounts)
	i.pull(t, busybox)
	p, s := i.startNRIPlugin(t)
	podID, pod := i.podWithLogs(t, "nri")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("nri", "sleep 1000"))

	if code, out := i.execIn(t, id, "sh", "-c", `echo "$NRI_INJECTED"; ulimit -Sn; ulimit -Hn; cat /nri/file; touch /nri/x`); code == 0 ||
		out != "by-plugin\n1234\n4321\nfrom-the-host\ntouch: /nri/x: Read-only file system" {
		t.Fatalf("adjusted container: exit %d, output %q", code, out)
	}
	spec := readSpec(t, i, id)
	if spec.Annotations["nri.minicri.test/adjusted"] != "yes" {
		t.Fatalf("annotation not in the spec: %v", spec.Annotations)
	}

	// UpdateContainerResources goes through the plugin, which may change
	// the resources (256 MiB becomes 300 MiB).
	if _, err := i.rt.UpdateContainerResources(ctx(t), &runtimeapi.UpdateContainerResourcesRequest{
		ContainerId: id, Linux: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20},
	}); err != nil {
		t.Fatalf("UpdateContainerResources with a plugin connected: %v", err)
	}
	if got := memoryLimit(t, spec.Linux.CgroupsPath); got != "314572800" {
		t.Fatalf("memory limit after UpdateContainerResources = %s, want the plugin's 300 MiB", got)
	}
	// UpdatePodSandboxResources reaches the plugin.
	if _, err := i.rt.UpdatePodSandboxResources(ctx(t), &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podID, Resources: &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 512 << 20},
	}); err != nil {
		t.Fatal(err)
	}
	if got := p.podMemory.Load(); got != 512<<20 {
		t.Fatalf("UpdatePodSandbox passed memory limit %d", got)
	}
	// An unsolicited update from the plugin reaches the cgroup and the spec,
	// and leaves the other limits as they were.
	upd := &api.ContainerUpdate{ContainerId: id, Linux: &api.LinuxContainerUpdate{}}
	upd.SetLinuxMemoryLimit(200 << 20)
	if failed, err := s.UpdateContainers([]*api.ContainerUpdate{upd}); err != nil || len(failed) != 0 {
		t.Fatalf("unsolicited update: failed %v, %v", failed, err)
	}
	if got := memoryLimit(t, spec.Linux.CgroupsPath); got != "209715200" {
		t.Fatalf("memory limit after the plugin's update = %s", got)
	}
	if l := readSpec(t, i, id).Linux.Resources.Memory.Limit; l == nil || *l != 200<<20 {
		t.Fatalf("spec memory limit after the plugin's update = %v", l)
	}

	exited := i.run(t, podID, pod, ctrConfig("nri-exits", "exit 3"))
	if st := i.waitExited(t, exited, 10*time.Second); st.ExitCode != 3 {
		t.Fatalf("exit code %d", st.ExitCode)
	}
	waitSubsequence(t, p, exited, "CreateContainer", "PostCreateContainer", "StartContainer", "StopContainer")
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: exited}); err != nil {
		t.Fatal(err)
	}
	waitSubsequence(t, p, exited, "CreateContainer", "PostCreateContainer", "StartContainer", "StopContainer", "RemoveContainer")

	i.stopRemove(t, podID)
	waitEvents(t, p, id, "CreateContainer", "PostCreateContainer", "StartContainer", "PostStartContainer",
		"UpdateContainer", "PostUpdateContainer", "StopContainer", "RemoveContainer")
	waitEvents(t, p, podID, "RunPodSandbox", "UpdatePodSandbox", "StopPodSandbox", "RemovePodSandbox")
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// A plugin that fails RunPodSandbox or CreateContainer fails the CRI call:
// nothing of the pod or container is left or listed, and a retry works.
func TestNRIFailingHookLeavesNothing(t *testing.T) {
	i := newInstance(t, withRegistry(), allowHostMounts)
	i.pull(t, busybox)
	p, _ := i.startNRIPlugin(t)

	p.failRun.Store(true)
	cfg := podConfig("nrifail")
	if _, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg}); err == nil ||
		!strings.Contains(err.Error(), "refuses the pod") {
		t.Fatalf("RunPodSandbox with a failing NRI hook: %v", err)
	}
	failedPod := p.lastID("RunPodSandbox")
	if failedPod == "" {
		t.Fatal("the plugin never saw RunPodSandbox")
	}
	pods, err := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if err != nil || len(pods.Items) != 0 {
		t.Fatalf("pods listed after a failed RunPodSandbox: %v %v", pods, err)
	}
	i.assertNothingLeft(t, map[string]podInfo{failedPod: {
		NetNS: filepath.Join(i.dir, "state", "netns", failedPod), Cgroup: filepath.Join(i.cgParent, failedPod),
	}})
	waitEvents(t, p, failedPod, "RunPodSandbox", "StopPodSandbox", "RemovePodSandbox")

	p.failRun.Store(false)
	cfg.LogDirectory = filepath.Join(i.dir, "logs", cfg.Metadata.Name)
	podID := i.runPod(t, cfg)
	_, podInf := i.status(t, podID)

	p.failCreate.Store(true)
	ccfg := ctrConfig("nrifail", "sleep 1000")
	if _, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: ccfg, SandboxConfig: cfg}); err == nil ||
		!strings.Contains(err.Error(), "refuses the container") {
		t.Fatalf("CreateContainer with a failing NRI hook: %v", err)
	}
	failedCtr := p.lastID("CreateContainer")
	ctrs, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if err != nil || len(ctrs.Containers) != 0 {
		t.Fatalf("containers listed after a failed CreateContainer: %v %v", ctrs, err)
	}
	i.assertCtrGone(t, failedCtr)
	waitEvents(t, p, failedCtr, "CreateContainer", "StopContainer", "RemoveContainer")

	p.failCreate.Store(false)
	id := i.run(t, podID, cfg, ccfg) // the same name again: nothing holds it
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// memoryLimit reads the memory limit of the cgroup at path (cgroupfs
// notation), v1 or v2.
func memoryLimit(t *testing.T, path string) string {
	t.Helper()
	for _, f := range []string{"/sys/fs/cgroup/memory" + path + "/memory.limit_in_bytes", "/sys/fs/cgroup" + path + "/memory.max"} {
		if data, err := os.ReadFile(f); err == nil {
			return strings.TrimSpace(string(data))
		}
	}
	t.Fatalf("no memory limit file for cgroup %s", path)
	return ""
}

func readSpec(t *testing.T, i *instance, id string) specs.Spec {
	t.Helper()
	var spec specs.Spec
	data, err := os.ReadFile(filepath.Join(i.dir, "state", "containers", id, "config.json"))
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(data, &spec); err != nil {
		t.Fatal(err)
	}
	return spec
}

// TestNRIPluginInjectsCDIDevices: a CDI device an NRI plugin's adjustment
// names is resolved by the node's CDI registry, as the CRI's cdi_devices
// are (node, env); an unknown one fails CreateContainer naming it and
// leaves nothing.
func TestNRIPluginInjectsCDIDevices(t *testing.T) {
	c := newCDIInstance(t, allowHostMounts)
	c.writeSpec(t, "nri.json", cdiSpec(cdiDevice("nri", map[string]any{
		"env":         []string{"NRI_CDI=from-plugin"},
		"deviceNodes": []map[string]any{{"path": "/dev/nri-null", "hostPath": filepath.Join(c.host, "null")}},
	})))
	p, _ := c.startNRIPlugin(t)
	p.cdiDevice.Store("minicri.test/dev=nri")
	podID, pod := c.podWithLogs(t, "nri-cdi")
	_, podInf := c.status(t, podID)
	id := c.run(t, podID, pod, ctrConfig("nri-cdi", `echo "env=$NRI_CDI"; echo x > /dev/nri-null && echo null-written; echo done; sleep 1000`))
	lines := waitLog(t, c.ctrStatus(t, id).LogPath, "done", 10*time.Second)
	got := map[string]bool{}
	for _, l := range lines {
		got[l.content] = true
	}
	for _, want := range []string{"env=from-plugin", "null-written"} {
		if !got[want] {
			t.Errorf("container did not print %q; it printed %v", want, lines)
		}
	}

	p.cdiDevice.Store("minicri.test/dev=absent")
	_, err := c.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{
		PodSandboxId: podID, Config: ctrConfig("nri-cdi-absent", "sleep 1000"), SandboxConfig: pod,
	})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "minicri.test/dev=absent") {
		t.Errorf("CreateContainer with a plugin's unknown CDI device = %v, want FailedPrecondition naming it", err)
	}
	if ids := c.containersOf(t, podID); len(ids) != 1 {
		t.Errorf("containers of the pod = %v, want only %s", ids, id)
	}
	c.stopRemove(t, podID)
	c.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestNRIRunPodSandboxSeesPodResources: the pod-level resources and
// overhead the kubelet sends with RunPodSandbox reach the plugins.
func TestNRIRunPodSandboxSeesPodResources(t *testing.T) {
	i := newInstance(t)
	p, _ := i.startNRIPlugin(t)
	cfg := podConfig("nri-res")
	cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 128 << 20, CpuShares: 512}
	cfg.Linux.Overhead = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 16 << 20}
	podID := i.runPod(t, cfg)
	_, podInf := i.status(t, podID)
	if got := p.runMemory.Load(); got != 144<<20 {
		t.Errorf("RunPodSandbox passed pod memory + overhead %d, want %d", got, 144<<20)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

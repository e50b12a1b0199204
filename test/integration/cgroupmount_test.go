package integration

import (
	"bufio"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CRI v0.38's cgroup_mount_mode and cgroupns_options (KEP-5474, and the
// cgroup namespace option the kubelet may send): what is refused, with which
// code, leaving nothing behind (on any host), and on a cgroup v2 host with
// nsdelegate what they give (cgroupmount_v2_test.go).

// hostNSDelegate reports whether the host's /sys/fs/cgroup is cgroup v2
// mounted with nsdelegate: what READ_WRITE needs.
func hostNSDelegate() bool {
	if !hostUnified() {
		return false
	}
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		return false
	}
	defer f.Close()
	opts := ""
	s := bufio.NewScanner(f)
	for s.Scan() {
		pre, post, ok := strings.Cut(s.Text(), " - ")
		if fields := strings.Fields(pre); ok && len(fields) > 4 && fields[4] == "/sys/fs/cgroup" {
			if f := strings.Fields(post); len(f) > 2 {
				opts = f[2] // the last mount on the point wins
			}
		}
	}
	return slices.Contains(strings.Split(opts, ","), "nsdelegate")
}

// cgroupCtr is a busybox container with the given cgroup options.
func cgroupCtr(name, script string, privileged bool, mode runtimeapi.CgroupMountMode, ns *runtimeapi.CgroupNamespace) *runtimeapi.ContainerConfig {
	cfg := ctrConfig(name, script)
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Privileged: privileged, CgroupMountMode: mode,
		NamespaceOptions: &runtimeapi.NamespaceOption{CgroupnsOptions: ns},
	}
	return cfg
}

func cgroupNS(m runtimeapi.NamespaceMode) *runtimeapi.CgroupNamespace {
	return &runtimeapi.CgroupNamespace{Mode: m}
}

// cgroupLeftovers is what a container or pod creation could leave: listed
// containers and pods, container directories, cgroups beside the pod's
// pause, mounts under the instance.
func (i *instance) cgroupLeftovers(t *testing.T, pauseCgroupDir string) []string {
	t.Helper()
	var out []string
	cs, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range cs.Containers {
		out = append(out, "container "+c.Id)
	}
	ps, err := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range ps.Items {
		out = append(out, "pod "+p.Id)
	}
	for _, d := range []string{filepath.Join(i.dir, "root", "containers"), filepath.Join(i.dir, "state", "containers")} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			out = append(out, "directory "+filepath.Join(d, e.Name()))
		}
	}
	entries, _ := os.ReadDir(filepath.Dir(pauseCgroupDir))
	for _, e := range entries {
		if e.IsDir() {
			out = append(out, "cgroup "+e.Name())
		}
	}
	for _, m := range mountsUnder(i.dir) {
		out = append(out, "mount "+m)
	}
	slices.Sort(out)
	return out
}

// pauseCgroupDir is the pause's cgroup directory in the hierarchy that
// holds memory.
func pauseCgroupDir(t *testing.T, pid int) string {
	t.Helper()
	if hostUnified() {
		return filepath.Join("/sys/fs/cgroup", procCgroup(t, pid))
	}
	return filepath.Join("/sys/fs/cgroup/memory", procCgroup(t, pid))
}

func wantRefused(t *testing.T, err error, code codes.Code, msg string) {
	t.Helper()
	if status.Code(err) != code || !strings.Contains(status.Convert(err).Message(), msg) {
		t.Fatalf("got %v; want %v saying %q", err, code, msg)
	}
}

// TestCgroupOptionRefusals: the refusals of the CRI's table, each with its
// code and a message that says why, and nothing created; then what Status
// advertises, which must match what is refused here.
func TestCgroupOptionRefusals(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := i.logPodConfig("cgrefuse")
	pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	cgDir := pauseCgroupDir(t, podInf.PID)
	before := i.cgroupLeftovers(t, cgDir)

	type refusal struct {
		name       string
		privileged bool
		mode       runtimeapi.CgroupMountMode
		ns         *runtimeapi.CgroupNamespace
		code       codes.Code
		msg        string
	}
	cases := []refusal{
		{"POD", false, 0, cgroupNS(runtimeapi.NamespaceMode_POD), codes.InvalidArgument, "cgroup namespace mode POD is not supported"},
		{"TARGET", false, 0, cgroupNS(runtimeapi.NamespaceMode_TARGET), codes.InvalidArgument, "cgroup namespace mode TARGET is not supported"},
		{"READ_ONLY privileged", true, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_ONLY, nil, codes.InvalidArgument,
			"READ_ONLY cannot be honoured for a privileged container"},
		{"READ_WRITE NODE unprivileged", false, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE, cgroupNS(runtimeapi.NamespaceMode_NODE),
			codes.InvalidArgument, "cgroup namespace NODE would give it the host's cgroups"},
	}
	switch {
	case !hostUnified():
		cases = append(cases,
			refusal{"READ_WRITE on cgroup v1", false, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE, nil, codes.FailedPrecondition,
				"READ_WRITE needs cgroup v2 mounted with nsdelegate: this node's /sys/fs/cgroup is cgroup v1"},
			refusal{"READ_WRITE privileged on cgroup v1", true, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE, nil, codes.FailedPrecondition,
				"this node's /sys/fs/cgroup is cgroup v1"},
			refusal{"CONTAINER on cgroup v1", false, 0, cgroupNS(runtimeapi.NamespaceMode_CONTAINER), codes.FailedPrecondition,
				"cgroup namespace mode CONTAINER needs cgroup v2"},
			refusal{"CONTAINER privileged on cgroup v1", true, 0, cgroupNS(runtimeapi.NamespaceMode_CONTAINER), codes.FailedPrecondition,
				"cgroup namespace mode CONTAINER needs cgroup v2"})
	case !hostNSDelegate():
		cases = append(cases, refusal{"READ_WRITE without nsdelegate", false, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE, nil,
			codes.FailedPrecondition, "mounted without it"})
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := cgroupCtr("refused", "sleep 1000", c.privileged, c.mode, c.ns)
			_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
			wantRefused(t, err, c.code, c.msg)
			if after := i.cgroupLeftovers(t, cgDir); !slices.Equal(after, before) {
				t.Fatalf("a refused CreateContainer left something: before %v, after %v", before, after)
			}
		})
	}

	t.Run("pod sandbox cgroupns_options", func(t *testing.T) {
		bad := i.logPodConfig("cgrefusepod")
		bad.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{CgroupnsOptions: cgroupNS(runtimeapi.NamespaceMode_CONTAINER)}}
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: bad})
		wantRefused(t, err, codes.InvalidArgument, "cgroupns_options must not be set for a pod sandbox")
		if after := i.cgroupLeftovers(t, cgDir); !slices.Equal(after, before) {
			t.Fatalf("a refused RunPodSandbox left something: before %v, after %v", before, after)
		}
	})

	t.Run("features", func(t *testing.T) {
		st, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := st.GetFeatures().GetCgroupMountMode(); got != hostNSDelegate() {
			t.Errorf("cgroup_mount_mode advertised %v; the host has cgroup v2 with nsdelegate: %v", got, hostNSDelegate())
		}
		for _, h := range st.GetRuntimeHandlers() {
			if got := h.GetFeatures().GetCgroupNamespaces(); got != hostUnified() {
				t.Errorf("handler %q: cgroup_namespaces %v; the host is cgroup v2: %v", h.Name, got, hostUnified())
			}
		}
	})
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// A container's cgroup is found from its process, not from the path minicri
// would give it: the cgroupfs driver puts it at <parent>/<id> in every v1
// hierarchy (or in the v2 one), the systemd driver in the scope
// minicri-<id>.scope of a slice. So the tests read the same limits on a v1
// host and in the VM lab (cgroup v2, systemd as PID 1).

// ctrPid is the PID of the running container id's process.
func (i *instance) ctrPid(t *testing.T, id string) int {
	t.Helper()
	resp, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
	if err != nil {
		t.Fatalf("ContainerStatus %s: %v", id, err)
	}
	var info struct{ Pid int }
	jsonUnmarshal(t, resp.Info["info"], &info)
	if info.Pid <= 0 {
		t.Fatalf("container %s: no pid in %s", id, resp.Info["info"])
	}
	return info.Pid
}

// ctrCgroupDir is the directory of container id's cgroup: in the v2 hierarchy,
// or in the v1 hierarchy of controller.
func (i *instance) ctrCgroupDir(t *testing.T, id, controller string) string {
	t.Helper()
	pid := i.ctrPid(t, id)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", pid))
	if err != nil {
		t.Fatalf("cgroup of container %s (pid %d): %v", id, pid, err)
	}
	v2 := hostUnified()
	for _, l := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if v2 && parts[0] == "0" {
			return filepath.Join("/sys/fs/cgroup", parts[2])
		}
		if !v2 && strings.Contains(","+parts[1]+",", ","+controller+",") {
			return filepath.Join("/sys/fs/cgroup", controller, parts[2])
		}
	}
	t.Fatalf("container %s (pid %d): no %s cgroup in %q", id, pid, controller, b)
	return ""
}

// ctrCgroupFile reads a file of container id's cgroup: v1file in controller's
// v1 hierarchy, v2file on a cgroup v2 host.
func (i *instance) ctrCgroupFile(t *testing.T, id, controller, v1file, v2file string) string {
	t.Helper()
	f := v1file
	if hostUnified() {
		f = v2file
	}
	b, err := os.ReadFile(filepath.Join(i.ctrCgroupDir(t, id, controller), f))
	if err != nil {
		t.Fatalf("container %s: read cgroup file: %v", id, err)
	}
	return strings.TrimSpace(string(b))
}

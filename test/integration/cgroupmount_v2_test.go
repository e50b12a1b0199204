package integration

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// delegateScript, run in a container with a writable cgroupfs of its own
// cgroup namespace, does what a container's own cgroup manager would: it
// moves every process of its cgroup to a leaf (no process may sit beside
// enabled controllers), enables memory, creates a child cgroup, limits it
// and moves a process into it; then it tries to raise its own limit,
// which nsdelegate must refuse.
const delegateScript = `set -e
cd /sys/fs/cgroup
mkdir leaf
for p in $(cat cgroup.procs); do echo $p > leaf/cgroup.procs 2>/dev/null || true; done
echo +memory > cgroup.subtree_control
mkdir child
echo 67108864 > child/memory.max
sleep 1000 </dev/null >/dev/null 2>&1 &
echo $! > child/cgroup.procs
echo "max=$(cat child/memory.max)"
echo "cgroup=$(cat /proc/$!/cgroup)"
if (echo max > memory.max) 2>/dev/null; then echo own=writable; else echo own=refused; fi`

func needNSDelegate(t *testing.T) {
	t.Helper()
	if !hostNSDelegate() {
		t.Skip("READ_WRITE needs cgroup v2 mounted with nsdelegate; this host's /sys/fs/cgroup is not (cgroup v2: " +
			fmt.Sprint(hostUnified()) + "): its refusal is TestCgroupOptionRefusals")
	}
}

func fileOwner(t *testing.T, p string) int {
	t.Helper()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return int(fi.Sys().(*syscall.Stat_t).Uid)
}

// TestCgroupReadWriteDelegates: an unprivileged container with
// cgroup_mount_mode READ_WRITE manages its own cgroup (child cgroup,
// memory.max, a process moved in) but cannot raise its own limit; in a
// pod user namespace too (its cgroup is its mapped root's), and under the
// runc handler (the same spec, the same delegation).
func TestCgroupReadWriteDelegates(t *testing.T) {
	needNSDelegate(t)
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	for _, c := range []struct {
		name    string
		userns  bool
		handler string
	}{{"plain", false, ""}, {"userns", true, ""}, {"runc", false, "runc"}} {
		t.Run(c.name, func(t *testing.T) {
			pod := i.logPodConfig("cgrw")
			owner := 0
			if c.userns {
				pod.Linux.SecurityContext = usernsPodConfig("x", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536)).Linux.SecurityContext
				owner = usernsHostID
			}
			resp, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: pod, RuntimeHandler: c.handler})
			if err != nil {
				t.Fatalf("RunPodSandbox: %v", err)
			}
			cfg := cgroupCtr("rw", "sleep 1000", false, runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE, nil)
			cfg.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 256 << 20}
			id := i.run(t, resp.PodSandboxId, pod, cfg)
			dir := i.ctrCgroupDir(t, id, "memory")
			checkDelegated(t, dir, owner)
			code, out := i.execIn(t, id, "sh", "-c", delegateScript)
			for _, want := range []string{"max=67108864", "cgroup=0::/child", "own=refused"} {
				if code != 0 || !strings.Contains(out, want) {
					t.Fatalf("in the container (exit %d), want %q:\n%s", code, want, out)
				}
			}
			if b, err := os.ReadFile(filepath.Join(dir, "child", "memory.max")); err != nil || strings.TrimSpace(string(b)) != "67108864" {
				t.Fatalf("host side: child memory.max %q, %v", b, err)
			}
			if b, _ := os.ReadFile(filepath.Join(dir, "child", "cgroup.procs")); len(strings.Fields(string(b))) != 1 {
				t.Fatalf("host side: child cgroup.procs %q, want the moved process", b)
			}
			i.stopRemove(t, resp.PodSandboxId)
			waitGone(t, dir)
		})
	}
}

// checkDelegated: the container's cgroup and its delegatable files are
// owner's, its limits root's.
func checkDelegated(t *testing.T, dir string, owner int) {
	t.Helper()
	for _, f := range []string{"", "cgroup.procs", "cgroup.subtree_control", "cgroup.threads"} {
		if got := fileOwner(t, filepath.Join(dir, f)); got != owner {
			t.Errorf("%s/%s owned by %d, want %d", dir, f, got, owner)
		}
	}
	if got := fileOwner(t, filepath.Join(dir, "memory.max")); got != 0 {
		t.Errorf("%s/memory.max owned by %d, want root's", dir, got)
	}
}

func waitGone(t *testing.T, dir string) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		if _, err := os.Stat(dir); errors.Is(err, os.ErrNotExist) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("cgroup %s (with the container's own child cgroups) outlived its pod", dir)
		}
	}
}

package integration

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const mib = 1 << 20

// cgroupFileOf reads file in the memory cgroup dir (v1) or the unified one.
func cgroupFileOf(t *testing.T, dir, file string) string {
	t.Helper()
	root := "/sys/fs/cgroup/memory"
	if hostUnified() {
		root = "/sys/fs/cgroup"
	}
	b, err := os.ReadFile(filepath.Join(root, dir, file))
	if err != nil {
		t.Fatalf("read %s of cgroup %s: %v", file, dir, err)
	}
	return strings.TrimSpace(string(b))
}

func hasCgroupFile(dir, file string) bool {
	root := "/sys/fs/cgroup/memory"
	if hostUnified() {
		root = "/sys/fs/cgroup"
	}
	_, err := os.Stat(filepath.Join(root, dir, file))
	return err == nil
}

// The kubelet's runtime-only stats (KEP-2371) read available_bytes, swap
// and io from the CRI. A container with a memory limit reads available =
// limit - working set; one without reads none; swap is the swap limit
// minus swap use; io carries pressure where the kernel has it per cgroup.
func TestContainerStatsAvailableSwapAndIO(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "statsfields")
	limited := ctrConfig("limited", "head -c 8388608 /dev/zero | cat > /dev/null; sleep 60")
	limited.Linux.Resources = &runtimeapi.LinuxContainerResources{MemoryLimitInBytes: 64 * mib, MemorySwapLimitInBytes: 96 * mib}
	lid := i.run(t, podID, pod, limited)
	uid := i.run(t, podID, pod, ctrConfig("unlimited", "sleep 60"))
	time.Sleep(300 * time.Millisecond)

	resp, err := i.rt.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: lid})
	if err != nil {
		t.Fatal(err)
	}
	st := resp.Stats
	mem := st.GetMemory()
	cg := procCgroup(t, i.ctrPID(t, lid))
	limitFile := map[bool]string{false: "memory.limit_in_bytes", true: "memory.max"}[hostUnified()]
	if got := cgroupFileOf(t, cg, limitFile); got != strconv.Itoa(64*mib) {
		t.Fatalf("the container's cgroup %s reads %s, want the 64 MiB limit", limitFile, got)
	}
	if mem.GetAvailableBytes() == nil || mem.GetWorkingSetBytes().GetValue() == 0 ||
		mem.GetAvailableBytes().GetValue()+mem.GetWorkingSetBytes().GetValue() != 64*mib {
		t.Fatalf("available %v + working set %v, want the 64 MiB limit", mem.GetAvailableBytes(), mem.GetWorkingSetBytes())
	}
	// The working set is the cgroup's own: usage minus inactive file pages.
	usageFile := map[bool]string{false: "memory.usage_in_bytes", true: "memory.current"}[hostUnified()]
	usage, _ := strconv.ParseUint(cgroupFileOf(t, cg, usageFile), 10, 64)
	if ws := mem.GetWorkingSetBytes().GetValue(); ws > usage+mib || ws+4*mib < usage/2 {
		t.Errorf("working set %d far from the cgroup's usage %d", ws, usage)
	}

	swap := st.GetSwap()
	if swap == nil || swap.GetSwapUsageBytes() == nil || swap.Timestamp == 0 {
		t.Fatalf("swap %v: want usage and a timestamp", swap)
	}
	swapLimitFile := map[bool]string{false: "memory.memsw.limit_in_bytes", true: "memory.swap.max"}[hostUnified()]
	if hasCgroupFile(cg, swapLimitFile) {
		// memory+swap 96 MiB over memory 64 MiB: 32 MiB of swap.
		if swap.GetSwapAvailableBytes() == nil || swap.GetSwapAvailableBytes().GetValue()+swap.GetSwapUsageBytes().GetValue() != 32*mib {
			t.Errorf("swap available %v + usage %v, want 32 MiB (%s = %s)", swap.GetSwapAvailableBytes(), swap.GetSwapUsageBytes(),
				swapLimitFile, cgroupFileOf(t, cg, swapLimitFile))
		}
	} else if swap.GetSwapAvailableBytes() != nil {
		t.Errorf("no swap controller, yet swap available %v", swap.GetSwapAvailableBytes())
	}
	if psi := hostUnified() && hasCgroupFile(cg, "io.pressure"); (st.GetIo().GetPsi() != nil) != psi ||
		(st.GetMemory().GetPsi() != nil) != psi || (st.GetCpu().GetPsi() != nil) != psi {
		t.Errorf("io %v, memory psi %v, cpu psi %v: want pressure exactly where the cgroup has it (%v)", st.GetIo(), mem.GetPsi(), st.GetCpu().GetPsi(), psi)
	}

	resp, err = i.rt.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: uid})
	if err != nil {
		t.Fatal(err)
	}
	if a := resp.Stats.GetMemory().GetAvailableBytes(); a != nil {
		t.Errorf("a container without a memory limit reads available %v", a)
	}
	i.stopRemove(t, podID)
}

// A pod in a cgroup of its own (the kubelet's pod<UID>, named by
// cgroup_parent) reads that cgroup's limit as available = limit - working
// set and its pressure; a pod in the shared default parent reads neither
// (not its pause's).
func TestPodSandboxStatsAvailableAndPressure(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	tag := fmt.Sprintf("%d%d", os.Getpid(), time.Now().UnixNano()%100000)
	slice := "minicriit-stats" + tag + ".slice"
	t.Cleanup(func() {
		removeCgroupDirs("/minicriit.slice/" + slice)
		removeCgroupDirs("/minicriit.slice")
	})
	cfg := podConfig("podstats")
	cfg.LogDirectory = filepath.Join(i.dir, "logs", cfg.Metadata.Name)
	cfg.Linux.CgroupParent = slice
	own := i.runPod(t, cfg)
	_, info := i.status(t, own)
	podCg := path.Dir(procCgroup(t, info.PID))
	limitFile := map[bool]string{false: "memory.limit_in_bytes", true: "memory.max"}[hostUnified()]
	root := map[bool]string{false: "/sys/fs/cgroup/memory", true: "/sys/fs/cgroup"}[hostUnified()]
	if err := os.WriteFile(filepath.Join(root, podCg, limitFile), []byte(strconv.Itoa(128*mib)), 0o644); err != nil {
		t.Fatalf("limit the pod's cgroup %s: %v", podCg, err)
	}
	i.run(t, own, cfg, ctrConfig("c", "sleep 60"))
	shared, sharedCfg := i.podWithLogs(t, "podstats-shared")
	i.run(t, shared, sharedCfg, ctrConfig("c", "sleep 60"))
	time.Sleep(300 * time.Millisecond)

	stats := func(id string) *runtimeapi.LinuxPodSandboxStats {
		resp, err := i.rt.PodSandboxStats(ctx(t), &runtimeapi.PodSandboxStatsRequest{PodSandboxId: id})
		if err != nil {
			t.Fatal(err)
		}
		return resp.Stats.GetLinux()
	}
	s := stats(own)
	mem := s.GetMemory()
	if mem.GetAvailableBytes() == nil || mem.GetWorkingSetBytes().GetValue() == 0 ||
		mem.GetAvailableBytes().GetValue()+mem.GetWorkingSetBytes().GetValue() != 128*mib {
		t.Errorf("pod in %s: available %v + working set %v, want its 128 MiB limit", podCg, mem.GetAvailableBytes(), mem.GetWorkingSetBytes())
	}
	psi := hostUnified() && hasCgroupFile(podCg, "io.pressure")
	if (s.GetIo().GetPsi() != nil) != psi || (mem.GetPsi() != nil) != psi || (s.GetCpu().GetPsi() != nil) != psi {
		t.Errorf("pod io %v, memory psi %v, cpu psi %v: want the pod cgroup's pressure exactly where it has one (%v)", s.GetIo(), mem.GetPsi(), s.GetCpu().GetPsi(), psi)
	}
	s = stats(shared)
	if s.GetMemory().GetAvailableBytes() != nil || s.GetIo() != nil || s.GetCpu().GetPsi() != nil || s.GetMemory().GetPsi() != nil {
		t.Errorf("pod in the shared parent: available %v, io %v, cpu psi %v: want none", s.GetMemory().GetAvailableBytes(), s.GetIo(), s.GetCpu().GetPsi())
	}
	i.stopRemove(t, own)
	i.stopRemove(t, shared)
	i.assertNothingLeft(t, map[string]podInfo{own: info})
}

// ImageFsInfo's container_filesystems is where writable layers live: the
// sum of the containers' writable layers, on their filesystem.
func TestImageFsInfoContainerFilesystems(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "ctrfs")
	id := i.run(t, podID, pod, ctrConfig("writer", "head -c 4194304 /dev/urandom > /big && echo written; sleep 60"))
	waitLog(t, filepath.Join(pod.LogDirectory, "writer.log"), "written", 10*time.Second)
	resp, err := i.images().ImageFsInfo(ctx(t), &runtimeapi.ImageFsInfoRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(resp.ImageFilesystems) != 1 || len(resp.ContainerFilesystems) != 1 {
		t.Fatalf("image filesystems %v, container filesystems %v: want one each", resp.ImageFilesystems, resp.ContainerFilesystems)
	}
	cf := resp.ContainerFilesystems[0]
	st, err := i.rt.ContainerStats(ctx(t), &runtimeapi.ContainerStatsRequest{ContainerId: id})
	if err != nil {
		t.Fatal(err)
	}
	wl := st.Stats.GetWritableLayer()
	if cf.GetUsedBytes().GetValue() < 4*mib || cf.GetUsedBytes().GetValue() != wl.GetUsedBytes().GetValue() ||
		cf.GetInodesUsed().GetValue() != wl.GetInodesUsed().GetValue() {
		t.Errorf("container filesystems use %v bytes, %v inodes; the only writable layer %v, %v (holds a 4 MiB file)",
			cf.GetUsedBytes(), cf.GetInodesUsed(), wl.GetUsedBytes(), wl.GetInodesUsed())
	}
	if mp := cf.GetFsId().GetMountpoint(); mp == "" || mp != wl.GetFsId().GetMountpoint() || cf.Timestamp == 0 {
		t.Errorf("container filesystem on %q (timestamp %d), writable layer on %q", mp, cf.Timestamp, wl.GetFsId().GetMountpoint())
	}
	i.stopRemove(t, podID)
}

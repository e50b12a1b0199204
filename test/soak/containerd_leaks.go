package main

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"syscall"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// leftovers: what containerd keeps of a pod: its bundles, CRI dirs and runc
// state naming it, its shim's socket, its containers' cgroups, and the pod
// or its containers still listed after RemovePodSandbox; on the node at
// the end, mounts in its mount namespace under the instance's dir (but the
// root), any netns pin, CRI dir, bundle, runc state or shim socket left,
// and tasks its metrics collector still holds.
func (c *containerd) leftovers(s *soak, p *pod) []string {
	i := s.inst
	if p == nil {
		return c.nodeLeftovers(i)
	}
	out := recordsNaming(p.ids(), i.root, i.state, filepath.Join(i.dir, "runc"))
	if sock := shimSocket(i, p.id); exists(sock) {
		out = append(out, "shim socket "+sock)
	}
	for _, id := range []string{p.logger, p.exiter} {
		if id == "" {
			continue
		}
		for _, d := range cgroupDirs(filepath.Join(i.cgParent, id)) {
			out = append(out, "cgroup "+d)
		}
	}
	return append(out, stillListed(s, p)...)
}

// ctrdRecords are containerd's dirs of one entry per pod, container, netns
// pin, task bundle or runc container (relative to the instance's dir).
var ctrdRecords = []string{"state/io.containerd.grpc.v1.cri/netns", "state/io.containerd.grpc.v1.cri/sandboxes",
	"state/io.containerd.grpc.v1.cri/containers", "root/io.containerd.grpc.v1.cri/sandboxes",
	"root/io.containerd.grpc.v1.cri/containers", "state/io.containerd.runtime.v2.task/k8s.io",
	"state/io.containerd.sandbox.controller.v1.shim", "runc/k8s.io", "run/containerd/s"}

// shimSocket is where the shim of pod id listens: /run/containerd/s (the
// instance's run dir, bound there) and the hash of containerd's address,
// namespace and the pod's id (pkg/shim.CreateSocketAddress).
func shimSocket(i *instance, id string) string {
	return filepath.Join(i.dir, "run", "containerd", "s", fmt.Sprintf("%x", sha256.Sum256([]byte(filepath.Join(i.sock, "k8s.io", id)))))
}

func exists(path string) bool {
	_, err := os.Lstat(path)
	return err == nil
}

func (c *containerd) nodeLeftovers(i *instance) []string {
	var out []string
	if c.holder != nil {
		for _, m := range mountsIn(fmt.Sprintf("/proc/%d/mountinfo", c.holder.Process.Pid), i.dir) {
			if m != i.root {
				out = append(out, "mount "+m)
			}
		}
	}
	out = append(out, recordsIn(i.dir, ctrdRecords...)...)
	return append(out, collectedTasks(i)...)
}

// statTask is containerd's error when its cgroups metrics collector
// cannot stat a task it holds.
var statTask = regexp.MustCompile(`msg="stat task ([0-9a-f]{64})"`)

// collectedTasks: with every pod removed, a scrape of containerd's metrics
// must not stat any task; those it does are tasks its collector still holds
// (a task's entry goes with its deletion through the task service, which a
// task of a killed shim never sees).
func collectedTasks(i *instance) []string {
	st, err := os.Stat(i.logPath())
	if err != nil {
		return nil
	}
	if _, err := scrape(i.daemon.metricsURL(i)); err != nil {
		return nil
	}
	f, err := os.Open(i.logPath())
	if err != nil {
		return nil
	}
	defer f.Close()
	b, _ := io.ReadAll(io.NewSectionReader(f, st.Size(), 1<<24))
	seen := map[string]bool{}
	var out []string
	for _, m := range statTask.FindAllStringSubmatch(string(b), -1) {
		if !seen[m[1]] {
			seen[m[1]] = true
			out = append(out, "task "+short(m[1])+" still in the metrics collector (stat task: ttrpc closed)")
		}
	}
	return out
}

// stillListed: the pod, or a container of it, that the runtime still lists
// (an error of the listing is no answer: the check runs again).
func stillListed(s *soak, p *pod) []string {
	var out []string
	_ = s.rpc.call("ListPodSandbox", func(ctx context.Context) error {
		r, err := s.inst.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: &runtimeapi.PodSandboxFilter{Id: p.id}})
		for _, it := range r.GetItems() {
			out = append(out, fmt.Sprintf("pod still listed (%v)", it.State))
		}
		return err
	})
	_ = s.rpc.call("ListContainers", func(ctx context.Context) error {
		r, err := s.inst.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{PodSandboxId: p.id}})
		for _, it := range r.GetContainers() {
			out = append(out, fmt.Sprintf("container %s still listed (%v)", short(it.Id), it.State))
		}
		return err
	})
	return out
}

// release, once containerd is stopped: kills what it left (processes
// naming the instance's dir: shims, plugins; processes in the soak's
// cgroups: containers of a dead shim), which the checks have counted, then
// the mount namespace's holder.
func (c *containerd) release(i *instance) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		pids := append(pidsMentioning(i.dir), pidsInCgroups(i.cgParent)...)
		if len(pids) == 0 || time.Now().After(deadline) {
			break
		}
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if c.holder != nil {
		_ = c.holder.Process.Kill()
		_, _ = c.holder.Process.Wait()
		c.holder = nil
	}
}

// pidsMentioning: the pids of processesMentioning(s, 0).
func pidsMentioning(s string) []int {
	var out []int
	for _, p := range processesMentioning(s, 0) {
		var pid int
		if _, err := fmt.Sscanf(p, "%d", &pid); err == nil {
			out = append(out, pid)
		}
	}
	return out
}

// pidsInCgroups: the processes in the cgroups at path and below, in every
// hierarchy.
func pidsInCgroups(path string) []int {
	var out []int
	for _, d := range cgroupDirs(path) {
		for _, c := range append([]string{d}, cgroupChildren(d)...) {
			b, _ := os.ReadFile(filepath.Join(c, "cgroup.procs"))
			for _, f := range strings.Fields(string(b)) {
				var pid int
				if _, err := fmt.Sscanf(f, "%d", &pid); err == nil && pid != os.Getpid() {
					out = append(out, pid)
				}
			}
		}
	}
	return out
}

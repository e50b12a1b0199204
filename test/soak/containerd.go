package main

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// containerd is SOAK_RUNTIME=containerd: containerd 2.x (make
// soak-containerd: 2.4, its shim and runc from hack/bench-tools.sh, first on
// PATH) on the instance, as hack/containerd.sh runs a private one: its own
// config, root (the loop-mounted ext4), state, socket, runc root, CNI
// conflist (the soak's wrapper, so that the CNI faults apply) and registry
// mirrors (hosts.toml), cgroupfs under the soak's cgroup parent. The shims'
// sockets go to /run/containerd/s whatever the config says, so containerd
// runs in a private mount namespace where <dir>/run is bound on /run: one
// namespace for the whole run (a process of the soak holds it), that each
// restarted containerd enters, so that its mounts (netns pins, rootfs,
// shm) outlive a kill -9 as they would on a node.
type containerd struct {
	bin, runc, version string
	holder             *exec.Cmd // sleeps in the private mount namespace
}

func newContainerd() (*containerd, error) {
	bin, err := exec.LookPath("containerd")
	if err != nil {
		return nil, fmt.Errorf("containerd: %w (make soak-containerd puts hack/bench-tools.sh's first on PATH)", err)
	}
	runc, err := exec.LookPath("runc")
	if err != nil {
		return nil, err
	}
	out, err := exec.Command(bin, "--version").Output()
	if err != nil {
		return nil, fmt.Errorf("%s --version: %w", bin, err)
	}
	f := strings.Fields(string(out)) // containerd github.com/containerd/containerd/v2 v2.4.2
	if len(f) < 3 || !strings.HasPrefix(f[2], "v2.") {
		return nil, fmt.Errorf("%s is %q: the soak writes containerd 2.x's config (make soak-containerd builds 2.4)", bin, out)
	}
	return &containerd{bin: bin, runc: runc, version: f[2]}, nil
}

func (c *containerd) name() string    { return "containerd" }
func (c *containerd) monitor() string { return "shim" }
func (c *containerd) describe() string {
	return "containerd " + c.version + " (" + c.bin + ", runc " + c.runc + ")"
}
func (c *containerd) images() []string { return []string{pauseImage} }

func (c *containerd) metricsURL(i *instance) string { return "http://" + i.metrics + "/v1/metrics" }

// containerdConfig is a version 3 config (containerd 2.x): everything
// under the instance's dir, NRI off, pulls given up after 3 s without
// progress (minicri's no_progress_timeout in the soak).
const containerdConfig = `version = 3
root = %[1]q
state = %[2]q
imports = []
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.erofs", "io.containerd.snapshotter.v1.blockfile"]

[plugins]
  [plugins.'io.containerd.server.v1.grpc']
    address = %[3]q
  [plugins.'io.containerd.server.v1.ttrpc']
    address = "%[3]s.ttrpc"
  [plugins.'io.containerd.server.v1.metrics']
    address = %[4]q
  [plugins.'io.containerd.internal.v1.opt']
    path = "%[5]s/opt"
  [plugins.'io.containerd.nri.v1.nri']
    disable = true
  [plugins.'io.containerd.transfer.v1.local']
    config_path = %[6]q
  [plugins.'io.containerd.cri.v1.images']
    snapshotter = "overlayfs"
    image_pull_progress_timeout = "3s"
    [plugins.'io.containerd.cri.v1.images'.pinned_images]
      sandbox = %[7]q
    [plugins.'io.containerd.cri.v1.images'.registry]
      config_path = %[6]q
  [plugins.'io.containerd.cri.v1.runtime']
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    # As in hack/containerd.sh: this VM withholds CAP_SYS_RESOURCE.
    restrict_oom_score_adj = true
    cdi_spec_dirs = []
    enable_criu = false
    [plugins.'io.containerd.cri.v1.runtime'.containerd]
      default_runtime_name = "runc"
      [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"
        [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
          BinaryName = %[8]q
          Root = "%[5]s/runc"
          SystemdCgroup = false
    [plugins.'io.containerd.cri.v1.runtime'.cni]
      bin_dirs = %[9]s
      conf_dir = "%[5]s/net.d"
      max_conf_num = 1
  [plugins.'io.containerd.grpc.v1.cri']
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
`

// pauseImage is the sandbox image, pulled before the churn (the test
// registry serves a stand-in).
const pauseImage = "registry.k8s.io/pause:3.10.2"

func (c *containerd) configure(i *instance, _ string, binDirs []string) error {
	if binDirs == nil {
		return fmt.Errorf("containerd: no CNI conflist (SOAK_NETWORK=cni)")
	}
	for _, d := range []string{"run", "runc", "opt"} {
		if err := os.MkdirAll(filepath.Join(i.dir, d), 0o711); err != nil {
			return err
		}
	}
	if err := makeCgroup(i.cgParent); err != nil {
		return fmt.Errorf("cgroup parent %s: %w", i.cgParent, err)
	}
	dirs, _ := json.Marshal(binDirs)
	cfg := fmt.Sprintf(containerdConfig, i.root, i.state, i.sock, i.metrics, i.dir, i.hostsDir, pauseImage, c.runc, dirs)
	return os.WriteFile(filepath.Join(i.dir, "config.toml"), []byte(cfg), 0o644)
}

// command enters the private mount namespace (made at the first start).
func (c *containerd) command(i *instance) (*exec.Cmd, error) {
	if c.holder == nil {
		if err := c.hold(i); err != nil {
			return nil, err
		}
	}
	return exec.Command("nsenter", fmt.Sprintf("--mount=/proc/%d/ns/mnt", c.holder.Process.Pid), "--",
		c.bin, "--config", filepath.Join(i.dir, "config.toml"), "--root", i.root, "--state", i.state,
		"--address", i.sock, "--log-level", "info"), nil
}

// hold makes the private mount namespace: a process of its own that binds
// <dir>/run on /run, then sleeps until release kills it.
func (c *containerd) hold(i *instance) error {
	cmd := exec.Command("unshare", "--mount", "--propagation", "private", "--",
		"sh", "-c", `mount --bind "$1/run" /run && exec sleep infinity`, "sh", i.dir)
	cmd.Stdout, cmd.Stderr = os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	for n := 0; n < 500; n++ {
		if b, _ := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", cmd.Process.Pid)); strings.HasPrefix(string(b), "sleep\x00") {
			c.holder = cmd
			return nil
		}
		select {
		case <-done:
			return fmt.Errorf("the mount namespace for containerd: %v", cmd.ProcessState)
		case <-time.After(10 * time.Millisecond):
		}
	}
	_ = cmd.Process.Kill()
	return fmt.Errorf("the mount namespace for containerd: not ready in 5 s")
}

// podInfo reads containerd's verbose info (SandboxInfo: the pause pid, the
// spec's cgroupsPath, the metadata's netns); the monitor is the pod's shim.
func (c *containerd) podInfo(i *instance, id string, verbose map[string]string) (podInfo, error) {
	var v struct {
		PID  int `json:"pid"`
		Spec struct {
			Linux struct {
				CgroupsPath string `json:"cgroupsPath"`
			} `json:"linux"`
		} `json:"runtimeSpec"`
		Meta struct {
			Metadata struct{ NetNSPath string }
		} `json:"sandboxMetadata"`
	}
	if err := json.Unmarshal([]byte(verbose["info"]), &v); err != nil {
		return podInfo{}, err
	}
	return podInfo{PID: v.PID, MonitorPID: shimOf(i, id), NetNS: v.Meta.Metadata.NetNSPath, Cgroup: v.Spec.Linux.CgroupsPath}, nil
}

// shimOf is the pid of the shim serving pod id (one per pod: its
// containers are grouped with the sandbox), 0 when none is found.
func shimOf(i *instance, id string) int {
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		var pid int
		if _, err := fmt.Sscanf(e.Name(), "%d", &pid); err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		args := "\x00" + string(b)
		if err == nil && strings.Contains(args, "\x00-id\x00"+id+"\x00") && strings.Contains(args, "\x00"+i.sock+"\x00") {
			return pid
		}
	}
	return 0
}

// adjustPod: containerd takes the cgroup parent from the client, as from
// the kubelet: the soak's own, made by configure and removed at cleanup,
// so that nothing outside it is touched.
func (c *containerd) adjustPod(i *instance, cfg *runtimeapi.PodSandboxConfig) {
	cfg.Linux.CgroupParent = i.cgParent
}

// skips: every fault applies to containerd (the shim is its monitor); one
// session and two checks of minicri's do not.
func (c *containerd) skips() map[string]string {
	return map[string]string{
		skipWebSocket: "containerd's stream server (k8s.io/cri-streaming, the kubelet's) serves WebSocket up to " +
			"v4.channel.k8s.io, client-go's executor speaks v5 only (the API server's, not the kubelet's): an attach over SPDY instead",
		"minicri's records (root/sandboxes, state/sandboxes, ...)": "containerd keeps its pods in its bolt db: " +
			"ListPodSandbox/ListContainers after each removal instead, and its bundles, CRI dirs, runc state and shim socket",
		"the monitor pid of the verbose status": "containerd's names no shim: the shim is found by its -id and -address",
	}
}

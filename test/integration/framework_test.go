// Package integration runs the real minicri daemon as root against real
// namespaces, cgroups and CNI plugins, and checks what it leaves behind.
package integration

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

var instanceSeq atomic.Int32

// instance is one private minicri daemon with its own dirs, socket, bridge
// and subnet.
type instance struct {
	t                *testing.T
	dir              string
	sock             string
	bridge           string
	netName          string
	subnet           string
	cgParent         string
	confDir          string
	binDirs          []string
	noDefaultNetwork bool
	registry         bool   // mirrors point at the test registry (withRegistry)
	lazyPulls        bool   // [image] lazy = true (withLazyPulls, lazy_test.go)
	handler          string // RuntimeClass handler of every pod (runtimeclass_test.go)
	nriValidator     string // the [nri.default_validator] table's lines (withNRIValidator)
	bin              string // minicri binary (default minicriBin: MINICRI_BIN or bin/minicri)
	cmd              *exec.Cmd
	conn             *grpc.ClientConn
	rt               runtimeapi.RuntimeServiceClient
}

type option func(*instance)

// withConfDir uses a CNI config dir instead of the built-in network.
func withConfDir(dir string, binDirs ...string) option {
	return func(i *instance) { i.confDir = dir; i.binDirs = append(binDirs, "/opt/cni/bin") }
}

func minicriBin(t *testing.T) string {
	if b := os.Getenv("MINICRI_BIN"); b != "" {
		return b
	}
	b, _ := filepath.Abs("../../bin/minicri")
	if _, err := os.Stat(b); err != nil {
		t.Fatalf("minicri binary not built (make build): %v", err)
	}
	return b
}

func newInstance(t *testing.T, opts ...option) *instance {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("integration tests need root")
	}
	n := instanceSeq.Add(1)
	dir, err := os.MkdirTemp("", "minicri-it-")
	if err != nil {
		t.Fatal(err)
	}
	// Containers in a pod user namespace reach their rootfs as an
	// unprivileged host UID: every ancestor must be searchable.
	os.Chmod(dir, 0o711)
	i := &instance{
		t: t, dir: dir, sock: filepath.Join(dir, "minicri.sock"),
		bridge:  fmt.Sprintf("mcit%d-%d", os.Getpid()%1000, n),
		netName: fmt.Sprintf("minicri-it-%d", n),
		// Per test process, so that two runs on one machine do not share subnets.
		subnet:   fmt.Sprintf("10.%d.%d.0/24", 150+os.Getpid()%30, n),
		cgParent: fmt.Sprintf("/minicri-it-%d-%d", os.Getpid(), n),
		confDir:  filepath.Join(dir, "net.d"),
		binDirs:  []string{"/opt/cni/bin"},
	}
	for _, o := range opts {
		o(i)
	}
	os.MkdirAll(i.confDir, 0o755)
	binDirs, _ := json.Marshal(i.binDirs)
	hostsDir := filepath.Join(dir, "no-certs.d")
	if i.registry {
		hostsDir = i.writeHostsDir(t)
	}
	cfg := fmt.Sprintf("cgroup_parent = %q\n[network]\nconf_dir = %q\nbin_dirs = %s\ndefault_name = %q\ndefault_bridge = %q\ndefault_subnet = %q\ndefault_network = %v\n",
		i.cgParent, i.confDir, binDirs, i.netName, i.bridge, i.subnet, !i.noDefaultNetwork) +
		fmt.Sprintf("[registry]\nconfig_path = %q\n[image]\nlazy = %v\n", hostsDir, i.lazyPulls) +
		fmt.Sprintf("[nri]\nsocket_path = %q\nplugin_path = %q\nplugin_config_path = %q\n",
			i.nriSocket(), filepath.Join(dir, "nri", "plugins"), filepath.Join(dir, "nri", "conf.d")) +
		i.nriValidatorConfig() + i.runtimesConfig()
	if err := os.WriteFile(filepath.Join(dir, "config.toml"), []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	i.start()
	t.Cleanup(i.cleanup)
	return i
}

// withNRIValidator sets keys of the NRI default validator (TOML lines of
// its [nri.default_validator] table).
func withNRIValidator(lines ...string) option {
	return func(i *instance) { i.nriValidator = strings.Join(lines, "\n") + "\n" }
}

func (i *instance) nriValidatorConfig() string {
	if i.nriValidator == "" {
		return ""
	}
	return "[nri.default_validator]\n" + i.nriValidator
}

// nriSocket is the instance's own NRI socket (never the host's default).
func (i *instance) nriSocket() string { return filepath.Join(i.dir, "state", "nri", "nri.sock") }

func (i *instance) start() {
	t := i.t
	t.Helper()
	logf, err := os.OpenFile(filepath.Join(i.dir, "minicri.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	bin := i.bin
	if bin == "" {
		bin = minicriBin(t)
	}
	i.cmd = exec.Command(bin, "--config", filepath.Join(i.dir, "config.toml"),
		"--listen", "unix://"+i.sock, "--root", filepath.Join(i.dir, "root"),
		"--state", filepath.Join(i.dir, "state"), "--log-level", "debug")
	i.cmd.Stdout, i.cmd.Stderr = logf, logf
	if err := i.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	// Generous: in the VM lab (TCG, a loaded host) a start after page-cache-heavy
	// tests took over 10 s before minicri logged its first line.
	deadline := time.Now().Add(60 * time.Second)
	for {
		if c, err := net.Dial("unix", i.sock); err == nil {
			c.Close()
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("minicri did not start; log:\n%s", i.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
	// 16 MiB, as the kubelet allows.
	conn, err := grpc.NewClient("unix://"+i.sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)))
	if err != nil {
		t.Fatal(err)
	}
	i.conn, i.rt = conn, runtimeapi.NewRuntimeServiceClient(conn)
}

// kill9 kills the daemon as a crash would.
func (i *instance) kill9() {
	i.conn.Close()
	i.cmd.Process.Signal(syscall.SIGKILL)
	i.cmd.Wait()
}

// stop ends the daemon gracefully.
func (i *instance) stop() {
	i.conn.Close()
	i.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan struct{})
	go func() { i.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(15 * time.Second):
		i.cmd.Process.Kill()
		<-done
		i.t.Errorf("minicri did not exit on SIGTERM")
	}
}

func (i *instance) logTail() string {
	b, _ := os.ReadFile(filepath.Join(i.dir, "minicri.log"))
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// cleanup removes every pod, stops the daemon and deletes the instance's
// bridge, then its directory. On failure it prints the daemon's log.
func (i *instance) cleanup() {
	if i.t.Failed() {
		i.t.Logf("minicri log tail:\n%s", i.logTail())
	}
	if i.cmd.ProcessState == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		if resp, err := i.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{}); err == nil {
			for _, p := range resp.Items {
				i.rt.RemovePodSandbox(ctx, &runtimeapi.RemovePodSandboxRequest{PodSandboxId: p.Id})
			}
		}
		cancel()
		i.stop()
	}
	exec.Command("ip", "link", "del", i.bridge).Run()
	for _, m := range mountsUnder(i.dir) {
		unix.Unmount(m, unix.MNT_DETACH)
	}
	removeCgroupDirs(i.cgParent)
	if hostSystemd() { // the systemd driver's slice for this instance's pods
		exec.Command("systemctl", "stop", strings.TrimPrefix(i.cgParent, "/")+".slice").Run()
	}
	os.RemoveAll(i.dir)
}

func ctx(t *testing.T) context.Context {
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return c
}

var podSeq atomic.Int32

// podConfig returns a fresh pod config with unique metadata.
func podConfig(name string) *runtimeapi.PodSandboxConfig {
	n := podSeq.Add(1)
	return &runtimeapi.PodSandboxConfig{
		Metadata: &runtimeapi.PodSandboxMetadata{
			Name: fmt.Sprintf("%s-%d", name, n), Namespace: "it", Uid: fmt.Sprintf("uid-%d-%d", os.Getpid(), n),
		},
		Hostname: name,
		Labels:   map[string]string{"test": name},
		Linux:    &runtimeapi.LinuxPodSandboxConfig{},
	}
}

func (i *instance) runPod(t *testing.T, cfg *runtimeapi.PodSandboxConfig) string {
	t.Helper()
	resp, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg, RuntimeHandler: i.handler})
	if err != nil {
		t.Fatalf("RunPodSandbox: %v", err)
	}
	return resp.PodSandboxId
}

func (i *instance) status(t *testing.T, id string) (*runtimeapi.PodSandboxStatus, podInfo) {
	t.Helper()
	resp, err := i.rt.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: id, Verbose: true})
	if err != nil {
		t.Fatalf("PodSandboxStatus: %v", err)
	}
	var info podInfo
	if err := json.Unmarshal([]byte(resp.Info["info"]), &info); err != nil {
		t.Fatalf("verbose info: %v", err)
	}
	return resp.Status, info
}

// podInfo is the part of the verbose status the tests read.
type podInfo struct {
	PID        int    `json:"pid"`
	MonitorPID int    `json:"monitorPid"`
	NetNS      string `json:"netNamespacePath"`
	Shm        string `json:"shmPath"`
	Cgroup     string `json:"cgroupPath"`
}

func (i *instance) stopRemove(t *testing.T, id string) {
	t.Helper()
	if _, err := i.rt.StopPodSandbox(ctx(t), &runtimeapi.StopPodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatalf("StopPodSandbox: %v", err)
	}
	if _, err := i.rt.RemovePodSandbox(ctx(t), &runtimeapi.RemovePodSandboxRequest{PodSandboxId: id}); err != nil {
		t.Fatalf("RemovePodSandbox: %v", err)
	}
}

// inNetNS runs fn on a thread inside the network namespace at path.
func inNetNS(t *testing.T, path string, fn func() error) error {
	t.Helper()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread dies with the goroutine
		// The main thread is only wedged, not ended, so switch back anyway.
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- err
			return
		}
		defer orig.Close()
		defer unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET)
		f, err := os.Open(path)
		if err != nil {
			errc <- err
			return
		}
		defer f.Close()
		if err := unix.Setns(int(f.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- err
			return
		}
		errc <- fn()
	}()
	return <-errc
}

func nsInode(t *testing.T, pid int, ns string) uint64 {
	t.Helper()
	var st unix.Stat_t
	if err := unix.Stat(fmt.Sprintf("/proc/%d/ns/%s", pid, ns), &st); err != nil {
		t.Fatalf("stat ns %s of %d: %v", ns, pid, err)
	}
	return st.Ino
}

func jsonUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatalf("parse %q: %v", s, err)
	}
}

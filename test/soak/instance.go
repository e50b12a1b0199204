package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials/insecure"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// instance is the soak's private daemon: its own directory (root on a small
// loop-mounted ext4, so that a fault can fill it), socket, bridge, subnet,
// cgroup parent and metrics port. Only what it started is ever killed.
type instance struct {
	daemon                       runtimeUnderTest
	dir, sock, root, state, logs string
	bridge, cgParent, metrics    string
	hostsDir                     string
	loopFile                     string

	mu   sync.Mutex
	cmd  *exec.Cmd
	done chan struct{} // closed when cmd has exited

	conn *grpc.ClientConn
	rt   runtimeapi.RuntimeServiceClient
	img  runtimeapi.ImageServiceClient
}

func newInstance(daemon runtimeUnderTest, registryURL string, cni bool) (*instance, error) {
	dir, err := os.MkdirTemp("", daemon.name()+"-soak-")
	if err != nil {
		return nil, err
	}
	if err := os.Chmod(dir, 0o711); err != nil {
		return nil, err
	}
	pid := os.Getpid()
	i := &instance{
		daemon: daemon, dir: dir, sock: filepath.Join(dir, daemon.name()+".sock"),
		root: filepath.Join(dir, "root"), state: filepath.Join(dir, "state"), logs: filepath.Join(dir, "logs"),
		bridge: fmt.Sprintf("mcsoak%d", pid%10000), cgParent: fmt.Sprintf("/minicri-soak-%d", pid),
		hostsDir: filepath.Join(dir, "certs.d"), loopFile: filepath.Join(dir, "root.img"),
	}
	if i.metrics, err = freePort(); err != nil {
		return nil, err
	}
	for _, d := range []string{i.root, i.logs, filepath.Join(dir, "net.d")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return nil, err
		}
	}
	if err := i.mountRoot(); err != nil {
		return nil, err
	}
	if err := writeHosts(i.hostsDir, registryURL); err != nil {
		return nil, err
	}
	return i, i.writeConfig(pid, cni)
}

// mountRoot puts the daemon's root on a 1 GiB ext4 in a sparse file (mount -o
// loop), the filesystem the ENOSPC fault fills.
func (i *instance) mountRoot() error {
	if err := os.WriteFile(i.loopFile, nil, 0o600); err != nil {
		return err
	}
	if err := os.Truncate(i.loopFile, 1<<30); err != nil {
		return err
	}
	if out, err := exec.Command("mkfs.ext4", "-q", "-F", i.loopFile).CombinedOutput(); err != nil {
		return fmt.Errorf("mkfs.ext4: %v: %s", err, out)
	}
	if out, err := exec.Command("mount", "-o", "loop", i.loopFile, i.root).CombinedOutput(); err != nil {
		return fmt.Errorf("mount -o loop: %v: %s", err, out)
	}
	return nil
}

// writeConfig writes the CNI wrapper and conflist (cni) and the daemon's
// configuration.
func (i *instance) writeConfig(pid int, cni bool) error {
	subnet := fmt.Sprintf("10.%d.0.0/16", 180+pid%40)
	var binDirs []string
	if cni {
		var err error
		if binDirs, err = i.writeCNI(subnet); err != nil {
			return err
		}
	}
	return i.daemon.configure(i, subnet, binDirs)
}

func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	defer l.Close()
	return l.Addr().String(), nil
}

// dial opens the one client connection of the run; it reconnects by itself
// after each restart of the daemon (backoff capped at 500 ms).
func (i *instance) dial() error {
	conn, err := grpc.NewClient("unix://"+i.sock, grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(16<<20)),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: backoff.Config{
			BaseDelay: 50 * time.Millisecond, Multiplier: 1.6, MaxDelay: 500 * time.Millisecond}, MinConnectTimeout: 2 * time.Second}))
	if err != nil {
		return err
	}
	i.conn, i.rt, i.img = conn, runtimeapi.NewRuntimeServiceClient(conn), runtimeapi.NewImageServiceClient(conn)
	return nil
}

// start runs the daemon on the instance's dirs and waits until it serves
// the CRI (a daemon still starting after 60 s is killed).
func (i *instance) start() error {
	logf, err := os.OpenFile(i.logPath(), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	defer logf.Close()
	_ = os.Remove(i.sock)
	cmd, err := i.daemon.command(i)
	if err != nil {
		return err
	}
	cmd.Stdout, cmd.Stderr = logf, logf
	if err := cmd.Start(); err != nil {
		return err
	}
	done := make(chan struct{})
	go func() { _ = cmd.Wait(); close(done) }()
	i.mu.Lock()
	i.cmd, i.done = cmd, done
	i.mu.Unlock()
	deadline := time.Now().Add(60 * time.Second)
	for {
		if i.serving() {
			return nil
		}
		select {
		case <-done:
			i.mu.Lock()
			i.cmd = nil
			i.mu.Unlock()
			return fmt.Errorf("%s exited at start (%v); log:\n%s", i.daemon.name(), cmd.ProcessState, i.logTail())
		default:
		}
		if time.Now().After(deadline) {
			i.kill9()
			return fmt.Errorf("%s did not start in 60 s; log:\n%s", i.daemon.name(), i.logTail())
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// serving reports whether the daemon answers Version on its socket
// (containerd listens before its CRI plugin is initialized).
func (i *instance) serving() bool {
	c, err := net.Dial("unix", i.sock)
	if err != nil {
		return false
	}
	c.Close()
	conn, err := grpc.NewClient("unix://"+i.sock, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return false
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	_, err = runtimeapi.NewRuntimeServiceClient(conn).Version(ctx, &runtimeapi.VersionRequest{})
	return err == nil
}

// take forgets the running daemon and returns it and its exit channel.
func (i *instance) take() (*exec.Cmd, chan struct{}) {
	i.mu.Lock()
	defer i.mu.Unlock()
	cmd, done := i.cmd, i.done
	i.cmd = nil
	return cmd, done
}

// pid is the running daemon's pid (0 while none runs).
func (i *instance) pid() int {
	i.mu.Lock()
	defer i.mu.Unlock()
	if i.cmd == nil || i.cmd.Process == nil {
		return 0
	}
	return i.cmd.Process.Pid
}

// kill9 kills the daemon this soak started, as a crash would.
func (i *instance) kill9() {
	cmd, done := i.take()
	if cmd == nil {
		return
	}
	_ = cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop ends the daemon with SIGTERM (SIGKILL after 20 s).
func (i *instance) stop() error {
	cmd, done := i.take()
	if cmd == nil {
		return nil
	}
	_ = cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
		return nil
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-done
		return fmt.Errorf("%s did not exit on SIGTERM within 20 s", i.daemon.name())
	}
}

func (i *instance) logTail() string {
	b, _ := os.ReadFile(i.logPath())
	lines := strings.Split(string(b), "\n")
	if len(lines) > 40 {
		lines = lines[len(lines)-40:]
	}
	return strings.Join(lines, "\n")
}

// logPath is the daemon's log, in the instance's dir.
func (i *instance) logPath() string { return filepath.Join(i.dir, i.daemon.name()+".log") }

// cleanup undoes what the soak made of the host: what the runtime left,
// the bridge, mounts under the instance's dir, its cgroups, then the dir
// (kept when keep is set).
func (i *instance) cleanup(keep bool) {
	_ = i.stop()
	i.daemon.release(i)
	if i.conn != nil {
		_ = i.conn.Close()
	}
	_ = exec.Command("ip", "link", "del", i.bridge).Run()
	for _, m := range mountsUnder(i.dir) {
		_ = unix.Unmount(m, unix.MNT_DETACH)
	}
	for _, d := range cgroupDirs(i.cgParent) {
		removeTree(d)
	}
	if !keep {
		_ = os.RemoveAll(i.dir)
	}
}

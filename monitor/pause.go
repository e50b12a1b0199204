package monitor

import (
	"bytes"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"runtime"
	"syscall"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/internal/proc"
)

// sandboxOOMScoreAdj is what Kubernetes gives pause processes.
const sandboxOOMScoreAdj = -998

// pauseID is the uid and gid the pause runs as, the pause image's user.
const pauseID = 65535

// startPause starts the pause in the namespaces p asks for and waits until it
// has applied the sysctls and hostname and locked itself in (see pause.c).
func startPause(p Pause, log *slog.Logger) (*exec.Cmd, error) {
	args := []string{"-l"} // lock in: own empty root, no privileges, seccomp
	if p.NewUTS && p.Hostname != "" {
		args = append(args, "-h", p.Hostname)
	}
	for _, kv := range p.Sysctls {
		args = append(args, "-s", kv)
	}
	args = append(args, pauseIDArgs(p)...)
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("pause ready pipe: %w", err)
	}
	defer r.Close()
	cmd := exec.Command(p.Path, args...)
	cmd.ExtraFiles = []*os.File{w}
	var flags uintptr
	if p.NewIPC {
		flags |= unix.CLONE_NEWIPC
	}
	if p.NewUTS {
		flags |= unix.CLONE_NEWUTS
	}
	if p.NewPID {
		flags |= unix.CLONE_NEWPID
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: flags}
	if u := p.UserNS; u != nil {
		// The pod's own user namespace, and a network namespace it owns.
		cmd.SysProcAttr.Cloneflags |= unix.CLONE_NEWUSER | unix.CLONE_NEWNET
		cmd.SysProcAttr.UidMappings = sysMaps(u.UIDs)
		cmd.SysProcAttr.GidMappings = sysMaps(u.GIDs)
		cmd.SysProcAttr.GidMappingsEnableSetgroups = true
		// Become the namespace's root before exec: host root is unmapped
		// there, and an unmapped UID loses its capabilities across exec.
		cmd.SysProcAttr.Credential = &syscall.Credential{Uid: 0, Gid: 0}
	}
	err = startInNetNS(p.NetNSPath, cmd)
	w.Close()
	if err != nil {
		return nil, fmt.Errorf("start pause: %w", err)
	}
	msg, _ := io.ReadAll(r)
	if !bytes.Equal(msg, []byte("R")) {
		_ = cmd.Process.Kill() // it failed its handshake: that error is the one reported
		_ = cmd.Wait()
		if len(msg) == 0 {
			return nil, fmt.Errorf("pause exited before it was ready")
		}
		return nil, fmt.Errorf("pause: %s", msg)
	}
	log.Debug("pause started", "pid", cmd.Process.Pid)
	return cmd, nil
}

// startInNetNS starts cmd with its thread switched into the network namespace
// at path (Go forks from the calling thread, so the child inherits it).
func startInNetNS(path string, cmd *exec.Cmd) error {
	if path == "" {
		return cmd.Start()
	}
	target, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("open netns: %w", err)
	}
	defer target.Close()
	runtime.LockOSThread()
	orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
	if err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("open own netns: %w", err)
	}
	defer orig.Close()
	if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
		runtime.UnlockOSThread()
		return fmt.Errorf("enter netns %s: %w", path, err)
	}
	startErr := cmd.Start()
	if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
		// The thread is stuck in the pod's netns: keep it locked so it dies
		// with this goroutine instead of serving others.
		return fmt.Errorf("return from netns: %w", err)
	}
	runtime.UnlockOSThread()
	return startErr
}

// placePause puts the pause into the pod's cgroup and sets its OOM score.
func placePause(p Pause, pid int, log *slog.Logger) error {
	if p.CgroupPath != "" {
		mgr, err := cgdriver.Manager(p.CgroupPath)
		if err != nil {
			return fmt.Errorf("pause cgroup: %w", err)
		}
		if err := mgr.Apply(pid); err != nil {
			return fmt.Errorf("pause cgroup %s: %w", p.CgroupPath, err)
		}
	}
	want := p.OOMScoreAdj
	if want == 0 {
		want = sandboxOOMScoreAdj
	}
	got, err := proc.SetOOMScoreAdj(pid, want)
	if err != nil {
		return err
	}
	if got != want {
		log.Info("oom_score_adj clamped", "wanted", want, "set", got)
	}
	return nil
}

func sysMaps(m []idmap.Mapping) []syscall.SysProcIDMap {
	out := make([]syscall.SysProcIDMap, len(m))
	for i, e := range m {
		out[i] = syscall.SysProcIDMap{ContainerID: int(e.ContainerID), HostID: int(e.HostID), Size: int(e.Length)}
	}
	return out
}

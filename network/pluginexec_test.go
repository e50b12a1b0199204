package network

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/containernetworking/cni/pkg/types"
)

// writePlugin writes an executable shell plugin into a temp dir.
func writePlugin(t *testing.T, script string) string {
	t.Helper()
	p := filepath.Join(t.TempDir(), "plugin")
	if err := os.WriteFile(p, []byte("#!/bin/sh\n"+script), 0o700); err != nil { //nolint:gosec // a test plugin: executable
		t.Fatal(err)
	}
	return p
}

// readPid waits for file to hold a pid and returns it.
func readPid(t *testing.T, file string) int {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if b, err := os.ReadFile(file); err == nil && strings.HasSuffix(string(b), "\n") {
			pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
			if err != nil {
				t.Fatal(err)
			}
			return pid
		}
	}
	t.Fatalf("no pid in %s", file)
	return 0
}

// waitGone waits until pid no longer exists (an orphan is reaped by init).
func waitGone(t *testing.T, pid int) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return
		}
		if b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil && strings.Contains(string(b), ") Z ") {
			return
		}
	}
	t.Fatalf("process %d still runs", pid)
}

// A plugin whose child hangs holding its stdout costs the caller its
// deadline and no more, and the child dies with it. (libcni's RawExec kills
// only the plugin, then waits for the pipe the child holds: for ever.)
func TestPluginExecHangingChildEndsAtDeadline(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	plugin := writePlugin(t, "sleep 100000 &\necho $! >"+pidFile+"\nwait\n")
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	e := &pluginExec{owner: t.TempDir()}
	start := time.Now()
	_, err := e.ExecPlugin(ctx, plugin, []byte("{}"), os.Environ())
	if took := time.Since(start); took > 500*time.Millisecond+pluginWaitDelay+time.Second {
		t.Fatalf("ExecPlugin took %v past a 500ms deadline", took)
	}
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v, want one wrapping context.DeadlineExceeded", err)
	}
	waitGone(t, readPid(t, pidFile))
}

// A plugin that exits 0 but leaves a process holding its stdout succeeds
// once pluginWaitDelay is over, with what it printed.
func TestPluginExecExitedPluginWithLingeringChild(t *testing.T) {
	pidFile := filepath.Join(t.TempDir(), "child")
	plugin := writePlugin(t, "echo '{\"cniVersion\":\"1.0.0\"}'\nsleep 100000 &\necho $! >"+pidFile+"\n")
	e := &pluginExec{owner: t.TempDir()}
	out, err := e.ExecPlugin(context.Background(), plugin, []byte("{}"), os.Environ())
	if err != nil {
		t.Fatalf("ExecPlugin: %v", err)
	}
	if strings.TrimSpace(string(out)) != `{"cniVersion":"1.0.0"}` {
		t.Fatalf("output %q", out)
	}
	_ = syscall.Kill(readPid(t, pidFile), syscall.SIGKILL)
}

// A plugin's own error object comes back as a *types.Error, as libcni's
// exec returns it; the owner mark is in its environment.
func TestPluginExecErrorAndOwnerMark(t *testing.T) {
	owner := t.TempDir()
	plugin := writePlugin(t, `[ "$`+ownerEnv+`" = "`+owner+`" ] || exit 3
echo '{"cniVersion":"1.0.0","code":7,"msg":"no such thing"}'
exit 1
`)
	_, err := (&pluginExec{owner: owner}).ExecPlugin(context.Background(), plugin, []byte("{}"), os.Environ())
	var perr *types.Error
	if !errors.As(err, &perr) || perr.Code != 7 || perr.Msg != "no such thing" {
		t.Fatalf("err = %#v, want the plugin's error object (code 7)", err)
	}
}

// reapOrphanPlugins kills the process groups of plugins marked with its
// owner, and nothing else.
func TestReapOrphanPlugins(t *testing.T) {
	owner, other := t.TempDir(), t.TempDir()
	start := func(mark string) (*exec.Cmd, int) {
		pidFile := filepath.Join(t.TempDir(), "child")
		c := exec.Command("/bin/sh", "-c", "sleep 100000 & echo $! >"+pidFile+"; wait")
		c.Env = append(os.Environ(), ownerEnv+"="+mark)
		c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
		if err := c.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = syscall.Kill(-c.Process.Pid, syscall.SIGKILL); _ = c.Wait() })
		return c, readPid(t, pidFile)
	}
	mine, mineChild := start(owner)
	theirs, _ := start(other)
	if n := reapOrphanPlugins(owner); n != 1 {
		t.Fatalf("reaped %d plugins, want 1", n)
	}
	if err := mine.Wait(); err == nil {
		t.Fatal("the orphan plugin exited 0; want killed")
	}
	waitGone(t, mineChild)
	if err := syscall.Kill(theirs.Process.Pid, 0); err != nil {
		t.Fatalf("another owner's plugin was killed: %v", err)
	}
}

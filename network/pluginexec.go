package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/containernetworking/cni/pkg/invoke"
	"github.com/containernetworking/cni/pkg/types"
	"github.com/containernetworking/cni/pkg/version"
)

// ownerEnv, in a plugin's environment, names the CNI cache dir of the
// minicri that started it: a later minicri on the same state finds the
// plugins its killed predecessor left hanging by it (reapOrphanPlugins).
const ownerEnv = "MINICRI_CNI_OWNER"

// pluginWaitDelay bounds how long a plugin's output pipes are read after it
// was killed: a process it forked may hold them open for ever.
const pluginWaitDelay = 2 * time.Second

// pluginExec runs CNI plugins as libcni's RawExec does, but each in a
// process group of its own that is killed whole when the caller's context
// ends, and without waiting on pipes that a surviving child holds: a plugin
// that hangs, or that forked something that does, costs the caller its
// deadline, never more.
type pluginExec struct {
	version.PluginDecoder
	stderr io.Writer
	owner  string // value of ownerEnv
}

var _ invoke.Exec = (*pluginExec)(nil)

// ExecPlugin runs the plugin at path with stdin and environ and returns its
// stdout; a failure is a *types.Error as libcni expects.
func (e *pluginExec) ExecPlugin(ctx context.Context, path string, stdin []byte, environ []string) ([]byte, error) {
	var err error
	for attempt := 0; attempt <= 5; attempt++ {
		var stdout, stderr bytes.Buffer
		err = e.run(ctx, path, stdin, environ, &stdout, &stderr)
		if errors.Is(err, exec.ErrWaitDelay) && ctx.Err() == nil {
			// It exited 0; something it started holds its output open.
			logger().Warn("CNI plugin exited but left a process holding its output", "plugin", path)
			err = nil
		}
		if err == nil {
			if e.stderr != nil && stderr.Len() > 0 {
				_, _ = stderr.WriteTo(e.stderr)
			}
			return stdout.Bytes(), nil
		}
		if ctx.Err() == nil && strings.Contains(err.Error(), "text file busy") { // the plugin is being written
			time.Sleep(time.Second)
			continue
		}
		return nil, pluginError(ctx, path, err, stdout.Bytes(), stderr.Bytes())
	}
	return nil, pluginError(ctx, path, err, nil, nil)
}

func (e *pluginExec) run(ctx context.Context, path string, stdin []byte, environ []string, stdout, stderr io.Writer) error {
	c := exec.CommandContext(ctx, path) //nolint:gosec // the plugin named by the operator's CNI config
	c.Env = append(append([]string(nil), environ...), ownerEnv+"="+e.owner)
	c.Stdin, c.Stdout, c.Stderr = bytes.NewReader(stdin), stdout, stderr
	c.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	c.Cancel = func() error { return syscall.Kill(-c.Process.Pid, syscall.SIGKILL) }
	c.WaitDelay = pluginWaitDelay
	return c.Run()
}

// FindInPath finds plugin in paths, as libcni does.
func (e *pluginExec) FindInPath(plugin string, paths []string) (string, error) {
	return invoke.FindInPath(plugin, paths)
}

// pluginError is the *types.Error for a failed run: the plugin's own error
// object from stdout when there is one, else its stderr or the exec error;
// an ended context is named, so that the caller's deadline is recognisable.
func pluginError(ctx context.Context, path string, err error, stdout, stderr []byte) error {
	if ctx.Err() != nil {
		return fmt.Errorf("CNI plugin %s killed: %w (%v)", path, ctx.Err(), err)
	}
	var perr types.Error
	switch {
	case len(stdout) > 0 && json.Unmarshal(stdout, &perr) == nil:
		return &perr
	case len(stdout) > 0:
		return &types.Error{Msg: fmt.Sprintf("netplugin failed but error parsing its diagnostic message %q: %v", stdout, err)}
	case len(stderr) > 0:
		return &types.Error{Msg: fmt.Sprintf("netplugin failed: %q", stderr)}
	}
	return &types.Error{Msg: fmt.Sprintf("netplugin failed with no error message: %v", err)}
}

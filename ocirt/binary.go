package ocirt

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/opencontainers/cgroups"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/console"
)

// Binary is an external OCI runtime binary with runc's command line
// (runc, crun, runsc...), its state under Root.
type Binary struct {
	Path string
	Root string
	// Guard, when set, is held around each runtime command but Create's
	// (whose caller holds it): the monitor keeps its orphan reaper off its
	// children meanwhile, so that the command is waited for by whoever ran it.
	Guard func() (release func())
}

// consoleTimeout bounds the wait for the runtime to send a TTY's master.
const consoleTimeout = 10 * time.Second

// command builds `<path> --root <root> [--systemd-cgroup] args...`.
func (b *Binary) command(cgroupsPath string, args ...string) *exec.Cmd {
	pre := []string{"--root", b.Root}
	if cgdriver.IsSystemd(cgroupsPath) {
		pre = append(pre, "--systemd-cgroup")
	}
	return exec.Command(b.Path, append(pre, args...)...) //nolint:gosec // the configured runtime, validated at start
}

// run runs a command (under Guard) and reports its output on failure.
func (b *Binary) run(cmd *exec.Cmd) error {
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if b.Guard != nil {
		defer b.Guard()()
	}
	if err := cmd.Run(); err != nil {
		return runError(cmd, err, out.String())
	}
	return nil
}

// runError classifies a failed runtime command by what runc prints.
func runError(cmd *exec.Cmd, err error, out string) error {
	msg := strings.TrimSpace(out)
	if len(msg) > 2048 {
		msg = msg[len(msg)-2048:]
	}
	e := fmt.Errorf("%s %s: %w: %s", filepath.Base(cmd.Path), cmdVerb(cmd.Args), err, msg)
	switch {
	case strings.Contains(msg, "not running"), strings.Contains(msg, "process already finished"):
		return fmt.Errorf("%w: %w", ErrNotRunning, e)
	case strings.Contains(msg, "does not exist"), strings.Contains(msg, "not found"):
		return fmt.Errorf("%w: %w", ErrNotExist, e)
	}
	return e
}

func cmdVerb(args []string) string {
	for i := 1; i < len(args); i++ {
		if args[i] == "--root" {
			i++
			continue
		}
		if !strings.HasPrefix(args[i], "-") {
			return args[i]
		}
	}
	return ""
}

// binHandle is a container of the binary runtime.
type binHandle struct {
	b      *Binary
	id     string
	cgPath string
}

// binContainer is a container this process created: its init was
// re-parented to this process (a child subreaper) when `create` exited.
type binContainer struct {
	binHandle
	init *os.Process
	tty  *os.File
}

// Create implements Runtime: `create --bundle --pid-file [--console-socket]`.
// Without a terminal the init inherits the command's stdio.
func (b *Binary) Create(id, bundle string, spec *specs.Spec, io Stdio) (Container, error) {
	k := &binContainer{binHandle: binHandle{b: b, id: id, cgPath: spec.Linux.CgroupsPath}}
	pidFile := filepath.Join(bundle, "init.pid")
	args := []string{"create", "--bundle", bundle, "--pid-file", pidFile}
	var ln *net.UnixListener
	if io.TTY {
		dir, err := os.MkdirTemp("", "minicri-console-")
		if err != nil {
			return nil, fmt.Errorf("console socket: %w", err)
		}
		defer func() { _ = os.RemoveAll(dir) }()
		sock := filepath.Join(dir, "s")
		if ln, err = net.ListenUnix("unix", &net.UnixAddr{Name: sock, Net: "unix"}); err != nil {
			return nil, fmt.Errorf("console socket: %w", err)
		}
		defer ln.Close()
		args = append(args, "--console-socket", sock)
	}
	cmd := b.command(k.cgPath, append(args, id)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if !io.TTY {
		cmd.Stdout, cmd.Stderr = fileOr(io.Stdout, &out), fileOr(io.Stderr, &out)
		if io.Stdin != nil {
			cmd.Stdin = io.Stdin
		}
	}
	if err := cmd.Run(); err != nil {
		return nil, errors.Join(runError(cmd, err, out.String()), k.destroyQuietly())
	}
	err := k.adoptInit(pidFile)
	if err == nil && ln != nil {
		k.tty, err = recvConsole(ln)
	}
	if err != nil {
		return nil, errors.Join(err, k.destroyQuietly())
	}
	return k, nil
}

// fileOr is f as a writer, or w when f is nil.
func fileOr(f *os.File, w *bytes.Buffer) interface{ Write([]byte) (int, error) } {
	if f != nil {
		return f
	}
	return w
}

func (k *binContainer) adoptInit(pidFile string) error {
	data, err := os.ReadFile(pidFile)
	if err != nil {
		return fmt.Errorf("read init pid: %w", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil || pid <= 0 {
		return fmt.Errorf("bad init pid %q", data)
	}
	if k.init, err = os.FindProcess(pid); err != nil {
		return fmt.Errorf("find init %d: %w", pid, err)
	}
	return nil
}

// destroyQuietly removes what a failed create left (the init waiting for
// start is killed with it); it is reaped by the caller's orphan reaper.
func (k *binContainer) destroyQuietly() error {
	cmd := k.b.command(k.cgPath, "delete", "--force", k.id)
	if out, err := cmd.CombinedOutput(); err != nil {
		if e := runError(cmd, err, string(out)); !errors.Is(e, ErrNotExist) {
			return fmt.Errorf("delete after a failed create: %w", e)
		}
	}
	if k.init != nil {
		_ = k.init.Release()
	}
	return nil
}

// recvConsole accepts the runtime's connection and receives the master.
func recvConsole(ln *net.UnixListener) (*os.File, error) {
	if err := ln.SetDeadline(time.Now().Add(consoleTimeout)); err != nil {
		return nil, err
	}
	conn, err := ln.AcceptUnix()
	if err != nil {
		return nil, fmt.Errorf("receive console: %w", err)
	}
	defer conn.Close()
	if err := conn.SetDeadline(time.Now().Add(consoleTimeout)); err != nil {
		return nil, err
	}
	buf, oob := make([]byte, 4096), make([]byte, unix.CmsgSpace(4))
	_, oobn, _, _, err := conn.ReadMsgUnix(buf, oob)
	if err != nil {
		return nil, fmt.Errorf("receive console: %w", err)
	}
	fd, err := console.FDFromControl(oob[:oobn])
	if err != nil {
		return nil, err
	}
	unix.CloseOnExec(fd)
	return os.NewFile(uintptr(fd), "console"), nil
}

func (k *binContainer) PID() int                        { return k.init.Pid }
func (k *binContainer) Console() *os.File               { return k.tty }
func (k *binContainer) Wait() (*os.ProcessState, error) { return k.init.Wait() }
func (k *binContainer) Start() error                    { return k.b.run(k.b.command(k.cgPath, "start", k.id)) }

func (k *binContainer) NotifyOOM() (<-chan struct{}, error) {
	return nil, fmt.Errorf("OOM notifications: %w", ErrUnsupported)
}

// Load implements Runtime.
func (b *Binary) Load(id, cgroupsPath string) (Handle, error) {
	if _, err := os.Stat(filepath.Join(b.Root, id, "state.json")); err != nil {
		return nil, fmt.Errorf("load container %s: %w: %v", id, ErrNotExist, err)
	}
	return binHandle{b: b, id: id, cgPath: cgroupsPath}, nil
}

// Signal implements Handle: `kill [--all] <id> <signal>`.
func (h binHandle) Signal(sig syscall.Signal, all bool) error {
	args := []string{"kill"}
	if all {
		args = append(args, "--all")
	}
	return h.b.run(h.b.command(h.cgPath, append(args, h.id, strconv.Itoa(int(sig)))...))
}

// Delete implements Handle: `delete --force <id>`.
func (h binHandle) Delete() error {
	err := h.b.run(h.b.command(h.cgPath, "delete", "--force", h.id))
	if errors.Is(err, ErrNotExist) {
		return nil
	}
	return err
}

// Update implements Handle: `update --resources - <id>`.
func (h binHandle) Update(spec *specs.Spec) error {
	if spec.Linux == nil || spec.Linux.Resources == nil {
		return nil
	}
	data, err := json.Marshal(spec.Linux.Resources)
	if err != nil {
		return err
	}
	cmd := h.b.command(h.cgPath, "update", "--resources", "-", h.id)
	cmd.Stdin = bytes.NewReader(data)
	return h.b.run(cmd)
}

// Stats, CgroupPaths and Processes read the cgroup minicri gave the runtime.
func (h binHandle) cgroup() (cgroups.Manager, error) { return cgdriver.Manager(h.cgPath) }

func (h binHandle) Stats() (*cgroups.Stats, error) {
	mgr, err := h.cgroup()
	if err != nil {
		return nil, err
	}
	return mgr.GetStats()
}

func (h binHandle) CgroupPaths() (map[string]string, error) {
	mgr, err := h.cgroup()
	if err != nil {
		return nil, err
	}
	return mgr.GetPaths(), nil
}

func (h binHandle) Processes() ([]int, error) {
	mgr, err := h.cgroup()
	if err != nil {
		return nil, err
	}
	return mgr.GetAllPids()
}

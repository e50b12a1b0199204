package ocirt

import (
	"errors"
	"fmt"
	"os"
	"runtime"
	"syscall"

	"github.com/opencontainers/cgroups"
	"github.com/opencontainers/runc/libcontainer"
	"github.com/opencontainers/runc/libcontainer/specconv"
	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/console"
	"github.com/minicri/minicri/internal/lcproc"
)

// Libcontainer is the built-in runtime: libcontainer in this process, its
// state under Root.
type Libcontainer struct{ Root string }

// lcHandle is a libcontainer container.
type lcHandle struct{ c *libcontainer.Container }

// lcContainer is a container this process created (and is the parent of).
type lcContainer struct {
	lcHandle
	p   *libcontainer.Process
	tty *os.File
}

// Create implements Runtime.
func (r Libcontainer) Create(id, bundle string, spec *specs.Spec, io Stdio) (Container, error) {
	cfg, err := specconv.CreateLibcontainerConfig(&specconv.CreateOpts{
		CgroupName: id, Spec: spec, UseSystemdCgroup: cgdriver.IsSystemd(spec.Linux.CgroupsPath),
	})
	if err != nil {
		return nil, fmt.Errorf("convert spec: %w", err)
	}
	cfg.Labels = withBundle(cfg.Labels, bundle)
	c, err := libcontainer.Create(r.Root, id, cfg)
	if err != nil {
		return nil, fmt.Errorf("create container: %w", err)
	}
	k := &lcContainer{lcHandle: lcHandle{c: c}}
	if err := k.start(spec.Process, io); err != nil {
		if derr := c.Destroy(); derr != nil {
			err = errors.Join(err, fmt.Errorf("destroy after a failed create: %w", derr))
		}
		releaseFailedStart()
		return nil, err
	}
	return k, nil
}

// releaseFailedStart frees what a failed libcontainer start leaves open:
// libcontainer (runc 1.5) keeps its O_PATH descriptor of the exec fifo when
// the init fails to start, in a field nothing closes, so only its finalizer
// frees it. The kubelet retries a failing create forever: collect now
// rather than at the next GC, whenever that comes in an idle monitor.
func releaseFailedStart() { runtime.GC() }

func (k *lcContainer) start(sp *specs.Process, io Stdio) error {
	p, err := lcproc.FromSpec(sp)
	if err != nil {
		return err
	}
	p.Init = true
	var consoleSock *os.File
	if io.TTY {
		parent, child, err := console.SocketPair()
		if err != nil {
			return err
		}
		defer parent.Close()
		defer child.Close()
		p.ConsoleSocket, consoleSock = child, parent
	} else {
		setStdio(p, io.Stdin, io.Stdout, io.Stderr)
	}
	if err := k.c.Start(p); err != nil {
		return fmt.Errorf("start container init: %w", err)
	}
	k.p = p
	if consoleSock != nil {
		master, err := console.RecvFile(consoleSock, false)
		if err != nil {
			_ = k.c.Signal(unix.SIGKILL) // the console's error is the one reported
			_, _ = p.Wait()
			return err
		}
		k.tty = master
	}
	return nil
}

// setStdio gives p the non-nil files (an untyped nil would be a nil
// io.Reader/Writer that is not nil).
func setStdio(p *libcontainer.Process, in, out, errw *os.File) {
	if in != nil {
		p.Stdin = in
	}
	if out != nil {
		p.Stdout = out
	}
	if errw != nil {
		p.Stderr = errw
	}
}

func (k *lcContainer) PID() int {
	pid, _ := k.p.Pid()
	return pid
}

func (k *lcContainer) Console() *os.File               { return k.tty }
func (k *lcContainer) Wait() (*os.ProcessState, error) { return k.p.Wait() }
func (k *lcContainer) Start() error                    { return k.c.Exec() }

func (k *lcContainer) NotifyOOM() (<-chan struct{}, error) { return k.c.NotifyOOM() }

// Load implements Runtime.
func (r Libcontainer) Load(id, _ string) (Handle, error) {
	c, err := libcontainer.Load(r.Root, id)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, fmt.Errorf("load container %s: %w: %v", id, ErrNotExist, err)
		}
		return nil, fmt.Errorf("load container %s: %w", id, err)
	}
	return lcHandle{c: c}, nil
}

// Libcontainer returns the libcontainer container behind h, if it is one
// (checkpoint needs it).
func LibcontainerOf(h Handle) (*libcontainer.Container, bool) {
	if lh, ok := h.(lcHandle); ok {
		return lh.c, true
	}
	return nil, false
}

// Signal implements Handle. libcontainer signals the whole cgroup itself
// when the container has no PID namespace of its own and sig is SIGKILL.
func (h lcHandle) Signal(sig syscall.Signal, _ bool) error {
	err := h.c.Signal(sig)
	if errors.Is(err, libcontainer.ErrNotRunning) {
		return fmt.Errorf("%w: %v", ErrNotRunning, err)
	}
	return err
}

func (h lcHandle) Delete() error {
	_ = h.c.Signal(syscall.SIGKILL) // Destroy kills what is left; this only hurries it
	return h.c.Destroy()
}

func (h lcHandle) Update(spec *specs.Spec) error {
	cg, err := specconv.CreateCgroupConfig(&specconv.CreateOpts{
		CgroupName: h.c.ID(), Spec: spec, UseSystemdCgroup: cgdriver.IsSystemd(spec.Linux.CgroupsPath),
	}, nil)
	if err != nil {
		return fmt.Errorf("resources: %w", err)
	}
	cfg := h.c.Config()
	cfg.Cgroups.Resources = cg.Resources
	return h.c.Set(cfg)
}

func (h lcHandle) Stats() (*cgroups.Stats, error) {
	st, err := h.c.Stats()
	if err != nil {
		return nil, err
	}
	if st.CgroupStats == nil {
		return nil, errors.New("no cgroup stats")
	}
	return st.CgroupStats, nil
}

func (h lcHandle) CgroupPaths() (map[string]string, error) {
	st, err := h.c.State()
	if err != nil {
		return nil, err
	}
	return st.CgroupPaths, nil
}

func (h lcHandle) Processes() ([]int, error) { return h.c.Processes() }

// Exec implements Handle: the process joins the container from this
// process, which is its parent.
func (h lcHandle) Exec(e ExecSpec) (Process, error) {
	p, err := lcproc.FromSpec(e.Process)
	if err != nil {
		return nil, err
	}
	p.Init = false
	lp := &lcProcess{p: p}
	if e.Process.Terminal {
		parent, child, err := console.SocketPair()
		if err != nil {
			return nil, err
		}
		defer child.Close()
		p.ConsoleSocket, lp.console = child, parent
	} else {
		setStdio(p, e.Stdin, e.Stdout, e.Stderr)
	}
	if err := h.c.Run(p); err != nil {
		if lp.console != nil {
			lp.console.Close()
		}
		return nil, err
	}
	return lp, nil
}

type lcProcess struct {
	p       *libcontainer.Process
	console *os.File // the parent end of the console socket
}

func (p *lcProcess) Console() (*os.File, error) {
	if p.console == nil {
		return nil, errors.New("exec has no terminal")
	}
	defer p.console.Close()
	return console.RecvFile(p.console, true)
}

func (p *lcProcess) Kill() error                     { return p.p.Signal(unix.SIGKILL) }
func (p *lcProcess) Wait() (*os.ProcessState, error) { return p.p.Wait() }

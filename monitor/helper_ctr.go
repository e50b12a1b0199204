package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/crilog"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/ocirt"
)

var errUnknownContainer = errors.New("unknown to this monitor")

// runtimeOf is the OCI runtime that runs the container of ctx.
func (c *ctrCtx) runtime() ocirt.Runtime {
	if c.Runtime == nil {
		return ocirt.Libcontainer{Root: c.RuncRoot}
	}
	return &ocirt.Binary{Path: c.Runtime.Path, Root: c.Runtime.Root}
}

func (c *ctrCtx) load(id string) (ocirt.Handle, error) { return c.runtime().Load(id, c.CgroupsPath) }

// createContainer creates the container and starts its init (which waits
// for start), and hands the monitor the init's PID and the descriptors it
// keeps: output pipes or the TTY master, stdin, the log, the container's
// directory (for exit.json), and the OOM watch of a systemd cgroup.
func createContainer(req Request, a *answer, log *slog.Logger) error {
	return createThrough(req, nil, a, log)
}

// createThrough is createContainer through the runtime rt (nil: the one
// the request names).
func createThrough(req Request, rt ocirt.Runtime, a *answer, log *slog.Logger) error {
	cr := req.Create
	if cr == nil {
		return errors.New("create: no container described")
	}
	spec, err := readSpec(cr.Bundle)
	if err != nil {
		return err
	}
	if clampOOMScoreAdj(spec, proc.OOMScoreAdjFloor(), log) && cr.Runtime != nil {
		// An external runtime reads the bundle's spec itself.
		if err := atomicfile.WriteJSON(filepath.Join(cr.Bundle, "config.json"), spec); err != nil {
			return fmt.Errorf("write clamped spec: %w", err)
		}
	}
	cctx := &ctrCtx{Dir: cr.Dir, RuncRoot: cr.RuncRoot, Runtime: cr.Runtime, CgroupsPath: spec.Linux.CgroupsPath,
		LogDir: cr.LogDir, LogPath: cr.LogPath}
	dir, err := os.Open(cr.Dir)
	if err != nil {
		return fmt.Errorf("open container dir: %w", err)
	}
	a.fd("dir", dir)
	if cr.LogPath != "" {
		f, err := crilog.OpenFile(cr.LogDir, cr.LogPath)
		if err != nil {
			return err
		}
		a.fd("log", f)
	}
	if rt == nil {
		rt = cctx.runtime()
	}
	c, err := createWithStdio(req.ID, cr, spec, rt, a)
	if err != nil {
		return err
	}
	if cgdriver.IsSystemd(spec.Linux.CgroupsPath) {
		watchOOM(c, a, log)
	}
	if err := a.setPID(c.PID()); err != nil {
		return err
	}
	if cr.Runtime != nil {
		a.set("runtime", cr.Runtime.Path)
	}
	if cr.TTY {
		a.set("tty", "1")
	}
	if cr.StdinOnce {
		a.set("stdin_once", "1")
	}
	return a.setJSON("ctx", cctx)
}

// createWithStdio makes the container's stdio pipes (or has the runtime
// make a TTY) and creates it; the monitor's ends go into a.
func createWithStdio(id string, cr *CreateRequest, spec *specs.Spec, rt ocirt.Runtime, a *answer) (ocirt.Container, error) {
	stdio := ocirt.Stdio{TTY: cr.TTY}
	defer func() {
		for _, f := range []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
			if f != nil {
				f.Close()
			}
		}
	}()
	if !cr.TTY {
		outR, outW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		stdio.Stdout = outW
		a.fd("out", outR)
		errR, errW, err := os.Pipe()
		if err != nil {
			return nil, err
		}
		stdio.Stderr = errW
		a.fd("err", errR)
		if cr.Stdin {
			r, w, err := os.Pipe()
			if err != nil {
				return nil, err
			}
			stdio.Stdin = r
			a.fd("in", w)
		}
	}
	c, err := rt.Create(id, cr.Bundle, spec, stdio)
	if err != nil {
		return nil, err
	}
	if master := c.Console(); master != nil {
		a.fd("out", master)
		if cr.Stdin {
			a.fd("in", master)
		}
	}
	return c, nil
}

func readSpec(bundle string) (*specs.Spec, error) {
	data, err := os.ReadFile(filepath.Join(bundle, "config.json"))
	if err != nil {
		return nil, fmt.Errorf("read spec: %w", err)
	}
	var spec specs.Spec
	if err := json.Unmarshal(data, &spec); err != nil {
		return nil, fmt.Errorf("parse spec: %w", err)
	}
	if spec.Linux == nil {
		spec.Linux = &specs.Linux{}
	}
	return &spec, nil
}

// clampOOMScoreAdj raises an oom_score_adj below floor (what the kernel
// lets the monitor set: root without CAP_SYS_RESOURCE cannot go below its
// oom_score_adj_min) to floor; the runtime would fail the start. It
// reports whether it changed spec.
func clampOOMScoreAdj(spec *specs.Spec, floor int, log *slog.Logger) bool {
	if spec.Process == nil || spec.Process.OOMScoreAdj == nil || *spec.Process.OOMScoreAdj >= floor {
		return false
	}
	log.Info("oom_score_adj clamped", "wanted", *spec.Process.OOMScoreAdj, "set", floor)
	spec.Process.OOMScoreAdj = &floor
	return true
}

func startContainer(id string, c *ctrCtx, a *answer) error {
	h, err := c.load(id)
	if err != nil {
		return err
	}
	if err := ocirt.StartLoaded(h); err != nil {
		return fmt.Errorf("start container: %w", err)
	}
	a.set("started", "1")
	return nil
}

// deleteContainer removes the container's runtime state and cgroup (the
// monitor killed it and recorded its exit first). libcontainer runs the
// spec's poststop hooks (CDI's) here, as children of this helper.
func deleteContainer(id string, c *ctrCtx) error {
	h, err := c.load(id)
	if errors.Is(err, ocirt.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	return h.Delete()
}

func reopenLog(id string, c *ctrCtx, a *answer) error {
	if c.LogPath == "" {
		return fmt.Errorf("container %s has no log", id)
	}
	f, err := crilog.OpenFile(c.LogDir, c.LogPath)
	if err != nil {
		return err
	}
	a.fd("log", f)
	return nil
}

// afterExit kills what is left in the container's cgroup once its init is
// gone (with a PID namespace of its own the kernel already did; in a
// shared-PID or host-PID pod the init's children would live on, holding
// ports, writing logs, until RemoveContainer), and reads the cgroup's OOM
// kill count while the cgroup is there.
func afterExit(id string, c *ctrCtx, code int, a *answer, log *slog.Logger) error {
	h, err := c.load(id)
	if err != nil {
		return err
	}
	if err := h.Signal(unix.SIGKILL, true); err != nil && !errors.Is(err, ocirt.ErrNotRunning) {
		log.Warn("kill the rest of the container's cgroup", "err", err)
	}
	if paths, err := h.CgroupPaths(); err == nil {
		if n, err := cgdriver.OOMKills(paths); err == nil && n > 0 {
			a.set("oom", "1")
		}
	}
	log.Debug("container exited", "exit_code", code)
	return nil
}

package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/cgdriver"
	"github.com/minicri/minicri/internal/crilog"
	"github.com/minicri/minicri/internal/ocirt"
)

// ioDrainTimeout bounds how long an exit waits for the container's output
// to drain: a daemonised grandchild may hold the pipes open forever.
const ioDrainTimeout = 2 * time.Second

// ctr is one container the monitor is the parent of.
type ctr struct {
	id     string
	dir    string
	reaper *reaper
	c      ocirt.Container
	// runtime is the OCI runtime binary ("": the built-in libcontainer).
	runtime string
	log     *crilog.File // nil without a log path
	tty     *os.File     // the PTY master, for TTY containers

	stdinMu   sync.Mutex
	stdin     io.WriteCloser // nil unless the container has stdin (or it was closed)
	stdinOnce bool           // the first attach's stdin close closes stdin

	attachMu sync.Mutex
	attached map[*attachment]struct{} // attach sessions, fed by the copiers

	io     sync.WaitGroup // log copiers
	exited chan struct{}  // closed after exit is recorded

	oomSeen atomic.Bool   // the kernel OOM-killed in the cgroup (watchOOM)
	oomDone chan struct{} // closed when watchOOM's watch ends; nil without one
	// oomWatch follows a cgroup v2 cgroup's kills (watchOOM); nil without one.
	oomWatch *cgdriver.OOMWatch

	mu        sync.Mutex
	startedAt time.Time
	exit      *Exit
}

func (k *ctr) info() *ContainerInfo {
	k.mu.Lock()
	defer k.mu.Unlock()
	return &ContainerInfo{PID: k.c.PID(), StartedAt: k.startedAt, Exit: k.exit, Runtime: k.runtime}
}

// containers is the monitor's table of containers.
type containers struct {
	mu     sync.Mutex
	byID   map[string]*ctr
	log    *slog.Logger
	reaper *reaper
	// oomFloor is the lowest oom_score_adj the monitor may set.
	oomFloor int
}

func (cs *containers) get(id string) (*ctr, error) {
	cs.mu.Lock()
	defer cs.mu.Unlock()
	k, ok := cs.byID[id]
	if !ok {
		return nil, fmt.Errorf("container %s: %w", id, errUnknownContainer)
	}
	return k, nil
}

var errUnknownContainer = errors.New("unknown to this monitor")

// create makes the container and starts its init, which then waits for start.
func (cs *containers) create(id string, req *CreateRequest) (*ContainerInfo, error) {
	return cs.createWith(id, req, cs.runtime(req))
}

// createWith is create through the runtime rt.
func (cs *containers) createWith(id string, req *CreateRequest, rt ocirt.Runtime) (*ContainerInfo, error) {
	cs.mu.Lock()
	_, dup := cs.byID[id]
	cs.mu.Unlock()
	if dup {
		return nil, fmt.Errorf("container %s already exists", id)
	}
	spec, err := readSpec(req.Bundle)
	if err != nil {
		return nil, err
	}
	if clampOOMScoreAdj(spec, cs.oomFloor, cs.log) && req.Runtime != nil {
		// An external runtime reads the bundle's spec itself.
		if err := atomicfile.WriteJSON(filepath.Join(req.Bundle, "config.json"), spec); err != nil {
			return nil, fmt.Errorf("write clamped spec: %w", err)
		}
	}
	k := &ctr{id: id, dir: req.Dir, exited: make(chan struct{}), reaper: cs.reaper}
	if req.Runtime != nil {
		k.runtime = req.Runtime.Path
	}
	// The runtime waits for its own helper processes while it starts.
	done := cs.reaper.starting()
	err = k.start(rt, spec, req)
	if err == nil {
		cs.reaper.trackLocked(k.c.PID())
	}
	done()
	if err != nil {
		if k.log != nil {
			_ = k.log.Close() // every failed create would keep its log open; nothing was logged yet
		}
		return nil, err
	}
	if cgdriver.IsSystemd(spec.Linux.CgroupsPath) {
		k.watchOOM(cs.log)
	}
	cs.mu.Lock()
	cs.byID[id] = k
	cs.mu.Unlock()
	go k.waitExit(cs.log)
	return k.info(), nil
}

// runtime is the OCI runtime that runs the container req describes.
func (cs *containers) runtime(req *CreateRequest) ocirt.Runtime {
	if req.Runtime == nil {
		return ocirt.Libcontainer{Root: req.RuncRoot}
	}
	return &ocirt.Binary{Path: req.Runtime.Path, Root: req.Runtime.Root, Guard: cs.reaper.starting}
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
	return &spec, nil
}

// clampOOMScoreAdj raises an oom_score_adj below floor (what the kernel
// lets this monitor set: root without CAP_SYS_RESOURCE cannot go below its
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

// start sets up the container's stdio and has rt create it (its init
// then waits for begin).
func (k *ctr) start(rt ocirt.Runtime, spec *specs.Spec, req *CreateRequest) (err error) {
	k.stdinOnce = req.StdinOnce
	if req.LogPath != "" {
		if k.log, err = crilog.Open(req.LogDir, req.LogPath); err != nil {
			return err
		}
	}
	stdio := ocirt.Stdio{TTY: req.TTY}
	var parentEnds []*os.File
	defer func() {
		for _, f := range []*os.File{stdio.Stdin, stdio.Stdout, stdio.Stderr} {
			if f != nil {
				f.Close()
			}
		}
		if err != nil {
			for _, f := range parentEnds {
				f.Close()
			}
		}
	}()
	var stdoutR, stderrR *os.File
	if !req.TTY {
		if stdoutR, stdio.Stdout, err = os.Pipe(); err != nil {
			return err
		}
		parentEnds = append(parentEnds, stdoutR)
		if stderrR, stdio.Stderr, err = os.Pipe(); err != nil {
			return err
		}
		parentEnds = append(parentEnds, stderrR)
		if req.Stdin {
			var w *os.File
			if stdio.Stdin, w, err = os.Pipe(); err != nil {
				return err
			}
			parentEnds = append(parentEnds, w)
			k.stdin = w
		}
	}
	if k.c, err = rt.Create(k.id, req.Bundle, spec, stdio); err != nil {
		k.stdin = nil
		return err
	}
	if master := k.c.Console(); master != nil {
		k.tty = master
		if req.Stdin {
			k.stdin = master
		}
		k.copy(crilog.Stdout, master)
		return nil
	}
	k.copy(crilog.Stdout, stdoutR)
	k.copy(crilog.Stderr, stderrR)
	return nil
}

// copy drains r into the container log (or discards it without a log) and
// to the attached clients.
func (k *ctr) copy(stream string, r *os.File) {
	kind := frameStdout
	if stream == crilog.Stderr {
		kind = frameStderr
	}
	src := io.TeeReader(r, fanWriter{k: k, kind: kind})
	k.io.Add(1)
	go func() {
		defer k.io.Done()
		defer r.Close()
		if k.log == nil {
			_, _ = io.Copy(io.Discard, src) // a drain: it ends when the container closes its end
			return
		}
		k.log.Copy(stream, src, nil)
	}()
}

// waitExit reaps the init, records the exit atomically, then publishes it.
func (k *ctr) waitExit(log *slog.Logger) {
	ps, err := k.c.Wait()
	k.reaper.untrack(k.c.PID())
	code := -1
	if ps != nil {
		code = exitCode(ps)
	} else if err != nil {
		log.Error("wait for container failed", "container", k.id, "err", err)
	}
	k.killLeftovers(log)
	ex := &Exit{Code: code, FinishedAt: time.Now(), OOMKilled: k.oomKilled(code)}
	drained := make(chan struct{})
	go func() { k.io.Wait(); close(drained) }()
	select {
	case <-drained:
	case <-time.After(ioDrainTimeout):
		log.Warn("container output still open after exit; not waiting for it", "container", k.id)
	}
	if err := atomicfile.WriteJSON(ExitPath(k.dir), ex); err != nil {
		log.Error("record container exit", "container", k.id, "err", err)
	}
	k.mu.Lock()
	k.exit = ex
	k.mu.Unlock()
	close(k.exited)
	log.Info("container exited", "container", k.id, "exit_code", code, "oom_killed", ex.OOMKilled)
}

// killLeftovers kills what is left in the container's cgroup once its init
// is gone. With a PID namespace of its own the kernel already did; in a
// shared-PID or host-PID pod the init's children would live on (holding
// ports, writing logs) until RemoveContainer. The runtime's SIGKILL to all
// kills the whole cgroup (libcontainer: cgroup.kill on cgroup v2 and the
// unified hierarchy of a hybrid host, else freeze, SIGKILL every member,
// thaw).
func (k *ctr) killLeftovers(log *slog.Logger) {
	err := k.c.Signal(unix.SIGKILL, true)
	if err != nil && !errors.Is(err, ocirt.ErrNotRunning) {
		log.Warn("kill the rest of the container's cgroup", "container", k.id, "err", err)
	}
}

// watchOOM follows the container's OOM kills while it runs. Under systemd
// the scope's cgroup, and the kill count in it, goes as soon as its last
// process exits: often before the exit is reaped and the count read. On
// cgroup v2 cgdriver.WatchOOM does it (libcontainer's NotifyOOM loses kills
// there); on v1 libcontainer's eventfd on memory.oom_control.
func (k *ctr) watchOOM(log *slog.Logger) {
	if paths, err := k.c.CgroupPaths(); err == nil && cgdriver.Unified() && paths[""] != "" {
		w, err := cgdriver.WatchOOM(paths[""])
		if err == nil {
			k.oomWatch = w
			return
		}
		log.Warn("watch for OOM kills", "container", k.id, "err", err)
	}
	ch, err := k.c.NotifyOOM()
	if err != nil {
		log.Warn("watch for OOM kills", "container", k.id, "err", err)
		return
	}
	k.oomDone = make(chan struct{})
	go func() {
		defer close(k.oomDone)
		for range ch {
			k.oomSeen.Store(true)
		}
	}()
}

// oomKilled reads the cgroup's OOM kill count (v1 memory.oom_control, v2
// memory.events) or, once the cgroup is gone, what watchOOM saw.
func (k *ctr) oomKilled(code int) bool {
	if paths, err := k.c.CgroupPaths(); err == nil {
		if n, err := cgdriver.OOMKills(paths); err == nil && n > 0 {
			return true
		}
	}
	if k.oomWatch != nil {
		return k.oomWatch.Killed(time.Second, code == 128+int(unix.SIGKILL))
	}
	if k.oomDone != nil {
		select {
		case <-k.oomDone:
		case <-time.After(time.Second):
		}
	}
	return k.oomSeen.Load()
}

// begin lets a created container's init exec the user's process.
func (k *ctr) begin() (*ContainerInfo, error) {
	if err := k.c.Start(); err != nil {
		return nil, fmt.Errorf("start container: %w", err)
	}
	k.mu.Lock()
	k.startedAt = time.Now()
	k.mu.Unlock()
	return k.info(), nil
}

// kill sends sig, waits up to timeout for the exit, then SIGKILLs.
func (k *ctr) kill(sig syscall.Signal, timeout time.Duration) (*ContainerInfo, error) {
	select {
	case <-k.exited:
		return k.info(), nil
	default:
	}
	if sig != 0 && sig != syscall.SIGKILL && timeout > 0 {
		if err := k.c.Signal(sig, false); err != nil && !errors.Is(err, ocirt.ErrNotRunning) {
			return nil, fmt.Errorf("signal container: %w", err)
		}
		select {
		case <-k.exited:
			return k.info(), nil
		case <-time.After(timeout):
		}
	}
	if err := k.c.Signal(syscall.SIGKILL, false); err != nil && !errors.Is(err, ocirt.ErrNotRunning) {
		return nil, fmt.Errorf("kill container: %w", err)
	}
	select {
	case <-k.exited:
		return k.info(), nil
	case <-time.After(30 * time.Second):
		return nil, fmt.Errorf("container %s did not exit after SIGKILL", k.id)
	}
}

// deleteContainer removes the container's runtime state. libcontainer's
// Destroy runs the spec's poststop hooks (CDI's) as children of this
// monitor that it waits for, so the orphan reaper is held off meanwhile; a
// runtime binary holds it off itself (ocirt.Binary.Guard).
func (cs *containers) deleteContainer(k *ctr) error {
	if k.runtime == "" {
		done := cs.reaper.starting()
		defer done()
	}
	return k.c.Delete()
}

// remove kills the container if needed and destroys it.
func (cs *containers) remove(id string) error {
	k, err := cs.get(id)
	if err != nil {
		return nil // already gone: idempotent
	}
	if _, err := k.kill(syscall.SIGKILL, 0); err != nil {
		return err
	}
	if err := cs.deleteContainer(k); err != nil {
		return fmt.Errorf("destroy container: %w", err)
	}
	if k.log != nil {
		if err := k.log.Close(); err != nil {
			cs.log.Warn("close container log", "container", id, "err", err)
		}
	}
	k.stdinMu.Lock()
	if k.stdin != nil {
		k.stdin.Close()
	}
	k.stdinMu.Unlock()
	cs.mu.Lock()
	delete(cs.byID, id)
	cs.mu.Unlock()
	return nil
}

// killAll kills every container (the pod is being stopped).
func (cs *containers) killAll() error {
	cs.mu.Lock()
	all := make([]*ctr, 0, len(cs.byID))
	for _, k := range cs.byID {
		all = append(all, k)
	}
	cs.mu.Unlock()
	var errs []error
	for _, k := range all {
		if _, err := k.kill(syscall.SIGKILL, 0); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

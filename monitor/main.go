package monitor

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"net"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/cgdriver"
	"github.com/minicri/minicri/internal/proc"
)

// stageEnv marks the second (detached) stage of a monitor start.
const stageEnv = "_MINICRI_MONITOR_STAGE"

// Main is the entry point of `minicri monitor DIR`. The first invocation
// re-executes itself as the real monitor in a new session and exits, so the
// monitor is re-parented away from the daemon.
func Main(args []string) int {
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: minicri monitor DIR")
		return 2
	}
	dir := args[0]
	readyPipe := os.NewFile(readyFD, "ready")
	if os.Getenv(stageEnv) == "" {
		return detach(dir, readyPipe)
	}
	return serve(dir, readyPipe)
}

func detach(dir string, readyPipe *os.File) int {
	logf, err := os.OpenFile(logPath(dir), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		reportf(readyPipe, State{}, "open monitor log: %v", err)
		return 1
	}
	exe, err := os.Executable()
	if err != nil {
		reportf(readyPipe, State{}, "find own executable: %v", err)
		return 1
	}
	cmd := exec.Command(exe, "monitor", dir)
	cmd.Env = append(os.Environ(), stageEnv+"=2")
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.ExtraFiles = []*os.File{readyPipe}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		reportf(readyPipe, State{}, "start detached monitor: %v", err)
		return 1
	}
	return 0
}

func reportf(readyPipe *os.File, st State, format string, a ...any) {
	msg := fmt.Sprintf(format, a...)
	if err := json.NewEncoder(readyPipe).Encode(ready{Error: msg, State: st}); err != nil {
		// The daemon stopped waiting; the monitor's log (stderr) keeps it.
		slog.Error("cannot report monitor failure to the daemon", "failure", msg, "err", err)
	}
}

// monitor is the state of the running monitor process.
type monitor struct {
	spec   Spec
	log    *slog.Logger
	ctrs   *containers
	reaper *reaper

	mu       sync.Mutex
	pause    PauseInfo
	exit     chan struct{} // closed when the pause has exited
	stop     chan struct{} // closed when a stop request was served
	stopOnce sync.Once
}

func serve(dir string, readyPipe *os.File) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil))
	var spec Spec
	if err := atomicfile.ReadJSON(specPath(dir), &spec); err != nil {
		reportf(readyPipe, State{}, "read spec: %v", err)
		return 1
	}
	log = log.With("pod", spec.PodID)
	m := &monitor{spec: spec, log: log, exit: make(chan struct{}), stop: make(chan struct{}),
		reaper: newReaper(log)}
	m.ctrs = &containers{byID: map[string]*ctr{}, log: log, reaper: m.reaper, oomFloor: proc.OOMScoreAdjFloor()}
	st, err := m.start()
	if err != nil {
		reportf(readyPipe, st, "%v", err)
		log.Error("monitor start failed", "err", err)
		return 1
	}
	ln, err := listen(SocketPath(dir))
	if err != nil {
		if kerr := proc.KillRef(st.Pause, 5*time.Second); kerr != nil {
			log.Error("cannot kill the pause after a failed start", "pid", st.Pause.PID, "err", kerr)
		}
		reportf(readyPipe, st, "%v", err)
		return 1
	}
	if err := json.NewEncoder(readyPipe).Encode(ready{State: st}); err != nil {
		// The daemon gave up waiting: it treats the pod as failed and stops
		// this monitor through its socket or kills it by its recorded PID.
		log.Warn("cannot report readiness to the daemon", "err", err)
	}
	readyPipe.Close()
	log.Info("monitor ready", "pause_pid", st.Pause.PID, "monitor_pid", st.Monitor.PID)

	go m.reaper.run()
	go m.accept(ln)
	<-m.stop
	ln.Close()
	if err := os.Remove(SocketPath(dir)); err != nil && !errors.Is(err, fs.ErrNotExist) {
		log.Warn("cannot remove monitor socket", "err", err)
	}
	log.Info("monitor exiting")
	return 0
}

// start makes the monitor a subreaper, records itself and starts the pause.
func (m *monitor) start() (State, error) {
	var st State
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		return st, fmt.Errorf("set child subreaper: %w", err)
	}
	self, err := proc.RefOf(os.Getpid())
	if err != nil {
		return st, err
	}
	st.Monitor = self
	if err := atomicfile.WriteJSON(StatePath(m.spec.Dir), st); err != nil {
		return st, err
	}
	// Out of the daemon's systemd service, so that its restart spares us.
	if err := cgdriver.PlaceMonitor(m.spec.PodID, os.Getpid()); err != nil {
		m.log.Warn("monitor stays in the daemon's service: stopping the service would kill it", "pod", m.spec.PodID, "err", err)
	}
	done := m.reaper.starting()
	cmd, err := startPause(m.spec.Pause, m.log)
	if err != nil {
		done()
		return st, err
	}
	m.reaper.trackLocked(cmd.Process.Pid)
	done()
	ref, err := proc.RefOf(cmd.Process.Pid)
	if err != nil {
		return st, fmt.Errorf("pause exited at start: %w", err)
	}
	st.Pause = ref
	m.pause.Ref = ref
	go m.reapPause(cmd)
	if err := atomicfile.WriteJSON(StatePath(m.spec.Dir), st); err != nil {
		m.killStartedPause(cmd)
		return st, err
	}
	if err := placePause(m.spec.Pause, ref.PID, m.log); err != nil {
		m.killStartedPause(cmd)
		return st, err
	}
	return st, nil
}

func (m *monitor) reapPause(cmd *exec.Cmd) {
	err := cmd.Wait()
	m.reaper.untrack(cmd.Process.Pid)
	code := 0
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		code = exitCode(ee.ProcessState)
	}
	m.mu.Lock()
	m.pause.Exited, m.pause.ExitCode, m.pause.ExitedAt = true, code, time.Now()
	m.mu.Unlock()
	close(m.exit)
	m.log.Info("pause exited", "exit_code", code)
}

// exitCode reports 128+signal for a process killed by a signal.
func exitCode(ps *os.ProcessState) int {
	if ws, ok := ps.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ps.ExitCode()
}

// listen binds the monitor's socket, 0600 whatever umask the monitor
// inherited: whoever may connect may create and kill containers. bind(2)
// applies the umask to the new socket, so the umask is tightened around it
// (nothing else in the monitor creates files yet; see serve).
func listen(sock string) (net.Listener, error) {
	// A socket left by a previous monitor of this pod.
	if err := os.Remove(sock); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return nil, fmt.Errorf("remove stale socket: %w", err)
	}
	var ln net.Listener
	err := viaDirFD(sock, func(short string) (err error) {
		old := unix.Umask(0o177)
		ln, err = net.Listen("unix", short)
		unix.Umask(old)
		if err == nil {
			if err = os.Chmod(short, 0o600); err != nil {
				ln.Close()
			}
		}
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("listen on %s: %w", sock, err)
	}
	return ln, nil
}

func (m *monitor) accept(ln net.Listener) {
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		go m.handle(conn)
	}
}

func (m *monitor) handle(conn net.Conn) {
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return
	}
	var req Request
	var resp Response
	if err := json.Unmarshal(line, &req); err == nil && req.Op == OpAttach {
		m.attach(conn, br, req) // the session owns the connection
		return
	}
	defer conn.Close()
	if err := json.Unmarshal(line, &req); err != nil {
		resp.Error = "bad request: " + err.Error()
	} else {
		resp = m.dispatch(req)
	}
	if err := json.NewEncoder(conn).Encode(resp); err != nil {
		m.log.Debug("response not delivered", "op", req.Op, "err", err)
	}
	if req.Op == OpStop && resp.Error == "" {
		m.finish()
	}
}

func (m *monitor) dispatch(req Request) Response {
	switch req.Op {
	case OpStatus:
		return Response{Pause: m.pauseInfo()}
	case OpStop:
		err := errors.Join(m.ctrs.killAll(), m.killPause(10*time.Second))
		return Response{Error: errString(err), Pause: m.pauseInfo()}
	case OpCreate:
		if req.Create == nil {
			return Response{Error: "create: no container described"}
		}
		info, err := m.ctrs.create(req.ID, req.Create)
		return Response{Error: errString(err), Container: info}
	case OpDelete:
		return Response{Error: errString(m.ctrs.remove(req.ID))}
	case OpRestore:
		info, err := m.ctrs.restore(req.ID, req.Create)
		return Response{Error: errString(err), Container: info}
	}
	k, err := m.ctrs.get(req.ID)
	if err != nil {
		return Response{Error: err.Error()}
	}
	var info *ContainerInfo
	switch req.Op {
	case OpStart:
		info, err = k.begin()
	case OpKill:
		info, err = k.kill(syscall.Signal(req.Signal), req.Timeout)
	case OpReopenLog:
		if k.log == nil {
			err = fmt.Errorf("container %s has no log", req.ID)
		} else {
			err = k.log.Reopen()
		}
	case OpInspect:
		info = k.info()
	case OpResize:
		err = k.resize(req.Width, req.Height)
	default:
		err = fmt.Errorf("unknown op %q", req.Op)
	}
	return Response{Error: errString(err), Container: info}
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func (m *monitor) pauseInfo() PauseInfo {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.pause
}

// killStartedPause kills a pause whose start failed half-way (reapPause
// reaps it).
func (m *monitor) killStartedPause(cmd *exec.Cmd) {
	if err := cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		m.log.Error("cannot kill the pause after a failed start", "pid", cmd.Process.Pid, "err", err)
	}
}

func (m *monitor) killPause(timeout time.Duration) error {
	if m.pauseInfo().Exited {
		return nil
	}
	if err := syscall.Kill(m.pause.Ref.PID, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
		return fmt.Errorf("kill pause %d: %w", m.pause.Ref.PID, err)
	}
	select {
	case <-m.exit:
		return nil
	case <-time.After(timeout):
		return fmt.Errorf("pause %d did not exit within %s", m.pause.Ref.PID, timeout)
	}
}

func (m *monitor) finish() { m.stopOnce.Do(func() { close(m.stop) }) }

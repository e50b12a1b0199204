package monitor

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
	"github.com/minicri/minicri/internal/atomicfile"
	"github.com/minicri/minicri/internal/proc"
)

// The pod's monitor is two programs. The long-lived one is minicri-monitor
// (C, cmd/minicri-monitor): it reaps, holds the containers' stdio, writes
// their CRI logs and exit records, serves attach and kill. Everything that
// creates processes or resolves paths is done by a short-lived helper,
// `minicri-monitor-helper DIR` (cmd/minicri-monitor-helper), which
// minicri-monitor forks per request: the processes the helper starts re-parent to minicri-monitor (a
// child subreaper) when it exits. The two talk on fd 3, a SOCK_SEQPACKET
// socketpair: one helperMsg in, one answer (lines and descriptors) out.

// helperFD is the helper's end of its socketpair with the monitor.
const helperFD = 3

// Internal operations the monitor asks its helper for.
const (
	opPodStart = "pod-start" // start the pause, record the monitor's state
	opExited   = "exited"    // a container's init was reaped: kill what is left, read OOM kills
)

// helperMsg is what the monitor sends its helper: the client's request
// (or an internal one), the container's context from its create, and, for
// opExited, the init's exit code.
type helperMsg struct {
	Req  Request `json:"req"`
	Ctx  *ctrCtx `json:"ctx"`
	Code int     `json:"code"`
}

// ctrCtx is what a helper needs to find a container again; the monitor
// keeps it without reading it and hands it back with every request.
type ctrCtx struct {
	Dir         string         `json:"dir"`
	RuncRoot    string         `json:"runc_root"`
	Runtime     *RuntimeBinary `json:"runtime,omitempty"`
	CgroupsPath string         `json:"cgroups_path"`
	LogDir      string         `json:"log_dir,omitempty"`
	LogPath     string         `json:"log_path,omitempty"`
}

// answer is the helper's reply: "key value" lines and named descriptors.
type answer struct {
	lines []string
	files []*os.File
	names []string
}

func (a *answer) set(key, value string) {
	a.lines = append(a.lines, key+" "+strings.ReplaceAll(value, "\n", " "))
}

func (a *answer) setJSON(key string, v any) error {
	data, err := json.Marshal(v)
	if err != nil {
		return err
	}
	a.set(key, string(data))
	return nil
}

// setPID names the process the helper started, by its pid and start time:
// the monitor takes only that process (a pid alone may be reused by then)
// as the child it waits for and signals. The helper is a child subreaper,
// so the process is its child or descendant until it exits: the start time
// is there to read even when the process died already.
func (a *answer) setPID(pid int) error {
	st, err := proc.StartTime(pid)
	if err != nil {
		return fmt.Errorf("the process started (pid %d): %w", pid, err)
	}
	a.set("pid", strconv.Itoa(pid))
	a.set("start_time", strconv.FormatUint(st, 10))
	return nil
}

// fd passes f to the monitor under name (out, err, in, log, dir, oomino,
// oomevt, oomdir, oompar).
func (a *answer) fd(name string, f *os.File) {
	a.files = append(a.files, f)
	a.names = append(a.names, name)
}

func (a *answer) send() error {
	if len(a.files) > 0 {
		a.set("fds", strings.Join(a.names, " "))
	}
	fds := make([]int, len(a.files))
	for i, f := range a.files {
		fds[i] = int(f.Fd())
	}
	var oob []byte
	if len(fds) > 0 {
		oob = unix.UnixRights(fds...)
	}
	return unix.Sendmsg(helperFD, []byte(strings.Join(a.lines, "\n")+"\n"), oob, nil, 0)
}

// HelperMain is `minicri-monitor-helper DIR`, run by minicri-monitor.
func HelperMain(args []string) int {
	log := slog.New(slog.NewJSONHandler(os.Stderr, nil)).With("helper", os.Getpid())
	if len(args) != 1 {
		fmt.Fprintln(os.Stderr, "usage: minicri-monitor-helper DIR (run by minicri-monitor)")
		return 2
	}
	unix.CloseOnExec(helperFD) // the processes it starts must not hold the monitor's socket
	// What it starts (a runtime binary's init, re-parented when the binary
	// exits) stays its descendant, unreaped, until it exits: see setPID.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		log.Warn("cannot become a child subreaper", "err", err)
	}
	buf := make([]byte, 256<<10)
	n, _, _, _, err := unix.Recvmsg(helperFD, buf, nil, 0)
	if err != nil {
		log.Error("read the monitor's request", "err", err)
		return 1
	}
	var msg helperMsg
	a := &answer{}
	if err := json.Unmarshal(buf[:n], &msg); err != nil {
		a.set("error", "bad helper request: "+err.Error())
	} else if err := runOp(args[0], msg, a, log); err != nil {
		a.set("error", err.Error())
	}
	if err := a.send(); err != nil {
		log.Error("answer the monitor", "op", msg.Req.Op, "err", err)
		return 1
	}
	return 0
}

func runOp(dir string, msg helperMsg, a *answer, log *slog.Logger) error {
	req := msg.Req
	log = log.With("op", req.Op)
	if req.ID != "" {
		log = log.With("container", req.ID)
	}
	switch req.Op {
	case opPodStart:
		return podStart(dir, a, log)
	case OpCreate:
		return createContainer(req, a, log)
	case OpRestore:
		return restoreContainer(req, a, log)
	}
	if msg.Ctx == nil {
		return fmt.Errorf("%s: container %s: %w", req.Op, req.ID, errUnknownContainer)
	}
	switch req.Op {
	case OpStart:
		return startContainer(req.ID, msg.Ctx, a)
	case OpDelete:
		return deleteContainer(req.ID, msg.Ctx)
	case OpReopenLog:
		return reopenLog(req.ID, msg.Ctx, a)
	case opExited:
		return afterExit(req.ID, msg.Ctx, msg.Code, a, log)
	}
	return fmt.Errorf("unknown op %q", req.Op)
}

// podStart records the monitor (the helper's parent), moves it out of the
// daemon's service and starts the pause, which re-parents to the monitor
// when the helper exits.
func podStart(dir string, a *answer, log *slog.Logger) (err error) {
	var spec Spec
	var st State
	defer func() {
		if jerr := a.setJSON("state", st); jerr != nil && err == nil {
			err = jerr
		}
	}()
	if err := atomicfile.ReadJSON(specPath(dir), &spec); err != nil {
		return fmt.Errorf("read spec: %w", err)
	}
	a.set("pod", spec.PodID)
	mon := os.Getppid()
	if st.Monitor, err = proc.RefOf(mon); err != nil {
		return err
	}
	if err := atomicfile.WriteJSON(StatePath(dir), st); err != nil {
		return err
	}
	// Out of the daemon's systemd service, so that its restart spares it.
	if err := cgdriver.PlaceMonitor(spec.PodID, mon); err != nil {
		log.Warn("monitor stays in the daemon's service: stopping the service would kill it", "pod", spec.PodID, "err", err)
	} else if err := followMonitor(mon); err != nil {
		log.Warn("the pause starts in the daemon's service", "pod", spec.PodID, "err", err)
	}
	cmd, err := startPause(spec.Pause, log)
	if err != nil {
		return err
	}
	kill := func() { _ = cmd.Process.Kill(); _ = cmd.Wait() } // the failure is the one reported
	ref, err := proc.RefOf(cmd.Process.Pid)
	if err != nil {
		kill()
		return fmt.Errorf("pause exited at start: %w", err)
	}
	st.Pause = ref
	if err := atomicfile.WriteJSON(StatePath(dir), st); err != nil {
		kill()
		return err
	}
	if err := placePause(spec.Pause, ref.PID, log); err != nil {
		kill()
		return err
	}
	a.set("pid", strconv.Itoa(ref.PID))
	a.set("start_time", strconv.FormatUint(ref.StartTime, 10))
	return a.setJSON("ref", ref)
}

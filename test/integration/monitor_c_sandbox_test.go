package integration

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// A sandbox runs bin/minicri-monitor on its own, without the daemon, in a PID
// (and mount) namespace of its own, with this test binary as its helper: a
// fake that answers each request as the request's "fake" field asks (see
// monitor_c_fake_test.go). A kill(2) of the monitor's can reach no process
// outside the namespace (kill(-1) walks only the caller's PID namespace), so
// a test may attack it. Inside, a sentinel (not a descendant of the monitor)
// and the namespace's init record every signal they get.
//
// The roles this binary plays are picked by monRole before any test runs.
const (
	monRole = "MINICRI_IT_MONITOR_ROLE"
	monDir  = "MINICRI_IT_MONITOR_DIR"
	monBin  = "MINICRI_IT_MONITOR_BIN"
	monArg  = "MINICRI_IT_MONITOR_ARG"
)

// recorded are the signals the sentinel and the init write down.
var recorded = []os.Signal{syscall.SIGTERM, syscall.SIGINT, syscall.SIGHUP, syscall.SIGUSR1, syscall.SIGUSR2,
	syscall.SIGQUIT, syscall.SIGALRM, syscall.SIGWINCH}

func init() {
	role := os.Getenv(monRole)
	if role == "" {
		return
	}
	roles := map[string]func() int{
		"init": sandboxInit, "sentinel": sentinelMain, "helper": fakeHelperMain,
		"sleep": sleepMain, "forker": forkerMain, "exiter": exiterMain,
	}
	main, ok := roles[role]
	if !ok {
		fmt.Fprintf(os.Stderr, "unknown %s %q\n", monRole, role)
		os.Exit(2)
	}
	os.Exit(main())
}

type monSandbox struct {
	dir  string
	init *exec.Cmd
}

// startMonSandbox starts the namespace's init, which starts the sentinel and
// the monitor (bin/minicri-monitor next to MINICRI_BIN), and waits for the
// monitor's readiness line.
func startMonSandbox(t *testing.T) *monSandbox {
	t.Helper()
	s, r := launchMonSandbox(t)
	defer r.Close()
	r.SetReadDeadline(time.Now().Add(20 * time.Second))
	line, err := bufio.NewReader(r).ReadString('\n')
	if err != nil || strings.Contains(line, `"error"`) {
		t.Fatalf("monitor readiness %q: %v\n%s", line, err, s.logs())
	}
	return s
}

// launchMonSandbox starts the sandbox and returns the read end of the
// monitor's readiness pipe, not waiting on it.
func launchMonSandbox(t *testing.T) (*monSandbox, *os.File) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("the monitor's sandbox needs root (a PID namespace)")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	s := &monSandbox{dir: t.TempDir()}
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	dirf, err := os.Open(s.dir)
	if err != nil {
		t.Fatal(err)
	}
	defer dirf.Close()
	logf, err := os.Create(filepath.Join(s.dir, "init.log"))
	if err != nil {
		t.Fatal(err)
	}
	defer logf.Close()
	s.init = exec.Command(self)
	s.init.Env = append(os.Environ(), monRole+"=init", monDir+"="+s.dir,
		monBin+"="+filepath.Join(filepath.Dir(minicriBin(t)), "minicri-monitor"))
	s.init.ExtraFiles = []*os.File{w, dirf} // the monitor's fd 3 and 4
	s.init.Stdout, s.init.Stderr = logf, logf
	s.init.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID | syscall.CLONE_NEWNS, Pdeathsig: syscall.SIGKILL}
	err = s.init.Start()
	w.Close()
	if err != nil {
		t.Fatalf("start the monitor's sandbox: %v", err)
	}
	t.Cleanup(func() { s.stop(t) })
	return s, r
}

// stop kills the namespace's init: the kernel kills everything in it.
func (s *monSandbox) stop(t *testing.T) {
	_ = s.init.Process.Kill()
	_ = s.init.Wait()
	if t.Failed() {
		t.Logf("sandbox logs:\n%s", s.logs())
	}
}

func (s *monSandbox) logs() string {
	var b strings.Builder
	for _, f := range []string{"init.log", "monitor.log", "init.exits"} {
		data, _ := os.ReadFile(filepath.Join(s.dir, f))
		fmt.Fprintf(&b, "--- %s\n%s", f, data)
	}
	return b.String()
}

// call sends one request line to the monitor and reads its answer, waiting
// at most wait; a nil map when none came.
func (s *monSandbox) call(t *testing.T, req map[string]any, wait time.Duration) map[string]any {
	t.Helper()
	line, err := json.Marshal(req)
	if err != nil {
		t.Fatal(err)
	}
	c, err := net.Dial("unix", filepath.Join(s.dir, "monitor.sock"))
	if err != nil {
		t.Logf("%s: connect to the monitor: %v", req["op"], err)
		return nil
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(wait))
	if _, err := c.Write(append(line, '\n')); err != nil {
		t.Logf("%s: %v", req["op"], err)
		return nil
	}
	resp, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		t.Logf("%s: no answer within %v: %v", req["op"], wait, err)
		return nil
	}
	var m map[string]any
	if err := json.Unmarshal(resp, &m); err != nil {
		t.Fatalf("%s: answer %q: %v", req["op"], resp, err)
	}
	return m
}

// signals lists what the sentinel and the init recorded ("who signal" lines)
// and the init's children that ended (the sentinel is one of them).
func (s *monSandbox) signals() []string {
	var got []string
	for _, f := range []string{"sentinel.signals", "init.signals"} {
		data, _ := os.ReadFile(filepath.Join(s.dir, f))
		got = append(got, strings.Fields(string(data))...)
	}
	data, _ := os.ReadFile(filepath.Join(s.dir, "init.exits"))
	for _, l := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		if strings.HasPrefix(l, "sentinel ") {
			got = append(got, l)
		}
	}
	return got
}

func (s *monSandbox) sentinelPID(t *testing.T) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(s.dir, "sentinel.pid"))
	if err != nil {
		t.Fatal(err)
	}
	return strings.TrimSpace(string(data))
}

// running reports whether pid (in the sandbox's namespace) is a live process.
func (s *monSandbox) running(pid int) bool {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/root/proc/%d/stat", s.init.Process.Pid, pid))
	if err != nil {
		return false
	}
	f := strings.Fields(string(data[strings.LastIndexByte(string(data), ')')+1:]))
	return len(f) > 0 && f[0] != "Z" && f[0] != "X"
}

// ---- roles -------------------------------------------------------------------

func appendLine(name, line string) {
	f, err := os.OpenFile(filepath.Join(os.Getenv(monDir), name), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err == nil {
		fmt.Fprintln(f, line)
		f.Close()
	}
}

func recordSignals(who string) {
	ch := make(chan os.Signal, 16)
	signal.Notify(ch, recorded...)
	go func() {
		for sig := range ch {
			appendLine(who+".signals", who+":"+strings.ReplaceAll(sig.String(), " ", "-"))
		}
	}()
}

// envWith is this process's environment with key set to value (the first
// of two is the one a Go program reads).
func envWith(key, value string) []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, key+"=") {
			env = append(env, kv)
		}
	}
	return append(env, key+"="+value)
}

// startSelf starts this binary in role, with its first descriptors files
// (none, or nil: closed).
func startSelf(role, arg string, files ...*os.File) (*os.Process, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	os.Setenv(monArg, arg)
	env := envWith(monRole, role)
	return os.StartProcess(self, []string{role}, &os.ProcAttr{Env: env, Files: files})
}

// sandboxInit is PID 1 of the sandbox: it mounts the namespace's /proc,
// starts the sentinel and the monitor, then reaps.
func sandboxInit() int {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		fmt.Fprintln(os.Stderr, "make / private:", err)
		return 1
	}
	if err := syscall.Mount("proc", "/proc", "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, ""); err != nil {
		fmt.Fprintln(os.Stderr, "mount /proc:", err)
		return 1
	}
	recordSignals("init")
	syscall.CloseOnExec(3) // the readiness pipe and the directory: the monitor's only
	syscall.CloseOnExec(4)
	dir := os.Getenv(monDir)
	sentinel, err := startSelf("sentinel", "")
	if err != nil {
		fmt.Fprintln(os.Stderr, "start the sentinel:", err)
		return 1
	}
	if err := os.WriteFile(filepath.Join(dir, "sentinel.pid"), []byte(fmt.Sprint(sentinel.Pid)), 0o600); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	if err := startMonitor(dir); err != nil {
		fmt.Fprintln(os.Stderr, "start the monitor:", err)
		return 1
	}
	for {
		var ws syscall.WaitStatus
		pid, err := syscall.Wait4(-1, &ws, 0, nil)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		who := "pid"
		if pid == sentinel.Pid {
			who = "sentinel"
		}
		appendLine("init.exits", fmt.Sprintf("%s %d status 0x%x", who, pid, uint32(ws)))
	}
}

func startMonitor(dir string) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(dir, "monitor.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o600)
	if err != nil {
		return err
	}
	defer logf.Close()
	ready, dirf := os.NewFile(3, "ready"), os.NewFile(4, "dir")
	defer ready.Close()
	defer dirf.Close()
	bin := os.Getenv(monBin)
	env := envWith(monRole, "helper")
	_, err = os.StartProcess(bin, []string{bin, self, dir}, &os.ProcAttr{Env: env, Files: []*os.File{nil, logf, logf, ready, dirf}})
	return err
}

func sentinelMain() int {
	recordSignals("sentinel")
	return sleepMain()
}

func sleepMain() int {
	for {
		time.Sleep(time.Hour)
	}
}

package integration

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/internal/proc"
)

// The sandbox's fake monitor helper (see monitor_c_sandbox_test.go): it
// answers the monitor on fd 3 as monitor/helper.go does, "key value" lines,
// and does what the request's "fake" field asks:
//
//	{"mode":"pid","pid":"<text>"}   name <text> as the container's pid (and the start
//	                                time of that pid when it is a process, else 1)
//	{"mode":"reuse","pid":"<n>"}    start a process that gets pid n, name it
//	{"mode":"stale-during"}         make an orphan that exits 42 and is reaped by the
//	                                monitor, start a process with its pid, name that
//	{"mode":"early","code":<n>}     start a process, read its start time, let it exit n,
//	                                wait until the monitor reaped it, then name it
//	{"mode":"slow"}                 after a second, start a process (its pid in slow.pid), name it
//
// Its pod-start waits MINICRI_IT_POD_START_DELAY first when that is set, and
// writes the pause's pid to pause.pid in the sandbox's directory.
//
// and for the op "orphan": make an orphan that exits 42, wait until the
// monitor reaped it, answer {"pid":<its pid>}.
type fakeMsg struct {
	Req struct {
		Op   string `json:"op"`
		Fake struct {
			Mode string `json:"mode"`
			PID  string `json:"pid"`
			Code int    `json:"code"`
		} `json:"fake"`
	} `json:"req"`
}

const orphanCode = 42

// podStartDelay, when set, is how long the fake helper takes before it
// starts the pause of a pod-start.
const podStartDelay = "MINICRI_IT_POD_START_DELAY"

func fakeHelperMain() int {
	unix.CloseOnExec(3) // what it starts must not hold the monitor's socket
	buf := make([]byte, 256<<10)
	n, _, _, _, err := unix.Recvmsg(3, buf, nil, 0)
	if err != nil {
		fmt.Fprintln(os.Stderr, "fake helper: read:", err)
		return 1
	}
	var msg fakeMsg
	lines, err := []string(nil), json.Unmarshal(buf[:n], &msg)
	if err == nil {
		lines, err = fakeAnswer(msg)
	}
	if err != nil {
		lines = []string{"error fake helper: " + err.Error()}
	}
	if err := unix.Sendmsg(3, []byte(strings.Join(lines, "\n")+"\n"), nil, nil, 0); err != nil {
		fmt.Fprintln(os.Stderr, "fake helper: answer:", err)
		return 1
	}
	return 0
}

func fakeAnswer(msg fakeMsg) ([]string, error) {
	f := msg.Req.Fake
	switch msg.Req.Op {
	case "pod-start":
		if d, err := time.ParseDuration(os.Getenv(podStartDelay)); err == nil {
			time.Sleep(d) // a slow start: the daemon may be gone by its end
		}
		p, err := startSelf("sleep", "")
		if err != nil {
			return nil, err
		}
		appendLine("pause.pid", strconv.Itoa(p.Pid))
		ref, err := proc.RefOf(p.Pid)
		if err != nil {
			return nil, err
		}
		data, _ := json.Marshal(ref)
		return append(pidLines(p.Pid, ref.StartTime), "ref "+string(data), "state {}", "pod sandbox"), nil
	case "exited":
		return []string{"oom 0"}, nil
	case "delete":
		return []string{"ok 1"}, nil
	case "orphan":
		pid, _, err := makeOrphan(orphanCode)
		return []string{fmt.Sprintf(`resp {"pid":%d}`, pid)}, err
	case "create":
		return fakeCreate(f.Mode, f.PID, f.Code)
	}
	return nil, fmt.Errorf("op %q", msg.Req.Op)
}

func pidLines(pid int, start uint64) []string {
	return []string{"pid " + strconv.Itoa(pid), "start_time " + strconv.FormatUint(start, 10), "ctx {}"}
}

func fakeCreate(mode, pidText string, code int) ([]string, error) {
	switch mode {
	case "pid":
		start := uint64(1)
		if n, err := strconv.Atoi(pidText); err == nil && n > 0 {
			if st, err := proc.StartTime(n); err == nil {
				start = st
			}
		}
		return []string{"pid " + pidText, "start_time " + strconv.FormatUint(start, 10), "ctx {}"}, nil
	case "reuse", "stale-during":
		want, err := strconv.Atoi(pidText)
		if mode == "stale-during" {
			want, _, err = makeOrphan(orphanCode)
		}
		if err != nil {
			return nil, err
		}
		p, err := startWithPID(want)
		if err != nil {
			return nil, err
		}
		st, err := proc.StartTime(p.Pid)
		return pidLines(p.Pid, st), err
	case "early":
		pid, st, err := makeOrphan(code)
		return pidLines(pid, st), err
	case "slow":
		time.Sleep(time.Second) // the daemon may be gone, and its successor asking, by the end
		p, err := startSelf("sleep", "")
		if err != nil {
			return nil, err
		}
		appendLine("slow.pid", strconv.Itoa(p.Pid))
		st, err := proc.StartTime(p.Pid)
		return pidLines(p.Pid, st), err
	}
	return nil, fmt.Errorf("create mode %q", mode)
}

// makeOrphan starts a process whose parent exits at once, so that it
// re-parents to the monitor (a child subreaper; this helper is not one),
// reads its start time, lets it exit with code and waits until the monitor
// reaped it.
func makeOrphan(code int) (int, uint64, error) {
	hold, release, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	defer release.Close()
	out, outW, err := os.Pipe()
	if err != nil {
		return 0, 0, err
	}
	forker, err := startSelf("forker", strconv.Itoa(code), hold, outW, os.Stderr)
	hold.Close()
	outW.Close()
	if err != nil {
		return 0, 0, err
	}
	line, rerr := bufio.NewReader(out).ReadString('\n')
	out.Close()
	if _, err := forker.Wait(); err != nil || rerr != nil {
		return 0, 0, errors.Join(err, rerr)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return 0, 0, err
	}
	st, err := proc.StartTime(pid)
	if err != nil {
		return 0, 0, err
	}
	release.Close() // the orphan reads EOF and exits
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(time.Millisecond) {
		if _, err := os.Stat(fmt.Sprintf("/proc/%d", pid)); errors.Is(err, os.ErrNotExist) {
			return pid, st, nil
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("orphan %d not reaped by the monitor within 10 s", pid)
		}
	}
}

// startWithPID starts a sleeping process with pid want (free again: its
// process was reaped), through the namespace's ns_last_pid; this process's
// own threads may take the pid first, so it tries again.
func startWithPID(want int) (*os.Process, error) {
	for range 200 {
		if err := os.WriteFile("/proc/sys/kernel/ns_last_pid", []byte(strconv.Itoa(want-1)), 0); err != nil {
			return nil, err
		}
		p, err := startSelf("sleep", "")
		if err != nil {
			return nil, err
		}
		if p.Pid == want {
			return p, nil
		}
		_ = p.Kill()
		_, _ = p.Wait()
	}
	return nil, fmt.Errorf("no process got pid %d", want)
}

// forkerMain starts an exiter (its stdin this one's) and exits, printing its pid.
func forkerMain() int {
	p, err := startSelf("exiter", os.Getenv(monArg), os.Stdin, nil, os.Stderr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "forker:", err)
		return 1
	}
	fmt.Println(p.Pid)
	return 0
}

// exiterMain exits with the code of its argument once its stdin ends.
func exiterMain() int {
	_, _ = io.Copy(io.Discard, os.Stdin)
	code, _ := strconv.Atoi(os.Getenv(monArg))
	return code
}

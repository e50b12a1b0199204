// Package seccompbpf tells the seccomp filters, as the kernel holds them
// (classic BPF, byte for byte), that libcontainer installs for a seccomp
// config: what CRIU would dump from a container started with it.
//
// libcontainer builds its program with libseccomp and patches it (runc's
// patchbpf) inside seccomp.InitSeccomp, which loads it at once; nothing
// exported returns the bytes. So Of re-executes the running binary, whose
// init hands it to Main: the child installs the filter with InitSeccomp, as
// a container's init does, and spins; the parent reads the child's filter
// chain with PTRACE_SECCOMP_GET_FILTER and its flags with
// PTRACE_SECCOMP_GET_METADATA, as CRIU's dump does, and kills it.
package seccompbpf

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"time"
	"unsafe"

	"github.com/opencontainers/runc/libcontainer/configs"
	"github.com/opencontainers/runc/libcontainer/seccomp"
	"golang.org/x/sys/unix"
)

// Arg is the argument with which Of re-executes the running binary; the
// binary's init hands it to Main.
const Arg = "seccomp-bpf"

// Filter is one filter of a chain: its program (struct sock_filter
// instructions) and the flags the kernel reports for it (FlagLog only).
type Filter struct {
	Prog  []byte
	Flags uint32
}

// FlagLog and FlagTSync are SECCOMP_FILTER_FLAG_LOG and _TSYNC.
const (
	FlagTSync uint32 = 1
	FlagLog   uint32 = 2
)

// Of is the filter chain, newest first, of a process that installed cfg
// (nil: none) on top of what this process holds itself.
func Of(cfg *configs.Seccomp) ([]Filter, error) {
	own, err := filterCount("self")
	if err != nil {
		return nil, err
	}
	want := own
	if cfg != nil {
		want++
	}
	if want == 0 {
		return nil, nil
	}
	body, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command("/proc/self/exe", Arg)
	cmd.Stdin = bytes.NewReader(body)
	cmd.Env = []string{"GODEBUG=asyncpreemptoff=1", "GOGC=off"} // no signal, no GC: the spinning thread makes no syscall
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start the seccomp helper: %w", err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	// A helper that never answers must not hold the restore (and its RPC) forever: killed,
	// its stdout closes and the read below fails.
	stuck := time.AfterFunc(helperTimeout, func() { _ = cmd.Process.Kill() })
	defer stuck.Stop()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		_ = cmd.Wait()
		return nil, fmt.Errorf("seccomp helper: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	tid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		return nil, fmt.Errorf("seccomp helper: bad tid %q", line)
	}
	task := fmt.Sprintf("%d/task/%d", cmd.Process.Pid, tid)
	if err := waitCount(task, want); err != nil {
		return nil, fmt.Errorf("seccomp helper: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	return readChain(tid)
}

// helperTimeout bounds the helper's whole life (it answers in milliseconds).
const helperTimeout = 30 * time.Second

// waitCount waits until the task (under /proc) holds n filters.
func waitCount(task string, n int) error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		got, err := filterCount(task)
		switch {
		case err != nil:
			return err
		case got == n:
			return nil
		case got > n || time.Now().After(deadline):
			return fmt.Errorf("helper holds %d seccomp filters, want %d", got, n)
		}
		time.Sleep(time.Millisecond)
	}
}

// filterCount is the Seccomp_filters of /proc/<task>/status.
func filterCount(task string) (int, error) {
	data, err := os.ReadFile("/proc/" + task + "/status")
	if err != nil {
		return 0, err
	}
	for _, l := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(l, "Seccomp_filters:"); ok {
			return strconv.Atoi(strings.TrimSpace(v))
		}
	}
	return 0, errors.New("no Seccomp_filters in /proc/" + task + "/status (kernel older than 5.9)")
}

// readChain stops the thread tid with ptrace and reads its filters.
func readChain(tid int) ([]Filter, error) {
	type result struct {
		chain []Filter
		err   error
	}
	done := make(chan result, 1)
	go func() {
		// ptrace requests must come from the thread that attached; the
		// thread is left locked, to end with the goroutine.
		runtime.LockOSThread()
		if err := ptrace(unix.PTRACE_SEIZE, tid, 0); err != nil {
			done <- result{err: fmt.Errorf("ptrace seize: %w", err)}
			return
		}
		if err := ptrace(unix.PTRACE_INTERRUPT, tid, 0); err != nil {
			done <- result{err: fmt.Errorf("ptrace interrupt: %w", err)}
			return
		}
		var ws unix.WaitStatus
		if _, err := unix.Wait4(tid, &ws, unix.WALL, nil); err != nil {
			done <- result{err: fmt.Errorf("wait for the helper: %w", err)}
			return
		}
		chain, err := getFilters(tid)
		done <- result{chain, err}
	}()
	r := <-done
	return r.chain, r.err
}

// getFilters reads the stopped tracee's filters, newest first.
func getFilters(tid int) ([]Filter, error) {
	var chain []Filter
	for i := 0; ; i++ {
		n, err := ptraceRet(unix.PTRACE_SECCOMP_GET_FILTER, tid, uintptr(i), nil)
		if errors.Is(err, unix.ENOENT) {
			return chain, nil
		}
		if err != nil {
			return nil, fmt.Errorf("read seccomp filter %d: %w", i, err)
		}
		prog := make([]byte, n*unix.SizeofSockFilter)
		if _, err := ptraceRet(unix.PTRACE_SECCOMP_GET_FILTER, tid, uintptr(i), unsafe.Pointer(&prog[0])); err != nil { //nolint:gosec // G103: the kernel fills prog
			return nil, fmt.Errorf("read seccomp filter %d: %w", i, err)
		}
		meta := [2]uint64{uint64(i), 0}                                                                        // struct seccomp_metadata
		if _, err := ptraceRet(unix.PTRACE_SECCOMP_GET_METADATA, tid, 16, unsafe.Pointer(&meta)); err != nil { //nolint:gosec // G103: struct seccomp_metadata
			return nil, fmt.Errorf("read seccomp filter %d's flags: %w", i, err)
		}
		chain = append(chain, Filter{Prog: prog, Flags: uint32(meta[1] & 0xffffffff)}) // SECCOMP_FILTER_FLAG_*: low bits
	}
}

// Main is the re-executed binary's `seccomp-bpf`: it reads a
// configs.Seccomp (JSON, null for none) from stdin, writes its thread's
// id, installs the filter on that thread and spins until killed.
func Main() int {
	runtime.LockOSThread()
	var cfg *configs.Seccomp
	if err := json.NewDecoder(os.Stdin).Decode(&cfg); err != nil {
		fmt.Fprintln(os.Stderr, "seccomp config:", err)
		return 1
	}
	if _, err := fmt.Printf("%d\n", unix.Gettid()); err != nil {
		return 1
	}
	if cfg != nil {
		if _, err := seccomp.InitSeccomp(cfg); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	for { //nolint:staticcheck // spins: any syscall now is the filter's to allow
	}
}

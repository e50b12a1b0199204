package ocirt

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Exec implements Handle: `exec --process <file> --pid-file <file> <id>` in
// the foreground. The runtime waits for the process and exits with its
// status (128+signal for a signal). Without a terminal the runtime copies
// its stdio to the process; with one it needs a terminal of its own to
// relay the container's: the exec gets a PTY here, the runtime its slave
// as stdio and controlling terminal (so a resize of the master reaches it
// as SIGWINCH), and Console returns the master.
func (h binHandle) Exec(e ExecSpec) (Process, error) {
	dir, err := os.MkdirTemp("", "minicri-exec-")
	if err != nil {
		return nil, fmt.Errorf("exec: %w", err)
	}
	p := &binProcess{dir: dir, done: make(chan struct{})}
	if err := p.start(h, e); err != nil {
		if p.master != nil {
			p.master.Close()
		}
		p.cleanup()
		return nil, err
	}
	go p.wait()
	return p, nil
}

type binProcess struct {
	dir    string
	cmd    *exec.Cmd
	master *os.File
	done   chan struct{}
	mu     sync.Mutex
	ps     *os.ProcessState
	err    error
}

func (p *binProcess) start(h binHandle, e ExecSpec) error {
	data, err := json.Marshal(e.Process)
	if err != nil {
		return err
	}
	procFile := filepath.Join(p.dir, "process.json")
	if err := os.WriteFile(procFile, data, 0o600); err != nil {
		return fmt.Errorf("exec: %w", err)
	}
	p.cmd = h.b.command(h.cgPath, "exec", "--process", procFile, "--pid-file", p.pidFile(), h.id)
	if e.Process.Terminal {
		slave, err := p.openPTY(e)
		if err != nil {
			return err
		}
		defer slave.Close()
		p.cmd.Stdin, p.cmd.Stdout, p.cmd.Stderr = slave, slave, slave
		p.cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	} else {
		if e.Stdin != nil {
			p.cmd.Stdin = e.Stdin
		}
		if e.Stdout != nil {
			p.cmd.Stdout = e.Stdout
		}
		if e.Stderr != nil {
			p.cmd.Stderr = e.Stderr
		}
	}
	if err := p.cmd.Start(); err != nil {
		return fmt.Errorf("exec: start %s: %w", h.b.Path, err)
	}
	return nil
}

func (p *binProcess) pidFile() string { return filepath.Join(p.dir, "pid") }

// openPTY makes the exec's PTY (master non-blocking, so that closing it
// interrupts a read) and returns its slave, in raw mode: the runtime
// relays bytes and the container's own terminal does the line discipline.
func (p *binProcess) openPTY(e ExecSpec) (*os.File, error) {
	mfd, err := unix.Open("/dev/ptmx", unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC|unix.O_NONBLOCK, 0)
	if err != nil {
		return nil, fmt.Errorf("exec: open pty: %w", err)
	}
	master := os.NewFile(uintptr(mfd), "pty-master")
	if err := unix.IoctlSetPointerInt(mfd, unix.TIOCSPTLCK, 0); err != nil {
		master.Close()
		return nil, fmt.Errorf("exec: unlock pty: %w", err)
	}
	sfd, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(mfd), unix.TIOCGPTPEER, uintptr(unix.O_RDWR|unix.O_NOCTTY|unix.O_CLOEXEC))
	if errno != 0 {
		master.Close()
		return nil, fmt.Errorf("exec: open pty slave: %w", errno)
	}
	slave := os.NewFile(sfd, "pty-slave")
	if err := makeRaw(int(sfd)); err != nil {
		master.Close()
		slave.Close()
		return nil, err
	}
	if cs := e.Process.ConsoleSize; cs != nil {
		ws := &unix.Winsize{Row: uint16(min(cs.Height, 0xffff)), Col: uint16(min(cs.Width, 0xffff))} //nolint:gosec // clamped
		_ = unix.IoctlSetWinsize(mfd, unix.TIOCSWINSZ, ws)
	}
	p.master = master
	return slave, nil
}

func makeRaw(fd int) error {
	t, err := unix.IoctlGetTermios(fd, unix.TCGETS)
	if err != nil {
		return fmt.Errorf("exec: pty termios: %w", err)
	}
	t.Iflag &^= unix.IGNBRK | unix.BRKINT | unix.PARMRK | unix.ISTRIP | unix.INLCR | unix.IGNCR | unix.ICRNL | unix.IXON
	t.Oflag &^= unix.OPOST
	t.Lflag &^= unix.ECHO | unix.ECHONL | unix.ICANON | unix.ISIG | unix.IEXTEN
	t.Cflag &^= unix.CSIZE | unix.PARENB
	t.Cflag |= unix.CS8
	t.Cc[unix.VMIN], t.Cc[unix.VTIME] = 1, 0
	if err := unix.IoctlSetTermios(fd, unix.TCSETS, t); err != nil {
		return fmt.Errorf("exec: pty raw mode: %w", err)
	}
	return nil
}

func (p *binProcess) wait() {
	err := p.cmd.Wait()
	var ee *exec.ExitError
	if errors.As(err, &ee) {
		err = nil // the runtime reports the process's status as its own
	}
	p.mu.Lock()
	p.ps, p.err = p.cmd.ProcessState, err
	p.mu.Unlock()
	close(p.done)
	p.cleanup()
}

func (p *binProcess) cleanup() { _ = os.RemoveAll(p.dir) }

func (p *binProcess) Console() (*os.File, error) {
	if p.master == nil {
		return nil, errors.New("exec has no terminal")
	}
	m := p.master
	p.master = nil
	return m, nil
}

// pidFileWait bounds how long Kill waits for the runtime to name the
// process: it writes the pid file just after the process started.
const pidFileWait = 5 * time.Second

// Kill kills the exec'd process, named by the pid file while the runtime,
// its parent, still waits for it (so the PID cannot have been reused). The
// runtime writes the file a little after the process starts: Kill waits for
// it. Killing the runtime instead would orphan the process.
func (p *binProcess) Kill() error {
	deadline := time.Now().Add(pidFileWait)
	for {
		select {
		case <-p.done:
			return nil
		default:
		}
		if data, err := os.ReadFile(p.pidFile()); err == nil {
			pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
			if err != nil || pid <= 0 {
				return fmt.Errorf("exec: bad pid file %q", data)
			}
			if err := unix.Kill(pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("exec: kill %d: %w", pid, err)
			}
			return nil
		}
		if time.Now().After(deadline) {
			return p.cmd.Process.Kill() // the runtime is stuck before starting the process
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func (p *binProcess) Wait() (*os.ProcessState, error) {
	<-p.done
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.ps, p.err
}

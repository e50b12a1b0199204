package lazy

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// TestNodeStartsOneServer: the layers of one pull reach the node's server
// at once; the first call starts it, the others use it (two starting
// together raced for the socket: the loser exited and its layer was pulled
// whole).
func TestNodeStartsOneServer(t *testing.T) {
	dir := t.TempDir()
	node, err := NewNode(filepath.Join(dir, "lazyfs"), os.Args[0])
	if err != nil {
		t.Fatal(err)
	}
	node.Command.Env = []string{roleEnv + "=server"}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() { _, errs[i] = node.List(ctx) })
	}
	wg.Wait()
	time.Sleep(time.Second) // a server started late has started by now
	pids := serversOn(t, node.Socket)
	defer func() {
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGTERM)
			waitFor(t, 10*time.Second, func() bool { return errors.Is(syscall.Kill(pid, 0), syscall.ESRCH) })
		}
	}()
	if err := errors.Join(errs...); err != nil {
		t.Errorf("concurrent first calls: %v", err)
	}
	if len(pids) != 1 {
		log, _ := os.ReadFile(node.Command.Log)
		t.Errorf("servers %v for one socket, want 1:\n%s", pids, log)
	}
}

// serversOn is the processes running a server on socket (their command
// line ends with it).
func serversOn(t *testing.T, socket string) []int {
	t.Helper()
	ents, err := os.ReadDir("/proc")
	if err != nil {
		t.Fatal(err)
	}
	var out []int
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err == nil && strings.HasSuffix(string(b), "--socket\x00"+socket+"\x00") {
			if st, err := os.ReadFile(filepath.Join("/proc", e.Name(), "stat")); err == nil && !strings.Contains(string(st), ") Z ") {
				out = append(out, pid)
			}
		}
	}
	return out
}

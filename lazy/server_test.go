package lazy

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// The test binary plays the server and its client (the daemon) when told.
const roleEnv = "LAZYFS_TEST_ROLE"

func TestMain(m *testing.M) {
	switch os.Getenv(roleEnv) {
	case "server":
		os.Exit(testServerMain())
	case "client":
		os.Exit(testClientMain())
	case "reader":
		_, err := os.ReadFile(os.Getenv("LAZYFS_READ"))
		fmt.Println("read:", err)
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// testServerMain is minicri-lazyfs's main, on the socket after --socket.
func testServerMain() int {
	socket := os.Args[len(os.Args)-1]
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewJSONHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}))
	if err := NewServer(log).Serve(ctx, socket); err != nil && ctx.Err() == nil {
		log.Error("serve", "error", err)
		return 1
	}
	return 0
}

// testClientMain starts a server detached, has it mount the spec in
// LAZYFS_SPEC, says "mounted PID" and waits to be killed.
func testClientMain() int {
	var spec MountSpec
	if err := json.Unmarshal([]byte(os.Getenv("LAZYFS_SPEC")), &spec); err != nil {
		fmt.Println("error", err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	socket := os.Getenv("LAZYFS_SOCKET")
	pid, err := StartServer(ctx, socket, ServerCommand{Path: os.Args[0], Env: []string{roleEnv + "=server"}, Log: os.Getenv("LAZYFS_LOG")})
	if err == nil {
		err = Client{Socket: socket}.Mount(ctx, spec)
	}
	if err != nil {
		fmt.Println("error", err)
		return 1
	}
	fmt.Println("mounted", pid)
	select {}
}

// TestServerOutlivesClient: a server started by a client (the daemon) in a
// session of its own keeps serving the layer after the client is killed -9;
// a new client finds it and its mount, unmounts, and the server stops on
// SIGTERM.
func TestServerOutlivesClient(t *testing.T) {
	entries, spec, dir := layerFixture(t)
	spec.Prefetch = true
	mnt, socket, logf := spec.Mountpoint, filepath.Join(dir, "lazyfs.sock"), filepath.Join(dir, "lazyfs.log")
	// The server, orphaned by its client, is then this process's child.
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 0, 0, 0, 0) })
	pid := startClient(t, spec, socket, logf)
	reaped := false
	t.Cleanup(func() {
		if !reaped {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if t.Failed() {
			b, _ := os.ReadFile(logf)
			t.Logf("server log:\n%s", b)
		}
	})
	if sid, err := unix.Getsid(pid); err != nil || sid != pid {
		t.Errorf("server %d in session %d (%v), want its own", pid, sid, err)
	}
	compareTree(t, mnt, expectedTree(entries))
	ctx := context.Background()
	c := Client{Socket: socket}
	got, mounts, err := c.List(ctx)
	if err != nil || got != pid || len(mounts) != 1 || mounts[0].Mountpoint != mnt || mounts[0].TOCDigest != spec.TOCDigest {
		t.Fatalf("list: pid %d, %+v, %v; want pid %d serving %s", got, mounts, err, pid, mnt)
	}
	if err := c.Unmount(ctx, mnt, false); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Error("mounted after unmount")
	}
	reaped = stopServer(t, pid)
}

// startClient runs the client, waits for its mount, kills it -9 and returns
// the server's pid.
func startClient(t *testing.T, spec MountSpec, socket, logf string) int {
	t.Helper()
	js, _ := json.Marshal(spec)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=client", "LAZYFS_SPEC="+string(js), "LAZYFS_SOCKET="+socket, "LAZYFS_LOG="+logf)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	var pid int
	select {
	case l := <-line:
		p, ok := strings.CutPrefix(l, "mounted ")
		if pid, err = strconv.Atoi(p); !ok || err != nil {
			t.Fatalf("client: %q", l)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("client did not mount in 30 s")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return pid
}

// stopServer sends SIGTERM and reaps the server.
func stopServer(t *testing.T, pid int) (reaped bool) {
	t.Helper()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		if err == nil && ws.ExitStatus() != 0 {
			err = fmt.Errorf("exit status %d", ws.ExitStatus())
		}
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("server: %v", err)
		}
		return true
	case <-time.After(10 * time.Second):
		t.Error("server still running 10 s after SIGTERM")
		return false
	}
}

// TestServerMountListUnmount: the protocol in one process: mount (again: no
// error; another layer at the same place: refused), list until the
// background fetch completes, unmount, and the server unmounts what is left
// when it stops.
func TestServerMountListUnmount(t *testing.T) {
	_, spec, dir := layerFixture(t)
	spec.Prefetch, spec.Background = true, true
	socket, mnt := filepath.Join(dir, "s.sock"), spec.Mountpoint
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- NewServer(slog.New(slog.DiscardHandler)).Serve(ctx, socket) }()
	t.Cleanup(func() { cancel(); <-served })
	c := Client{Socket: socket}
	waitFor(t, 5*time.Second, func() bool { _, _, err := c.List(ctx); return err == nil })
	for _, want := range []bool{true, true} {
		if err := c.Mount(ctx, spec); (err == nil) != want {
			t.Fatalf("mount: %v", err)
		}
	}
	other := spec
	other.TOCDigest = "sha256:" + strings.Repeat("0", 64)
	if err := c.Mount(ctx, other); err == nil || !strings.Contains(err.Error(), "busy") {
		t.Errorf("another layer on the same mount point: %v", err)
	}
	waitFor(t, 10*time.Second, func() bool {
		_, ms, err := c.List(ctx)
		return err == nil && len(ms) == 1 && ms[0].Complete
	})
	if err := c.Unmount(ctx, mnt, false); err != nil {
		t.Fatal(err)
	}
	if _, ms, err := c.List(ctx); err != nil || len(ms) != 0 {
		t.Errorf("list after unmount: %v, %v", ms, err)
	}
	if err := c.Mount(ctx, spec); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-served
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Error("still mounted after the server stopped")
	}
	served <- nil // for the cleanup
}

// TestDeadServerMountsDetached: a server killed -9 leaves its mounts dead
// (ENOTCONN); the next server detaches them as it starts.
func TestDeadServerMountsDetached(t *testing.T) {
	_, spec, dir := layerFixture(t)
	mnt, socket := spec.Mountpoint, filepath.Join(dir, "lazyfs.sock")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	cmd := ServerCommand{Path: os.Args[0], Env: []string{roleEnv + "=server"}, Log: filepath.Join(dir, "lazyfs.log")}
	pid, err := StartServer(ctx, socket, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if err := (Client{Socket: socket}).Mount(ctx, spec); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 5*time.Second, func() bool { var st syscall.Statfs_t; return errors.Is(syscall.Statfs(mnt, &st), syscall.ENOTCONN) })
	pid2, err := StartServer(ctx, socket, cmd)
	if err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Error("the dead mount is still there after a new server started")
	}
	// StartServer's child, which its goroutine reaps.
	if err := syscall.Kill(pid2, syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return errors.Is(syscall.Kill(pid2, 0), syscall.ESRCH) })
}

// TestKilledReaderNotHeld: a reader killed while its read waits for a gone
// registry is let go at once (the FUSE interrupt cancels the wait), not
// after the fetch timeout.
func TestKilledReaderNotHeld(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	m := mountFixture(t, r, toc, Options{FetchTimeout: 20 * time.Second})
	r.down.Store(true)
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), roleEnv+"=reader", "LAZYFS_READ="+filepath.Join(m.Mountpoint, "bin/app"))
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waitFor(t, 10*time.Second, func() bool { return r.requests.Load() > 1 }) // the read is waiting
	start := time.Now()
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("the killed reader took %v to go", took)
	}
	waitFor(t, 5*time.Second, func() bool { m.Layer.mu.Lock(); defer m.Layer.mu.Unlock(); return len(m.Layer.inflight) == 0 })
	r.down.Store(false)
}

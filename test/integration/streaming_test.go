package integration

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// transports are the two protocol families kubectl uses.
var transports = []string{"spdy", "websocket"}

func executor(t *testing.T, transport, rawURL string) remotecommand.Executor {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatal(err)
	}
	var e remotecommand.Executor
	if transport == "spdy" {
		e, err = remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	} else {
		e, err = remotecommand.NewWebSocketExecutor(&rest.Config{}, "GET", rawURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}

// streamExec runs an exec session and returns stdout, stderr and the exit code.
func (i *instance) streamExec(t *testing.T, transport string, req *runtimeapi.ExecRequest, stdin io.Reader, sizes remotecommand.TerminalSizeQueue) (string, string, int) {
	t.Helper()
	resp, err := i.rt.Exec(ctx(t), req)
	if err != nil {
		t.Fatalf("Exec: %v", err)
	}
	var out, errOut bytes.Buffer
	opts := remotecommand.StreamOptions{Stdin: stdin, Stdout: &out, Tty: req.Tty, TerminalSizeQueue: sizes}
	if req.Stderr {
		opts.Stderr = &errOut
	}
	err = executor(t, transport, resp.Url).StreamWithContext(ctx(t), opts)
	var exit interface{ ExitStatus() int }
	switch {
	case err == nil:
		return out.String(), errOut.String(), 0
	case errors.As(err, &exit):
		return out.String(), errOut.String(), exit.ExitStatus()
	}
	t.Fatalf("exec %v over %s: %v", req.Cmd, transport, err)
	return "", "", 0
}

type oneSize struct {
	once sync.Once
	size remotecommand.TerminalSize
}

func (q *oneSize) Next() *remotecommand.TerminalSize {
	var s *remotecommand.TerminalSize
	q.once.Do(func() { s = &q.size })
	if s == nil {
		time.Sleep(time.Hour) // no more resizes; the session ends first
	}
	return s
}

func TestExecStreams(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "exec")
	id := i.run(t, podID, pod, ctrConfig("exec", "sleep 1000"))
	userCfg := ctrConfig("exec-user", "sleep 1000")
	userCfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1234}}
	userID := i.run(t, podID, pod, userCfg)

	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			out, errOut, code := i.streamExec(t, tr, &runtimeapi.ExecRequest{ContainerId: id,
				Cmd: []string{"sh", "-c", "echo out; echo err >&2; exit 3"}, Stdout: true, Stderr: true}, nil, nil)
			if out != "out\n" || errOut != "err\n" || code != 3 {
				t.Errorf("no tty: stdout %q stderr %q exit %d; want out, err, 3", out, errOut, code)
			}
			out, _, code = i.streamExec(t, tr, &runtimeapi.ExecRequest{ContainerId: id,
				Cmd: []string{"sh", "-c", "cat; echo done"}, Stdin: true, Stdout: true, Stderr: true},
				strings.NewReader("line one\nline two\n"), nil)
			if out != "line one\nline two\ndone\n" || code != 0 {
				t.Errorf("stdin: stdout %q exit %d", out, code)
			}
			out, _, code = i.streamExec(t, tr, &runtimeapi.ExecRequest{ContainerId: id,
				Cmd: []string{"sh", "-c", "sleep 0.5; stty size; tty; echo $TERM"}, Stdin: true, Stdout: true, Tty: true},
				&blockingReader{}, &oneSize{size: remotecommand.TerminalSize{Width: 123, Height: 45}})
			if !strings.Contains(out, "45 123") || !strings.Contains(out, "/dev/pts/") || !strings.Contains(out, "xterm") || code != 0 {
				t.Errorf("tty: output %q exit %d; want size 45 123, a pts and TERM=xterm", out, code)
			}
			out, _, code = i.streamExec(t, tr, &runtimeapi.ExecRequest{ContainerId: userID,
				Cmd: []string{"id", "-u"}, Stdout: true, Stderr: true}, nil, nil)
			if out != "1234\n" || code != 0 {
				t.Errorf("non-root container: id -u = %q (exit %d), want 1234", out, code)
			}
		})
	}
	i.stopRemove(t, podID)
}

// blockingReader is a stdin that never ends (until the session does).
type blockingReader struct{}

func (blockingReader) Read([]byte) (int, error) { time.Sleep(time.Hour); return 0, io.EOF }

func TestExecStoppedOrUnknownContainer(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "exec-stopped")
	id := i.run(t, podID, pod, ctrConfig("short", "true"))
	i.waitExited(t, id, 10*time.Second)
	for _, cid := range []string{id, "doesnotexist"} {
		if _, err := i.rt.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: cid, Cmd: []string{"true"}, Stdout: true}); err == nil {
			t.Errorf("Exec in %s succeeded", cid)
		}
		if _, err := i.rt.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: cid, Stdout: true}); err == nil {
			t.Errorf("Attach to %s succeeded", cid)
		}
	}
}

// hostProcs lists host PIDs whose command line is exactly args.
func hostProcs(args ...string) []int {
	want := strings.Join(args, "\x00") + "\x00"
	var pids []int
	ents, _ := os.ReadDir("/proc")
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if b, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline")); err == nil && string(b) == want {
			pids = append(pids, pid)
		}
	}
	return pids
}

func fds(pid int) []string {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	var out []string
	for _, e := range ents {
		l, _ := os.Readlink(fmt.Sprintf("/proc/%d/fd/%s", pid, e.Name()))
		out = append(out, e.Name()+"->"+l)
	}
	return out
}

func fdCount(pid int) int {
	ents, _ := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
	return len(ents)
}

func TestExecClientDisconnect(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "exec-gone")
	id := i.run(t, podID, pod, ctrConfig("exec-gone", "sleep 1000"))
	daemon := i.cmd.Process.Pid
	// Warm up: the first exec opens descriptors libcontainer keeps for good
	// (cgroup and root handles); only growth after that is a leak.
	for _, tr := range transports {
		i.streamExec(t, tr, &runtimeapi.ExecRequest{ContainerId: id, Cmd: []string{"true"}, Stdout: true}, nil, nil)
	}
	for n, tr := range transports {
		for _, tty := range []bool{false, true} {
			marker := strconv.Itoa(31000 + n*10 + map[bool]int{false: 0, true: 1}[tty])
			fdsBefore := fdCount(daemon)
			resp, err := i.rt.Exec(ctx(t), &runtimeapi.ExecRequest{ContainerId: id,
				Cmd: []string{"sh", "-c", "echo started; exec sleep " + marker}, Stdin: true, Stdout: true, Tty: tty})
			if err != nil {
				t.Fatal(err)
			}
			c, cancel := context.WithCancel(context.Background())
			out := &notifyBuffer{want: "started", seen: make(chan struct{})}
			done := make(chan error, 1)
			go func() {
				done <- executor(t, tr, resp.Url).StreamWithContext(c, remotecommand.StreamOptions{
					Stdin: &blockingReader{}, Stdout: out, Tty: tty})
			}()
			select {
			case <-out.seen:
			case <-time.After(10 * time.Second):
				t.Fatalf("%s tty=%v: exec did not start", tr, tty)
			}
			waitFor(t, 5*time.Second, func() bool { return len(hostProcs("sleep", marker)) == 1 })
			cancel() // the client goes away mid-exec
			<-done
			if !waitFor(t, 10*time.Second, func() bool { return len(hostProcs("sleep", marker)) == 0 }) {
				t.Errorf("%s tty=%v: exec'd process still running after the client left", tr, tty)
			}
			if !waitFor(t, 10*time.Second, func() bool { return fdCount(daemon) <= fdsBefore }) {
				t.Errorf("%s tty=%v: daemon holds %d descriptors, %d before the session: %v", tr, tty, fdCount(daemon), fdsBefore, fds(daemon))
			}
		}
	}
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Errorf("container is %v after exec clients left", st.State)
	}
}

func waitFor(t *testing.T, within time.Duration, cond func() bool) bool {
	t.Helper()
	deadline := time.Now().Add(within)
	for !cond() {
		if time.Now().After(deadline) {
			return false
		}
		time.Sleep(50 * time.Millisecond)
	}
	return true
}

// notifyBuffer closes seen once its content contains want.
type notifyBuffer struct {
	mu   sync.Mutex
	buf  bytes.Buffer
	want string
	seen chan struct{}
	once sync.Once
}

func (b *notifyBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.buf.Write(p)
	if b.seen != nil && strings.Contains(b.buf.String(), b.want) {
		b.once.Do(func() { close(b.seen) })
	}
	return len(p), nil
}

func (b *notifyBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

func TestAttachTwice(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "attach")
	cfg := ctrConfig("attach", `(n=0; while true; do echo "tick $n"; n=$((n+1)); sleep 0.05; done) & while read l; do echo "got $l"; done; echo "stdin closed"; sleep 1000`)
	cfg.Stdin = true
	id := i.run(t, podID, pod, cfg)

	for _, tr := range transports {
		t.Run(tr, func(t *testing.T) {
			attach := func(stdin io.Reader, out io.Writer) (context.CancelFunc, chan error) {
				resp, err := i.rt.Attach(ctx(t), &runtimeapi.AttachRequest{ContainerId: id, Stdin: stdin != nil, Stdout: true, Stderr: true})
				if err != nil {
					t.Fatalf("Attach: %v", err)
				}
				c, cancel := context.WithCancel(context.Background())
				done := make(chan error, 1)
				go func() {
					done <- executor(t, tr, resp.Url).StreamWithContext(c, remotecommand.StreamOptions{Stdin: stdin, Stdout: out, Stderr: io.Discard})
				}()
				return cancel, done
			}
			word := "hello-" + tr
			inR, inW := io.Pipe()
			outA := &notifyBuffer{want: "got " + word, seen: make(chan struct{})}
			outB := &notifyBuffer{want: "got " + word, seen: make(chan struct{})}
			cancelA, doneA := attach(inR, outA)
			cancelB, doneB := attach(nil, outB)
			defer cancelA()
			waitFor(t, 5*time.Second, func() bool { return strings.Contains(outA.String(), "tick") && strings.Contains(outB.String(), "tick") })
			fmt.Fprintln(inW, word)
			for name, b := range map[string]*notifyBuffer{"first": outA, "second": outB} {
				select {
				case <-b.seen:
				case <-time.After(10 * time.Second):
					t.Fatalf("%s attach did not see the echo; got %q", name, b.String())
				}
			}
			inW.Close() // closing stdin detaches (the container is not stdin_once)
			select {
			case err := <-doneA:
				if err != nil {
					t.Errorf("first attach ended with %v", err)
				}
			case <-time.After(10 * time.Second):
				t.Fatal("closing stdin did not end the first attach")
			}
			cancelB() // the second client goes away
			select {
			case <-doneB:
			case <-time.After(10 * time.Second):
				t.Fatal("the second attach did not end")
			}
			if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
				t.Fatalf("container is %v after detaching", st.State)
			}
		})
	}
	// The log kept every line while attached: ticks are consecutive.
	time.Sleep(200 * time.Millisecond)
	lines := readLog(t, i.ctrStatus(t, id).LogPath)
	next, gotWords := 0, 0
	for _, l := range lines {
		if n, ok := strings.CutPrefix(l.content, "tick "); ok {
			if v, _ := strconv.Atoi(n); v != next {
				t.Fatalf("log skips from tick %d to %q", next-1, l.content)
			}
			next++
		} else if strings.HasPrefix(l.content, "got hello-") {
			gotWords++
		}
	}
	if next < 3 || gotWords != len(transports) {
		t.Errorf("log has %d ticks and %d echoes; want many ticks and %d echoes", next, gotWords, len(transports))
	}
}

// portForwarder forwards local ports to ports of a pod, over SPDY.
func (i *instance) portForward(t *testing.T, podID string, ports ...string) ([]portforward.ForwardedPort, func()) {
	t.Helper()
	resp, err := i.rt.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	u, _ := url.Parse(resp.Url)
	tr, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: tr}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, ports, stop, ready, io.Discard, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	select {
	case <-ready:
	case err := <-errc:
		t.Fatalf("ForwardPorts: %v", err)
	case <-time.After(10 * time.Second):
		t.Fatal("port forward not ready")
	}
	got, err := pf.GetPorts()
	if err != nil {
		t.Fatal(err)
	}
	return got, func() { close(stop); <-errc }
}

func get(url string) (string, error) {
	c := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

func TestPortForward(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	hostPort := 20000 + os.Getpid()%10000
	for _, hostNet := range []bool{false, true} {
		t.Run(map[bool]string{false: "pod-network", true: "host-network"}[hostNet], func(t *testing.T) {
			port := 80
			cfg := podConfig("pf")
			cfg.LogDirectory = filepath.Join(i.dir, "logs", cfg.Metadata.Name)
			if hostNet {
				port = hostPort
				cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE}}
			}
			podID := i.runPod(t, cfg)
			script := fmt.Sprintf("mkdir -p /tmp/www && echo hello-pf > /tmp/www/index.html && exec httpd -f -p %d -h /tmp/www", port)
			i.run(t, podID, cfg, ctrConfig("httpd", script))
			i.closedPortThenOpen(t, podID, port)
			ports, stop := i.portForward(t, podID, fmt.Sprintf("0:%d", port))
			defer stop()
			base := fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local)
			if !waitFor(t, 10*time.Second, func() bool { b, err := get(base); return err == nil && b == "hello-pf\n" }) {
				b, err := get(base)
				t.Fatalf("GET through port forward: %q, %v", b, err)
			}
			for n := 0; n < 100; n++ {
				if b, err := get(base); err != nil || b != "hello-pf\n" {
					t.Fatalf("sequential request %d: %q, %v", n, b, err)
				}
			}
			var wg sync.WaitGroup
			errs := make(chan error, 10)
			for n := 0; n < 10; n++ {
				wg.Add(1)
				go func() {
					defer wg.Done()
					if b, err := get(base); err != nil || b != "hello-pf\n" {
						errs <- fmt.Errorf("%q, %v", b, err)
					}
				}()
			}
			wg.Wait()
			close(errs)
			for err := range errs {
				t.Errorf("concurrent request: %v", err)
			}
		})
	}
}

// closedPortThenOpen checks, on one SPDY port-forward connection, that a
// stream to a closed port gets an error while a stream to the open port
// (after it) works.
func (i *instance) closedPortThenOpen(t *testing.T, podID string, open int) {
	t.Helper()
	resp, err := i.rt.PortForward(ctx(t), &runtimeapi.PortForwardRequest{PodSandboxId: podID})
	if err != nil {
		t.Fatalf("PortForward: %v", err)
	}
	u, _ := url.Parse(resp.Url)
	tr, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		t.Fatal(err)
	}
	conn, _, err := spdy.NewDialer(upgrader, &http.Client{Transport: tr}, "POST", u).Dial(portforward.PortForwardProtocolV1Name)
	if err != nil {
		t.Fatalf("dial port forward: %v", err)
	}
	defer conn.Close()
	// stream opens the error and data streams of one request. The server may
	// reset the data stream as soon as its dial failed (a closed port), so a
	// data stream error is returned, not fatal.
	stream := func(port, id int) (errS, dataS io.ReadWriteCloser, err error) {
		h := http.Header{}
		h.Set("streamType", "error")
		h.Set("port", strconv.Itoa(port))
		h.Set("requestID", strconv.Itoa(id))
		e, err := conn.CreateStream(h)
		if err != nil {
			t.Fatalf("create error stream: %v", err)
		}
		e.Close()
		h.Set("streamType", "data")
		d, err := conn.CreateStream(h)
		return e, d, err
	}
	errS, _, _ := stream(81, 1)
	msg, _ := io.ReadAll(errS)
	if !strings.Contains(string(msg), "refused") {
		t.Errorf("closed port: error stream says %q, want connection refused", msg)
	}
	var body string
	requestID := 1 // each stream pair needs a fresh request ID
	waitFor(t, 10*time.Second, func() bool {
		requestID++
		errS, dataS, err := stream(open, requestID)
		if err != nil {
			io.ReadAll(errS)
			return false // httpd is not listening yet
		}
		io.WriteString(dataS, "GET / HTTP/1.0\r\n\r\n")
		b, _ := io.ReadAll(dataS)
		io.ReadAll(errS)
		body = string(b)
		return strings.HasSuffix(body, "hello-pf\n")
	})
	if !strings.HasSuffix(body, "hello-pf\n") {
		t.Errorf("open port after a closed one on the same connection: got %q", body)
	}
}

// TestExecSyncLatency reports the median ExecSync latency of `true`.
func TestExecSyncLatency(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "latency")
	id := i.run(t, podID, pod, ctrConfig("latency", "sleep 1000"))
	const n = 50
	var d []time.Duration
	for k := 0; k < n; k++ {
		start := time.Now()
		resp, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"true"}, Timeout: 10})
		if err != nil || resp.ExitCode != 0 {
			t.Fatalf("ExecSync true: %v (exit %d)", err, resp.GetExitCode())
		}
		d = append(d, time.Since(start))
	}
	sort.Slice(d, func(a, b int) bool { return d[a] < d[b] })
	t.Logf("ExecSync `true`: median %v, p90 %v, min %v, max %v over %d calls", d[n/2], d[n*9/10], d[0], d[n-1], n)
}

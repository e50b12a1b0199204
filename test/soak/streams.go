package main

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/portforward"
	"k8s.io/client-go/tools/remotecommand"
	"k8s.io/client-go/transport/spdy"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// httpdPort is where each pod's logger serves its page (pageOf) for the
// port-forward sessions.
const httpdPort = 8080

// skipWebSocket names, in a runtime's skips, the attach over WebSocket: the
// session is an attach over SPDY instead.
const skipWebSocket = "attach over WebSocket"

// streamWithin bounds a session from its URL to what it must see.
const streamWithin = 10 * time.Second

// setupWithin bounds the logger's setup (serveScript) after its start's
// answer, on a loaded node.
const setupWithin = 10 * time.Second

func pageOf(p *pod) string { return "soak page of " + p.name + "\n" }

// serveScript starts busybox httpd (it daemonizes) serving pageOf(p). Its
// errors (a root full at that moment) stay out of the numbered log.
func serveScript(p *pod) string {
	return fmt.Sprintf("{ mkdir -p /tmp/www && printf '%%s\\n' '%s' >/tmp/www/index.html && httpd -p %d -h /tmp/www; } 2>/dev/null; ",
		strings.TrimSuffix(pageOf(p), "\n"), httpdPort)
}

// streamProbe is a kubectl attach to the logger (over SPDY or WebSocket, in
// turn) or a kubectl port-forward to its httpd: a session must see the
// logger's lines, or get the pod's page, within streamWithin.
func (s *soak) streamProbe(p *pod, n int) {
	start := time.Now()
	var err error
	lostPage := false // a full root during the logger's setup may have left it no page
	switch n % 3 {
	case 0:
		err = s.attachSession(p, "spdy")
	case 1:
		transport := "websocket"
		if _, skip := s.inst.daemon.skips()[skipWebSocket]; skip {
			transport = "spdy"
		}
		err = s.attachSession(p, transport)
	default:
		err = s.portForwardSession(p)
		lostPage = s.flt.during(p.setupFrom, p.setupBy, "enospc")
	}
	if err == nil {
		s.streams.Add(1)
		return
	}
	if s.flt.during(start, time.Now(), "daemon-kill") || p.faulted.Load() || lostPage {
		s.rpc.tolerate("stream", err)
		return
	}
	s.find.add("stream", "pod %s (%s): %v", p.name, short(p.id), err)
}

func (s *soak) attachSession(p *pod, transport string) error {
	var raw string
	err := s.rpc.call("Attach", func(ctx context.Context) error {
		r, err := s.inst.rt.Attach(ctx, &runtimeapi.AttachRequest{ContainerId: p.logger, Stdout: true})
		if err == nil {
			raw = r.Url
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("attach: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	var e remotecommand.Executor
	if transport == "spdy" {
		e, err = remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	} else {
		e, err = remotecommand.NewWebSocketExecutor(&rest.Config{}, "GET", raw)
	}
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), streamWithin)
	defer cancel()
	out := &watchWriter{want: "soak line ", seen: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: out}) }()
	select {
	case <-out.seen:
		cancel()
		<-done
		return nil
	case err := <-done:
		return fmt.Errorf("attach over %s ended before a line of the logger: %v", transport, err)
	case <-ctx.Done():
		<-done
		return fmt.Errorf("attach over %s: no line of the logger in %v", transport, streamWithin)
	}
}

func (s *soak) portForwardSession(p *pod) error {
	var raw string
	err := s.rpc.call("PortForward", func(ctx context.Context) error {
		r, err := s.inst.rt.PortForward(ctx, &runtimeapi.PortForwardRequest{PodSandboxId: p.id, Port: []int32{httpdPort}})
		if err == nil {
			raw = r.Url
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("PortForward: %w", err)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return err
	}
	tr, upgrader, err := spdy.RoundTripperFor(&rest.Config{})
	if err != nil {
		return err
	}
	dialer := spdy.NewDialer(upgrader, &http.Client{Transport: tr, Timeout: streamWithin}, "POST", u)
	stop, ready := make(chan struct{}), make(chan struct{})
	errOut := &syncBuffer{} // what the runtime says of a failed connection
	pf, err := portforward.NewOnAddresses(dialer, []string{"127.0.0.1"}, []string{fmt.Sprintf("0:%d", httpdPort)}, stop, ready, io.Discard, errOut)
	if err != nil {
		return err
	}
	errc := make(chan error, 1)
	go func() { errc <- pf.ForwardPorts() }()
	defer func() { close(stop); <-errc }()
	select {
	case <-ready:
	case err := <-errc:
		errc <- err // for the deferred receive
		return fmt.Errorf("port forward: %v", err)
	case <-time.After(streamWithin):
		return fmt.Errorf("port forward not ready in %v", streamWithin)
	}
	ports, err := pf.GetPorts()
	if err != nil || len(ports) != 1 {
		return fmt.Errorf("port forward ports %v: %v", ports, err)
	}
	c := &http.Client{Timeout: streamWithin, Transport: &http.Transport{DisableKeepAlives: true}}
	resp, err := c.Get(fmt.Sprintf("http://127.0.0.1:%d/", ports[0].Local))
	if err != nil {
		time.Sleep(100 * time.Millisecond) // the error stream's message follows the data stream's close
		return fmt.Errorf("GET through the port forward: %v (the forwarder: %q)", err, errOut.String())
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil || string(b) != pageOf(p) {
		return fmt.Errorf("GET through the port forward: %d %q (%v), want %q", resp.StatusCode, b, err, pageOf(p))
	}
	return nil
}

// watchWriter closes seen once what was written holds want.
type watchWriter struct {
	mu   sync.Mutex
	buf  strings.Builder
	want string
	seen chan struct{}
	once sync.Once
}

func (w *watchWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.buf.Len() < 1<<16 {
		w.buf.Write(b)
	}
	if strings.Contains(w.buf.String(), w.want) {
		w.once.Do(func() { close(w.seen) })
	}
	return len(b), nil
}

// syncBuffer is a strings.Builder safe for a writer and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (w *syncBuffer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func (w *syncBuffer) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

package streaming

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"path"
	"strings"
	"testing"
	"time"

	utilexec "k8s.io/utils/exec"
)

func TestRequestsAreTakenOnce(t *testing.T) {
	r := &requests{m: map[string]pending{}}
	u, err := r.put("http://127.0.0.1:1/exec/tok1", "a")
	if err != nil {
		t.Fatal(err)
	}
	token := path.Base(u)
	if token == "tok1" || !strings.HasPrefix(u, "http://127.0.0.1:1/exec/") {
		t.Fatalf("the client's URL %s must carry a token of ours, not the library's", u)
	}
	if p, ok := r.take(token); !ok || p.req != "a" || p.libPath != "/exec/tok1" {
		t.Fatalf("take: %+v %v", p, ok)
	}
	if _, ok := r.take(token); ok {
		t.Fatal("a token must be usable once")
	}
	if _, ok := r.take("tok1"); ok {
		t.Fatal("the library's token must not be usable")
	}
	r.m["old"] = pending{req: "b", expires: time.Now().Add(-time.Second)}
	if _, ok := r.take("old"); ok {
		t.Fatal("an expired token must not be served")
	}
}

func TestWriteStatus(t *testing.T) {
	for _, c := range []struct {
		err  error
		want string
	}{
		{nil, `{"status":"Success"}`},
		{utilexec.CodeExitError{Err: errors.New("x"), Code: 3}, `"reason":"NonZeroExitCode","details":{"causes":[{"reason":"ExitCode","message":"3"}]}`},
		{errors.New("boom"), `"reason":"InternalError"`},
	} {
		var b bytes.Buffer
		writeStatus(&b, c.err)
		if !strings.Contains(b.String(), c.want) || !json.Valid(b.Bytes()) {
			t.Errorf("status for %v = %s, want %s", c.err, b.String(), c.want)
		}
	}
}

// splice returns when the pod side closes, and half-closes the pod side when
// the client's input ends.
func TestSplice(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		b, _ := io.ReadAll(c) // until the half-close
		c.Write(append([]byte("echo:"), b...))
		c.Close()
	}()
	conn, err := dialLoopback(context.Background(), int32(ln.Addr().(*net.TCPAddr).Port))
	if err != nil {
		t.Fatal(err)
	}
	s := &pipeStream{r: strings.NewReader("ping"), w: &bytes.Buffer{}}
	if err := splice(context.Background(), conn.(*net.TCPConn), s); err != nil {
		t.Fatal(err)
	}
	if got := s.w.String(); got != "echo:ping" {
		t.Fatalf("pod answered %q", got)
	}
}

type pipeStream struct {
	r io.Reader
	w *bytes.Buffer
}

func (p *pipeStream) Read(b []byte) (int, error)  { return p.r.Read(b) }
func (p *pipeStream) Write(b []byte) (int, error) { return p.w.Write(b) }
func (p *pipeStream) Close() error                { return nil }

func TestDialClosedPortFails(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	port := ln.Addr().(*net.TCPAddr).Port
	ln.Close()
	if _, err := dialLoopback(context.Background(), int32(port)); err == nil {
		t.Fatal("dialing a closed port succeeded")
	}
}

func TestTrackedConnEndsContextOnPeerClose(t *testing.T) {
	ln, _ := net.Listen("tcp", "127.0.0.1:0")
	tl := newTrackingListener(ln)
	defer tl.Close()
	go func() {
		c, _ := net.Dial("tcp", ln.Addr().String())
		c.Close()
	}()
	c, err := tl.Accept()
	if err != nil {
		t.Fatal(err)
	}
	ctx := connContext(context.Background(), c)
	c.SetReadDeadline(time.Now().Add(-time.Second))
	c.Read(make([]byte, 1)) // a timeout is not the peer leaving
	if ctx.Err() != nil {
		t.Fatal("a deadline must not end the context")
	}
	c.SetReadDeadline(time.Time{})
	c.Read(make([]byte, 1))
	select {
	case <-ctx.Done():
	case <-time.After(time.Second):
		t.Fatal("the peer closing must end the context")
	}
}

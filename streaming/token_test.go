package streaming

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"net/url"
	"sync/atomic"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/remotecommand"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// countingContainers runs every exec as "echo hi" and counts them.
type countingContainers struct{ execs atomic.Int32 }

func (c *countingContainers) Exec(_ context.Context, _ string, _ []string, sio container.StreamIO) (int32, error) {
	c.execs.Add(1)
	if sio.Stdout != nil {
		io.WriteString(sio.Stdout, "hi\n")
	}
	return 0, nil
}

func (c *countingContainers) Attach(context.Context, string, container.StreamIO) error { return nil }

type noPods struct{}

func (noPods) Get(string) (sandbox.Info, error) { return sandbox.Info{}, sandbox.ErrNotFound }

func newTestServer(t *testing.T) (*Server, *countingContainers) {
	t.Helper()
	ctrs := &countingContainers{}
	s, err := New(Config{Address: "127.0.0.1", Port: "0"}, ctrs, noPods{}, slog.New(slog.DiscardHandler))
	if err != nil {
		t.Fatal(err)
	}
	s.Start()
	t.Cleanup(func() { s.Stop() })
	return s, ctrs
}

func streamOnce(t *testing.T, transport, rawURL string) error {
	t.Helper()
	var e remotecommand.Executor
	var err error
	if transport == "spdy" {
		u, perr := url.Parse(rawURL)
		if perr != nil {
			t.Fatal(perr)
		}
		e, err = remotecommand.NewSPDYExecutor(&rest.Config{}, "POST", u)
	} else {
		e, err = remotecommand.NewWebSocketExecutor(&rest.Config{}, "GET", rawURL)
	}
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out bytes.Buffer
	return e.StreamWithContext(ctx, remotecommand.StreamOptions{Stdout: &out})
}

// The attack: an exec URL is used once over one protocol (v5 WebSocket is
// what kubectl speaks today), then replayed within the token's minute over
// another. A URL is a one-time capability: the replay must fail and the
// command must have run once.
func TestExecURLIsSingleUseWhateverTheProtocol(t *testing.T) {
	s, ctrs := newTestServer(t)
	for _, first := range []string{"websocket", "spdy"} {
		for _, replay := range []string{"websocket", "spdy"} {
			ctrs.execs.Store(0)
			resp, err := s.GetExec(&runtimeapi.ExecRequest{ContainerId: "c1", Cmd: []string{"echo", "hi"}, Stdout: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := streamOnce(t, first, resp.Url); err != nil {
				t.Fatalf("first use over %s: %v", first, err)
			}
			if err := streamOnce(t, replay, resp.Url); err == nil {
				t.Errorf("exec URL used over %s was replayed over %s", first, replay)
			}
			if n := ctrs.execs.Load(); n != 1 {
				t.Errorf("used over %s, replayed over %s: the command ran %d times, want 1", first, replay, n)
			}
		}
	}
}

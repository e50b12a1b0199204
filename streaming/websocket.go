package streaming

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
	"k8s.io/cri-streaming/pkg/streaming/remotecommand"
	"k8s.io/streaming/pkg/httpstream/wsstream"
	utilexec "k8s.io/utils/exec"
)

// k8s.io/cri-streaming serves SPDY and the v1-v4 WebSocket protocols.
// Current clients (client-go's WebSocket executor, kubectl, critest
// -websocket-*) speak the v5 remotecommand protocol (v4 plus a stream-close
// signal) and tunnel port-forward SPDY through a WebSocket — what the API
// server otherwise translates for the kubelet. The front end below serves
// those two itself and hands everything else to the library.

const (
	v5Protocol = "v5.channel.k8s.io"
	// tokenTTL is how long an unused session URL is remembered (as the
	// library's own cache).
	tokenTTL = time.Minute
)

// requests remembers the requests behind the URLs handed out, by token.
// Every URL carries a token of ours, never the library's: a session is
// served only after its token is taken here, once, whatever the protocol.
// The library's own token (in libPath) stays private, so a client cannot
// use a URL once over v5 (served here) and again through the library.
type requests struct {
	mu sync.Mutex
	m  map[string]pending
}

type pending struct {
	req     any
	libPath string // the library's URL path for this session
	expires time.Time
}

// put remembers req, handed out by the library at libURL, and returns the
// URL to give the client instead.
func (r *requests) put(libURL string, req any) (string, error) {
	u, err := url.Parse(libURL)
	if err != nil {
		return "", fmt.Errorf("streaming server: session URL: %w", err)
	}
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("streaming server: session token: %w", err)
	}
	token := base64.RawURLEncoding.EncodeToString(b)
	r.mu.Lock()
	defer r.mu.Unlock()
	now := time.Now()
	for k, p := range r.m {
		if now.After(p.expires) {
			delete(r.m, k)
		}
	}
	r.m[token] = pending{req: req, libPath: u.Path, expires: now.Add(tokenTTL)}
	u.Path, u.RawPath = path.Join(path.Dir(u.Path), token), ""
	return u.String(), nil
}

// take returns the session of token and forgets it.
func (r *requests) take(token string) (pending, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	p, ok := r.m[token]
	delete(r.m, token)
	return p, ok && time.Now().Before(p.expires)
}

// ServeHTTP routes a session request: v5 exec and attach are served here,
// the rest by the library under its own token.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	p, ok := s.reqs.take(path.Base(r.URL.Path))
	if !ok {
		http.NotFound(w, r)
		return
	}
	if wsstream.IsWebSocketRequestWithStreamCloseProtocol(r) {
		s.serveV5(w, r, p.req)
		return
	}
	lr := r.Clone(r.Context())
	lr.URL.Path, lr.URL.RawPath = p.libPath, ""
	if wsstream.IsWebSocketRequestWithTunnelingProtocol(r) {
		s.serveTunneled(w, lr)
		return
	}
	s.lib.ServeHTTP(w, lr)
}

// serveV5 serves an exec or attach over the v5 WebSocket protocol.
func (s *Server) serveV5(w http.ResponseWriter, r *http.Request, req any) {
	var opts remotecommand.Options
	var run func(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error
	switch q := req.(type) {
	case *runtimeapi.ExecRequest:
		opts = remotecommand.Options{Stdin: q.Stdin, Stdout: q.Stdout, Stderr: q.Stderr, TTY: q.Tty}
		run = func(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
			return s.rt.Exec(ctx, q.ContainerId, q.Cmd, in, out, errOut, q.Tty, resize)
		}
	case *runtimeapi.AttachRequest:
		opts = remotecommand.Options{Stdin: q.Stdin, Stdout: q.Stdout, Stderr: q.Stderr, TTY: q.Tty}
		run = func(ctx context.Context, in io.Reader, out, errOut io.WriteCloser, resize <-chan remotecommand.TerminalSize) error {
			return s.rt.Attach(ctx, q.ContainerId, in, out, errOut, q.Tty, resize)
		}
	default:
		http.NotFound(w, r)
		return
	}
	s.runV5(w, r, opts, run)
}

// The channels of the remotecommand WebSocket protocols.
const (
	chStdin = iota
	chStdout
	chStderr
	chError
	chResize
)

func (s *Server) runV5(w http.ResponseWriter, r *http.Request, opts remotecommand.Options,
	run func(context.Context, io.Reader, io.WriteCloser, io.WriteCloser, <-chan remotecommand.TerminalSize) error) {
	channels := []wsstream.ChannelType{
		pick(opts.Stdin, wsstream.ReadChannel), pick(opts.Stdout, wsstream.WriteChannel),
		pick(opts.Stderr, wsstream.WriteChannel), wsstream.WriteChannel, wsstream.ReadChannel,
	}
	conn := wsstream.NewConn(map[string]wsstream.ChannelProtocolConfig{v5Protocol: {Binary: true, Channels: channels}})
	conn.SetIdleTimeout(s.idle)
	_, streams, err := conn.Open(w, r)
	if err != nil {
		s.log.Info("websocket upgrade failed", "err", err)
		return
	}
	defer conn.Close()
	// An empty message on the first writable channel tells the client the
	// session is established.
	first := streams[chError]
	switch {
	case opts.Stdout:
		first = streams[chStdout]
	case opts.Stderr:
		first = streams[chStderr]
	}
	if _, err := first.Write(nil); err != nil {
		s.log.Debug("websocket session ended before it started", "err", err)
		return
	}
	var in io.Reader
	var out, errOut io.WriteCloser
	if opts.Stdin {
		in = streams[chStdin]
	}
	if opts.Stdout {
		out = streams[chStdout]
	}
	if opts.Stderr {
		errOut = streams[chStderr]
	}
	var resize chan remotecommand.TerminalSize
	if opts.TTY {
		resize = make(chan remotecommand.TerminalSize)
		go decodeResizes(r.Context(), streams[chResize], resize)
	}
	writeStatus(streams[chError], run(r.Context(), in, out, errOut, resize))
}

func pick(wanted bool, t wsstream.ChannelType) wsstream.ChannelType {
	if wanted {
		return t
	}
	return wsstream.IgnoreChannel
}

func decodeResizes(ctx context.Context, r io.Reader, out chan<- remotecommand.TerminalSize) {
	defer close(out)
	dec := json.NewDecoder(r)
	for {
		var sz remotecommand.TerminalSize
		if dec.Decode(&sz) != nil {
			return
		}
		select {
		case out <- sz:
		case <-ctx.Done():
			return
		}
	}
}

// status is the v4/v5 error-channel message (a metav1.Status subset).
type status struct {
	Status  string         `json:"status,omitempty"`
	Message string         `json:"message,omitempty"`
	Reason  string         `json:"reason,omitempty"`
	Details *statusDetails `json:"details,omitempty"`
	Code    int32          `json:"code,omitempty"`
}

type statusDetails struct {
	Causes []statusCause `json:"causes,omitempty"`
}

type statusCause struct {
	Type    string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

func writeStatus(w io.Writer, err error) {
	st := status{Status: "Success"}
	var exit utilexec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && exit.Exited():
		st = status{Status: "Failure", Reason: remotecommand.NonZeroExitCodeReason,
			Message: fmt.Sprintf("command terminated with non-zero exit code: %v", err),
			Details: &statusDetails{Causes: []statusCause{{Type: remotecommand.ExitCodeCauseType, Message: fmt.Sprint(exit.ExitStatus())}}}}
	default:
		st = status{Status: "Failure", Reason: "InternalError", Code: http.StatusInternalServerError,
			Message: fmt.Sprintf("Internal error occurred: %v", err)}
	}
	b, _ := json.Marshal(st)
	// The error channel is the last thing written: if the client is gone
	// there is nobody left to tell.
	_, _ = w.Write(b)
}

// serveTunneled serves a port forward whose SPDY connection is tunneled
// through a WebSocket: the library's SPDY handler gets the request as a
// SPDY upgrade and, through tunnelWriter, the WebSocket as its connection.
func (s *Server) serveTunneled(w http.ResponseWriter, r *http.Request) {
	var proto string
	for _, p := range strings.Split(r.Header.Get(wsstream.WebSocketProtocolHeader), ",") {
		if p = strings.TrimSpace(p); strings.HasPrefix(p, "SPDY/3.1+") {
			proto = p
			break
		}
	}
	spdyReq := r.Clone(r.Context())
	for _, h := range []string{"Sec-Websocket-Key", "Sec-Websocket-Version", "Sec-Websocket-Extensions", wsstream.WebSocketProtocolHeader} {
		spdyReq.Header.Del(h)
	}
	spdyReq.Header.Set("Connection", "Upgrade")
	spdyReq.Header.Set("Upgrade", "SPDY/3.1")
	spdyReq.Header.Set("X-Stream-Protocol-Version", strings.TrimPrefix(proto, "SPDY/3.1+"))
	tw := &tunnelWriter{w: w, r: r, proto: proto, header: http.Header{}}
	s.lib.ServeHTTP(tw, spdyReq)
}

// tunnelWriter is the ResponseWriter the SPDY handler sees: its 101
// upgrades the real request to a WebSocket, and Hijack returns that
// WebSocket as a net.Conn.
type tunnelWriter struct {
	w      http.ResponseWriter
	r      *http.Request
	proto  string
	header http.Header
	ws     *websocket.Conn
	err    error
}

func (t *tunnelWriter) Header() http.Header { return t.header }

func (t *tunnelWriter) WriteHeader(code int) {
	if code != http.StatusSwitchingProtocols {
		for k, v := range t.header {
			t.w.Header()[k] = v
		}
		t.w.WriteHeader(code)
		return
	}
	up := websocket.Upgrader{Subprotocols: []string{t.proto}, CheckOrigin: func(*http.Request) bool { return true }}
	t.ws, t.err = up.Upgrade(t.w, t.r, nil)
}

func (t *tunnelWriter) Write(b []byte) (int, error) {
	if t.ws != nil {
		return 0, errors.New("write after upgrade")
	}
	return t.w.Write(b)
}

func (t *tunnelWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	if t.ws == nil {
		return nil, nil, fmt.Errorf("websocket tunnel: %w", t.err)
	}
	c := &tunnelConn{ws: t.ws}
	return c, bufio.NewReadWriter(bufio.NewReader(c), bufio.NewWriter(c)), nil
}

// tunnelConn carries a byte stream in binary WebSocket messages.
type tunnelConn struct {
	ws     *websocket.Conn
	rmu    sync.Mutex
	cur    io.Reader
	wmu    sync.Mutex
	closed sync.Once
}

func (c *tunnelConn) Read(p []byte) (int, error) {
	c.rmu.Lock()
	defer c.rmu.Unlock()
	for {
		if c.cur == nil {
			kind, r, err := c.ws.NextReader()
			if err != nil {
				var ce *websocket.CloseError
				if errors.As(err, &ce) && ce.Code == websocket.CloseNormalClosure {
					return 0, io.EOF
				}
				return 0, err
			}
			if kind != websocket.BinaryMessage {
				return 0, errors.New("websocket tunnel: non-binary message")
			}
			c.cur = r
		}
		n, err := c.cur.Read(p)
		if errors.Is(err, io.EOF) {
			c.cur = nil
			if n == 0 {
				continue
			}
			err = nil
		}
		return n, err
	}
}

func (c *tunnelConn) Write(p []byte) (int, error) {
	c.wmu.Lock()
	defer c.wmu.Unlock()
	if err := c.ws.WriteMessage(websocket.BinaryMessage, p); err != nil {
		return 0, err
	}
	return len(p), nil
}

func (c *tunnelConn) Close() error {
	var err error
	c.closed.Do(func() {
		c.wmu.Lock()
		// A courtesy to the peer before the close: a failure (peer gone,
		// deadline) changes nothing, Close below ends the connection.
		_ = c.ws.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
		c.wmu.Unlock()
		err = c.ws.Close()
	})
	return err
}

func (c *tunnelConn) LocalAddr() net.Addr                { return c.ws.LocalAddr() }
func (c *tunnelConn) RemoteAddr() net.Addr               { return c.ws.RemoteAddr() }
func (c *tunnelConn) SetDeadline(t time.Time) error      { return c.ws.NetConn().SetDeadline(t) }
func (c *tunnelConn) SetReadDeadline(t time.Time) error  { return c.ws.SetReadDeadline(t) }
func (c *tunnelConn) SetWriteDeadline(t time.Time) error { return c.ws.SetWriteDeadline(t) }

package streaming

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
)

// A hijacked HTTP connection does not cancel its request's context when
// the client goes away, and the SPDY port-forward handler passes no context
// at all. So every accepted connection is tracked: the request context
// (through http.Server.ConnContext) ends when the client closes or resets
// the connection, or when the server closes it. Exec sessions are killed,
// and attach sessions detach, on that signal.

// trackingListener wraps accepted connections and can close them all.
type trackingListener struct {
	net.Listener
	mu    sync.Mutex
	conns map[*trackedConn]struct{}
}

func newTrackingListener(l net.Listener) *trackingListener {
	return &trackingListener{Listener: l, conns: map[*trackedConn]struct{}{}}
}

func (l *trackingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	t := &trackedConn{Conn: c, l: l}
	l.mu.Lock()
	l.conns[t] = struct{}{}
	l.mu.Unlock()
	return t, nil
}

func (l *trackingListener) forget(t *trackedConn) {
	l.mu.Lock()
	delete(l.conns, t)
	l.mu.Unlock()
}

// closeAll closes every live connection.
func (l *trackingListener) closeAll() {
	l.mu.Lock()
	all := make([]*trackedConn, 0, len(l.conns))
	for t := range l.conns {
		all = append(all, t)
	}
	l.mu.Unlock()
	for _, t := range all {
		t.Close()
	}
}

// trackedConn cancels its context when its peer is gone.
type trackedConn struct {
	net.Conn
	l      *trackingListener
	mu     sync.Mutex
	cancel context.CancelFunc
	gone   bool
}

func (t *trackedConn) setCancel(cancel context.CancelFunc) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.cancel = cancel
	if t.gone {
		cancel()
	}
}

func (t *trackedConn) markGone() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.gone = true
	if t.cancel != nil {
		t.cancel()
	}
}

func (t *trackedConn) Read(p []byte) (int, error) {
	n, err := t.Conn.Read(p)
	if err != nil && !isTimeout(err) {
		t.markGone()
	}
	return n, err
}

func (t *trackedConn) Close() error {
	t.markGone()
	t.l.forget(t)
	return t.Conn.Close()
}

// connContext gives each connection's requests a context that ends with
// the connection.
func connContext(ctx context.Context, c net.Conn) context.Context {
	if tc, ok := c.(*tls.Conn); ok {
		c = tc.NetConn()
	}
	t, ok := c.(*trackedConn)
	if !ok {
		return ctx
	}
	ctx, cancel := context.WithCancel(ctx)
	t.setCancel(cancel)
	return ctx
}

package streaming

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	goruntime "runtime"
	"strconv"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/sandbox"
)

// dialTimeout bounds connecting to a port in a pod.
const dialTimeout = 10 * time.Second

// ErrPodNotReady means port forwarding to a pod that is not ready.
var ErrPodNotReady = errors.New("pod sandbox is not ready")

// PortForward copies between stream and a new connection to port inside
// the pod's network namespace (the host's for host-network pods). It
// returns when the pod side has closed, or when the client has gone away.
func (r *runtime) PortForward(ctx context.Context, podID string, port int32, stream io.ReadWriteCloser) error {
	info, err := r.pods.Get(podID)
	if err != nil {
		return fmt.Errorf("port forward: %w", err)
	}
	if !info.Ready {
		return fmt.Errorf("port forward to pod %s: %w", podID, ErrPodNotReady)
	}
	conn, err := dialPod(ctx, info, port)
	if err != nil {
		r.log.Debug("port forward dial failed", "pod", podID, "port", port, "err", err)
		return err
	}
	defer conn.Close()
	r.log.Debug("port forward connected", "pod", podID, "port", port)
	return splice(ctx, conn, stream)
}

// dialPod connects to 127.0.0.1:port (else [::1]:port) in the pod.
func dialPod(ctx context.Context, info sandbox.Info, port int32) (*net.TCPConn, error) {
	if port <= 0 || port > 65535 {
		return nil, fmt.Errorf("port forward: invalid port %d", port)
	}
	var conn net.Conn
	var err error
	dial := func() error {
		conn, err = dialLoopback(ctx, port)
		return nil
	}
	if info.NetNSPath == "" {
		_ = dial() // dial reports through err; it returns nil
	} else if nerr := inNetNS(info.NetNSPath, dial); nerr != nil {
		return nil, fmt.Errorf("port forward: pod %s: %w", info.ID, nerr)
	}
	if err != nil {
		return nil, fmt.Errorf("port forward: connect to port %d in pod %s: %w", port, info.ID, err)
	}
	return conn.(*net.TCPConn), nil
}

// dialLoopback dials a literal loopback address, one after the other on
// the calling goroutine: the socket is created on the current thread (and
// so in its network namespace); a host name could fan out to other threads.
func dialLoopback(ctx context.Context, port int32) (net.Conn, error) {
	d := net.Dialer{Timeout: dialTimeout}
	p := strconv.Itoa(int(port))
	conn, err := d.DialContext(ctx, "tcp4", net.JoinHostPort("127.0.0.1", p))
	if err == nil {
		return conn, nil
	}
	conn, err6 := d.DialContext(ctx, "tcp6", net.JoinHostPort("::1", p))
	if err6 == nil {
		return conn, nil
	}
	return nil, err
}

// inNetNS runs fn on a locked OS thread switched into the network
// namespace at path, then switches back. A thread that cannot switch back
// stays locked, so the runtime discards it with its goroutine.
func inNetNS(path string, fn func() error) error {
	errc := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		orig, err := os.Open(fmt.Sprintf("/proc/self/task/%d/ns/net", unix.Gettid()))
		if err != nil {
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer orig.Close()
		target, err := os.Open(path)
		if err != nil {
			errc <- fmt.Errorf("open netns: %w", err)
			goruntime.UnlockOSThread()
			return
		}
		defer target.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			errc <- fmt.Errorf("enter netns %s: %w", path, err)
			goruntime.UnlockOSThread()
			return
		}
		err = fn()
		if unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET) == nil {
			goruntime.UnlockOSThread()
		}
		errc <- err
	}()
	return <-errc
}

// splice copies both ways. The client's end of input half-closes the pod
// connection; the session ends when the pod side is done, when the client
// stream fails, or when ctx ends.
func splice(ctx context.Context, conn *net.TCPConn, stream io.ReadWriteCloser) error {
	// podDone is closed once the pod side's copy has ended, with its error
	// in podErr. Once conn is closed under it, that error only says so.
	var podErr error
	podDone := make(chan struct{})
	go func() {
		defer close(podDone)
		_, podErr = io.Copy(stream, conn)
	}()
	clientDone := make(chan error, 1)
	go func() {
		_, err := io.Copy(conn, stream)
		// EOF to the pod; a failure means the connection is gone, which
		// the pod side's copy then reports.
		_ = conn.CloseWrite()
		clientDone <- err
	}()
	select {
	case <-podDone:
		return ignoreClosed(podErr)
	case err := <-clientDone:
		if err != nil {
			conn.Close()
			<-podDone
			return nil // the client is gone
		}
	case <-ctx.Done():
		conn.Close()
		<-podDone
		return nil
	}
	select {
	case <-podDone:
		return ignoreClosed(podErr)
	case <-ctx.Done():
		conn.Close()
		<-podDone
		return nil
	}
}

func ignoreClosed(err error) error {
	if err == nil || errors.Is(err, net.ErrClosed) {
		return nil
	}
	return fmt.Errorf("port forward: %w", err)
}

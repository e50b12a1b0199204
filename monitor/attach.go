package monitor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"

	"golang.org/x/sys/unix"
)

// Attach sessions. After the OpAttach request line and a response line
// without error, both sides exchange frames on the connection: a kind byte,
// a big-endian uint32 length and that many bytes.
//
//	client -> monitor: frameStdin (data for the container's stdin),
//	                   frameStdinClose (the client's stdin ended)
//	monitor -> client: frameStdout, frameStderr (container output)
//
// The monitor ends the session (closes the connection) when the container
// has exited and its output is drained, or when the client detaches: on a
// stdin close for a container that is not stdin_once (or has a TTY), or by
// closing its end. Container output is fanned out to every session and to
// the log; a session that falls behind by attachQueue chunks is dropped
// rather than stalling the container or its log.
const (
	frameStdin byte = iota + 1
	frameStdinClose
	frameStdout
	frameStderr
)

// maxFrame bounds a frame's payload.
const maxFrame = 64 << 10

// attachQueue is how many output chunks a session may lag behind.
const attachQueue = 1024

func writeFrame(w io.Writer, kind byte, data []byte) error {
	buf := make([]byte, 5+len(data))
	buf[0] = kind
	binary.BigEndian.PutUint32(buf[1:5], uint32(len(data))) //nolint:gosec // data is one read buffer (32 KiB) or chunk, far below 4 GiB
	copy(buf[5:], data)
	_, err := w.Write(buf)
	return err
}

func readFrame(r io.Reader) (byte, []byte, error) {
	var hdr [5]byte
	if _, err := io.ReadFull(r, hdr[:]); err != nil {
		return 0, nil, err
	}
	n := binary.BigEndian.Uint32(hdr[1:])
	if n > maxFrame {
		return 0, nil, fmt.Errorf("attach frame of %d bytes is too large", n)
	}
	data := make([]byte, n)
	if _, err := io.ReadFull(r, data); err != nil {
		return 0, nil, err
	}
	return hdr[0], data, nil
}

// ---- monitor side -----------------------------------------------------------

type chunk struct {
	kind byte
	data []byte
}

// attachment is one attach session in the monitor.
type attachment struct {
	conn           net.Conn
	stdin          bool
	stdout, stderr bool
	out            chan chunk
	done           chan struct{} // closed when the session must end
	once           sync.Once
}

func (a *attachment) end() { a.once.Do(func() { close(a.done) }) }

// send queues output for the client; a client too far behind is dropped.
func (a *attachment) send(c chunk) {
	if (c.kind == frameStdout && !a.stdout) || (c.kind == frameStderr && !a.stderr) {
		return
	}
	select {
	case a.out <- c:
	default:
		a.end()
	}
}

// attach serves an OpAttach request; it owns conn.
func (m *monitor) attach(conn net.Conn, br *bufio.Reader, req Request) {
	defer conn.Close()
	k, err := m.ctrs.get(req.ID)
	if err == nil {
		err = k.attachable()
	}
	if err == nil && req.Attach == nil {
		err = errors.New("attach: no streams named")
	}
	if err != nil {
		if werr := json.NewEncoder(conn).Encode(Response{Error: err.Error()}); werr != nil {
			m.log.Debug("attach refusal not delivered", "container", req.ID, "reason", err, "err", werr)
		}
		return
	}
	if err := json.NewEncoder(conn).Encode(Response{Container: k.info()}); err != nil {
		return
	}
	a := &attachment{conn: conn, stdin: req.Attach.Stdin, stdout: req.Attach.Stdout, stderr: req.Attach.Stderr,
		out: make(chan chunk, attachQueue), done: make(chan struct{})}
	k.addAttachment(a)
	defer k.removeAttachment(a)
	go k.readInput(a, br)
	k.writeOutput(a)
	m.log.Debug("attach session ended", "container", k.id)
}

// attachable reports whether the container can be attached to.
func (k *ctr) attachable() error {
	select {
	case <-k.exited:
		return fmt.Errorf("container %s has exited", k.id)
	default:
		return nil
	}
}

func (k *ctr) addAttachment(a *attachment) {
	k.attachMu.Lock()
	defer k.attachMu.Unlock()
	if k.attached == nil {
		k.attached = map[*attachment]struct{}{}
	}
	k.attached[a] = struct{}{}
}

func (k *ctr) removeAttachment(a *attachment) {
	k.attachMu.Lock()
	defer k.attachMu.Unlock()
	delete(k.attached, a)
}

// broadcast hands a copy of p to every session.
func (k *ctr) broadcast(kind byte, p []byte) {
	k.attachMu.Lock()
	defer k.attachMu.Unlock()
	if len(k.attached) == 0 {
		return
	}
	c := chunk{kind: kind, data: append([]byte(nil), p...)}
	for a := range k.attached {
		a.send(c)
	}
}

// writeOutput sends queued output until the session ends or the container
// has exited (then it flushes what is queued).
func (k *ctr) writeOutput(a *attachment) {
	for {
		select {
		case c := <-a.out:
			if writeFrame(a.conn, c.kind, c.data) != nil {
				return
			}
		case <-a.done:
			return
		case <-k.exited:
			for {
				select {
				case c := <-a.out:
					if writeFrame(a.conn, c.kind, c.data) != nil {
						return
					}
				default:
					return
				}
			}
		}
	}
}

// readInput forwards the client's stdin; the client leaving or detaching
// ends the session.
func (k *ctr) readInput(a *attachment, br *bufio.Reader) {
	defer a.end()
	for {
		kind, data, err := readFrame(br)
		if err != nil {
			return
		}
		switch kind {
		case frameStdin:
			if a.stdin {
				k.writeStdin(data)
			}
		case frameStdinClose:
			if !a.stdin || k.tty != nil || !k.stdinOnce {
				return // detach
			}
			k.closeStdin()
		}
	}
}

func (k *ctr) writeStdin(p []byte) {
	k.stdinMu.Lock()
	defer k.stdinMu.Unlock()
	if k.stdin != nil {
		// Fails once the container closed its stdin or exited: input for
		// it has nowhere to go, and the attach session carries on.
		_, _ = k.stdin.Write(p)
	}
}

// closeStdin closes a (pipe) stdin for good: stdin_once.
func (k *ctr) closeStdin() {
	k.stdinMu.Lock()
	defer k.stdinMu.Unlock()
	if k.stdin != nil && k.tty == nil {
		k.stdin.Close()
		k.stdin = nil
	}
}

// resize sets the size of a TTY container's terminal.
func (k *ctr) resize(width, height uint16) error {
	if k.tty == nil {
		return nil
	}
	ws := &unix.Winsize{Col: width, Row: height}
	if err := unix.IoctlSetWinsize(int(k.tty.Fd()), unix.TIOCSWINSZ, ws); err != nil {
		return fmt.Errorf("resize terminal of %s: %w", k.id, err)
	}
	return nil
}

// fanWriter broadcasts what the log copier reads from one stream.
type fanWriter struct {
	k    *ctr
	kind byte
}

func (f fanWriter) Write(p []byte) (int, error) {
	f.k.broadcast(f.kind, p)
	return len(p), nil
}

// ---- client side ------------------------------------------------------------

// Streams are the client's ends of an attach; nil ones are not attached.
type Streams struct {
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Attach connects s to the stdio of container id through the monitor on
// sock. It returns when the container has exited, when the monitor ended
// the session (detach on stdin close), when writing to the client fails,
// or when ctx ends (the client went away).
func Attach(ctx context.Context, sock, id string, s Streams) error {
	conn, br, err := openAttach(ctx, sock, id, s)
	if err != nil {
		return err
	}
	defer conn.Close()
	if s.Stdin != nil {
		go pumpStdin(conn, s.Stdin)
	}
	// done is closed once demux has returned, with its error in demuxErr.
	var demuxErr error
	done := make(chan struct{})
	go func() {
		defer close(done)
		demuxErr = demux(br, s.Stdout, s.Stderr)
	}()
	select {
	case <-done:
		return demuxErr
	case <-ctx.Done():
		// The client went away: closing conn ends demux with a read error
		// that only says so; wait for it so nothing writes to s afterwards.
		conn.Close()
		<-done
		return nil
	}
}

func openAttach(ctx context.Context, sock, id string, s Streams) (net.Conn, *bufio.Reader, error) {
	var conn net.Conn
	err := viaDirFD(sock, func(short string) (err error) {
		var d net.Dialer
		conn, err = d.DialContext(ctx, "unix", short)
		return err
	})
	if err != nil {
		return nil, nil, fmt.Errorf("%w: %v", ErrUnavailable, err)
	}
	req := Request{Op: OpAttach, ID: id, Attach: &AttachRequest{Stdin: s.Stdin != nil, Stdout: s.Stdout != nil, Stderr: s.Stderr != nil}}
	if err := json.NewEncoder(conn).Encode(req); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("monitor attach: send: %w", err)
	}
	br := bufio.NewReader(conn)
	line, err := br.ReadBytes('\n')
	if err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("monitor attach: read: %w", err)
	}
	var resp Response
	if err := json.Unmarshal(line, &resp); err != nil {
		conn.Close()
		return nil, nil, fmt.Errorf("monitor attach: parse: %w", err)
	}
	if resp.Error != "" {
		conn.Close()
		return nil, nil, fmt.Errorf("monitor attach: %s", resp.Error)
	}
	return conn, br, nil
}

// pumpStdin sends stdin in frames, then a close frame when it ends.
func pumpStdin(conn net.Conn, in io.Reader) {
	buf := make([]byte, 32<<10)
	for {
		n, err := in.Read(buf)
		if n > 0 && writeFrame(conn, frameStdin, buf[:n]) != nil {
			return
		}
		if err != nil {
			// Best effort: a failed write means the session is over anyway.
			_ = writeFrame(conn, frameStdinClose, nil)
			return
		}
	}
}

// demux writes output frames to the client until the monitor closes.
func demux(r io.Reader, stdout, stderr io.Writer) error {
	for {
		kind, data, err := readFrame(r)
		if err != nil {
			return nil // the session ended
		}
		w := stdout
		if kind == frameStderr {
			w = stderr
		}
		if w == nil {
			continue
		}
		if _, err := w.Write(data); err != nil {
			return fmt.Errorf("write attach output: %w", err)
		}
	}
}

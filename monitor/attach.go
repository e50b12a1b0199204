package monitor

import (
	"bufio"
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"io"
	"net"
)

// Attach sessions. After the OpAttach request line and a response line
// without error, both sides exchange frames on the connection: a kind byte,
// a big-endian uint32 length and that many bytes.
//
//	client -> monitor: frameStdin (data for the container's stdin),
//	                   frameStdinClose (the client's stdin ended)
//	monitor -> client: frameStdout, frameStderr (container output)
//
// The monitor (cmd/minicri-monitor/attach.c) ends the session (closes the
// connection) when the container has exited and its output is drained, or
// when the client detaches: on a stdin close for a container that is not
// stdin_once (or has a TTY), or by closing its end. Container output is
// fanned out to every session and to the log; a session that falls behind
// by MAX_ATTACH_QUEUE bytes is dropped rather than stalling the container
// or its log.
const (
	frameStdin byte = iota + 1
	frameStdinClose
	frameStdout
	frameStderr
)

// maxFrame bounds a frame's payload.
const maxFrame = 64 << 10

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

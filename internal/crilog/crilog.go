// Package crilog writes container output in the CRI log format the kubelet
// reads: "<RFC3339Nano timestamp> <stream> <P|F> <content>\n", where P marks
// a partial line (a line longer than MaxLineSize is split into P chunks,
// the last one F; output that ends without a newline ends with a P entry).
package crilog

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"os"
	"sync"
	"time"
)

// MaxLineSize is the longest content written in one log line (as the
// kubelet's and containerd's 16 KiB default).
const MaxLineSize = 16 * 1024

// Stream names.
const (
	Stdout = "stdout"
	Stderr = "stderr"
)

// File is one container log file shared by its streams. Reopen swaps the
// underlying file without losing a line: writers hold the lock per line.
type File struct {
	dir  string // the pod's log directory
	name string // the log's path below dir
	mu   sync.Mutex
	f    *os.File
	now  func() time.Time
}

// Open opens (creating) the log name, a path relative to the pod's log
// directory dir, for appending. The file is opened beneath dir without
// following any symbolic link (see openBeneath).
func Open(dir, name string) (*File, error) {
	f, err := openBeneath(dir, name)
	if err != nil {
		return nil, err
	}
	return &File{dir: dir, name: name, f: f, now: time.Now}, nil
}

// Reopen closes the current file and opens it anew (after the kubelet
// rotated it). On failure the old file stays in use and no new file is left.
func (l *File) Reopen() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	f, err := openBeneath(l.dir, l.name)
	if err != nil {
		return err
	}
	l.f.Close()
	l.f = f
	return nil
}

// Close closes the file.
func (l *File) Close() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.f.Close()
}

// writeLine writes one formatted entry.
func (l *File) writeLine(stream string, partial bool, content []byte) error {
	tag := "F"
	if partial {
		tag = "P"
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	buf := make([]byte, 0, len(content)+64)
	buf = l.now().UTC().AppendFormat(buf, time.RFC3339Nano)
	buf = append(buf, ' ')
	buf = append(buf, stream...)
	buf = append(buf, ' ')
	buf = append(buf, tag...)
	buf = append(buf, ' ')
	buf = append(buf, content...)
	buf = append(buf, '\n')
	_, err := l.f.Write(buf)
	return err
}

// Copy reads r until EOF and writes its lines to the log as stream. Lines
// longer than MaxLineSize become P chunks; a last line without a newline is
// written as P at EOF, as containerd does, so that the kubelet reads back
// exactly the bytes written (no "\n" added). "\r\n" ends a line like "\n".
// A write error is reported but reading goes on, so the container never
// blocks on a full or missing log.
func (l *File) Copy(stream string, r io.Reader, onErr func(error)) {
	br := bufio.NewReaderSize(r, MaxLineSize)
	write := func(partial bool, line []byte) {
		if werr := l.writeLine(stream, partial, line); werr != nil && onErr != nil {
			onErr(werr)
		}
	}
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil: // a whole line
			line = bytes.TrimSuffix(line[:len(line)-1], []byte("\r"))
			write(false, line)
			continue
		case errors.Is(err, bufio.ErrBufferFull): // the head of a longer line
			if len(line) > 1 && line[len(line)-1] == '\r' {
				// A "\r\n" may straddle the chunks: keep the "\r" for the next.
				_ = br.UnreadByte()
				line = line[:len(line)-1]
			}
			write(true, line)
			continue
		}
		if len(line) > 0 {
			write(true, line) // the output ended without a newline
		}
		if !errors.Is(err, io.EOF) && onErr != nil {
			onErr(err)
		}
		return
	}
}

package crilog

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// criLine is one parsed line of a CRI log file.
type criLine struct {
	stream  string
	partial bool
	content []byte // as the kubelet returns it: with the "\n" of an F line
}

// parseCRILog reads a CRI log the way the kubelet does
// (k8s.io/cri-client/pkg/logs: ReadLogs and parseCRILog): lines split at
// "\n", "<timestamp> <stream> <tag> <content>", the timestamp RFC 3339 with
// nanoseconds, stream stdout or stderr, the first ":"-separated tag P or
// F. An F line's content keeps its "\n", a P line's loses it, so the
// concatenated contents are the container's output. Unlike the kubelet,
// which logs and skips a malformed line, it fails: minicri must never write
// one.
func parseCRILog(data []byte) ([]criLine, error) {
	var out []criLine
	for len(data) > 0 {
		i := bytes.IndexByte(data, '\n')
		if i < 0 {
			return out, fmt.Errorf("incomplete last line %q", data)
		}
		line := data[:i+1]
		data = data[i+1:]
		ts, rest, ok := bytes.Cut(line, []byte(" "))
		if !ok {
			return out, fmt.Errorf("no timestamp in %q", line)
		}
		if _, err := time.Parse("2006-01-02T15:04:05.999999999Z07:00", string(ts)); err != nil {
			return out, fmt.Errorf("bad timestamp in %q: %w", line, err)
		}
		stream, rest, ok := bytes.Cut(rest, []byte(" "))
		if !ok || (string(stream) != Stdout && string(stream) != Stderr) {
			return out, fmt.Errorf("bad stream in %q", line)
		}
		tags, content, ok := bytes.Cut(rest, []byte(" "))
		if !ok {
			return out, fmt.Errorf("no tag in %q", line)
		}
		tag, _, _ := bytes.Cut(tags, []byte(":"))
		l := criLine{stream: string(stream), content: content}
		switch string(tag) {
		case "P":
			l.partial = true
			l.content = bytes.TrimSuffix(content, []byte("\n"))
		case "F":
		default:
			return out, fmt.Errorf("bad tag in %q", line)
		}
		out = append(out, l)
	}
	return out, nil
}

// chunkReader returns at most n bytes per Read, as a pipe does with a
// writer's separate writes.
type chunkReader struct {
	data []byte
	n    int
}

func (r *chunkReader) Read(p []byte) (int, error) {
	if len(r.data) == 0 {
		return 0, io.EOF
	}
	n := min(len(p), r.n, len(r.data))
	copy(p, r.data[:n])
	r.data = r.data[n:]
	return n, nil
}

// wantLogged is what the kubelet must read back for output written by a
// container: the output with "\r\n" line ends as "\n" (minicri, like
// containerd, drops the "\r"); an unterminated last line stays so (written
// as a P line, as containerd does).
func wantLogged(output []byte) []byte {
	return bytes.ReplaceAll(output, []byte("\r\n"), []byte("\n"))
}

// FuzzCopy: whatever a container writes, in whatever pieces, the log holds
// only well-formed CRI lines of its stream with at most MaxLineSize bytes
// of content, partial (P) lines only as the head of a line longer than
// MaxLineSize that the next line of the stream continues or as the end of
// output without a newline, and the kubelet reads back exactly what was
// written.
func FuzzCopy(f *testing.F) {
	f.Add([]byte("hello\n\nworld\nno newline"), uint16(0), uint16(4096))
	f.Add([]byte("windows\r\nline\rcarriage\r\n\r\n"), uint16(0), uint16(1))
	f.Add([]byte("x"), uint16(MaxLineSize-2), uint16(7))
	f.Add([]byte("y"), uint16(MaxLineSize), uint16(4096))
	f.Add([]byte("0123456789abcdef"), uint16(2*MaxLineSize/16), uint16(65535))
	f.Add([]byte("ab\n"), uint16(20000), uint16(3))
	f.Add([]byte("\x00\xff\xfe invalid utf-8 \x1b[31m\n"), uint16(0), uint16(2))
	f.Add([]byte("2016-10-06T00:17:09.669794202Z stdout P fake line\n"), uint16(0), uint16(100))
	f.Fuzz(func(t *testing.T, unit []byte, repeat uint16, chunk uint16) {
		// Repeating a small unit makes lines longer than MaxLineSize
		// (up to ~640 KiB) without huge inputs.
		output := bytes.Repeat(unit, int(repeat)%(40*MaxLineSize/max(len(unit), 1))+1)
		dir := t.TempDir()
		path := filepath.Join(dir, "0.log")
		l, err := Open(dir, "0.log")
		if err != nil {
			t.Fatal(err)
		}
		stream := Stdout
		if chunk%2 == 1 {
			stream = Stderr
		}
		var copyErr error
		l.Copy(stream, &chunkReader{data: output, n: int(chunk%8192) + 1}, func(err error) {
			copyErr = errors.Join(copyErr, err)
		})
		if err := l.Close(); err != nil {
			t.Fatal(err)
		}
		if copyErr != nil {
			t.Fatalf("Copy reported %v", copyErr)
		}
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		lines, err := parseCRILog(data)
		if err != nil {
			t.Fatalf("malformed log: %v", err)
		}
		var got []byte
		for i, ln := range lines {
			if ln.stream != stream {
				t.Fatalf("line %d: stream %s, want %s", i, ln.stream, stream)
			}
			if n := len(bytes.TrimSuffix(ln.content, []byte("\n"))); n > MaxLineSize {
				t.Fatalf("line %d: %d bytes of content, more than %d", i, n, MaxLineSize)
			}
			if ln.partial && i == len(lines)-1 && len(output) > 0 && output[len(output)-1] == '\n' {
				t.Fatalf("the last line is partial (P) though the output ends with a newline")
			}
			got = append(got, ln.content...)
		}
		if want := wantLogged(output); !bytes.Equal(got, want) {
			t.Fatalf("the kubelet reads back %d bytes that differ from the %d written (want %d)\n got %q\nwant %q",
				len(got), len(output), len(want), truncate(got), truncate(want))
		}
	})
}

func truncate(b []byte) []byte {
	if len(b) > 200 {
		return append(b[:200:200], "..."...)
	}
	return b
}

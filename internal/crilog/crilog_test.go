package crilog

import (
	"bytes"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"
)

var lineRE = regexp.MustCompile(`^(\S+) (stdout|stderr) ([PF]) (.*)$`)

func parse(t *testing.T, path string) (streams, tags []string, contents []string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(strings.TrimSuffix(string(data), "\n"), "\n") {
		m := lineRE.FindStringSubmatch(l)
		if m == nil {
			t.Fatalf("bad log line %q", l)
		}
		if _, err := time.Parse(time.RFC3339Nano, m[1]); err != nil {
			t.Fatalf("bad timestamp in %q: %v", l, err)
		}
		streams, tags, contents = append(streams, m[2]), append(tags, m[3]), append(contents, m[4])
	}
	return
}

func TestCopyFormatsLines(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	l, err := Open(filepath.Dir(p), filepath.Base(p))
	if err != nil {
		t.Fatal(err)
	}
	l.Copy(Stdout, strings.NewReader("hello\n\nworld\nno newline"), nil)
	l.Close()
	streams, tags, contents := parse(t, p)
	want := []string{"hello", "", "world", "no newline"}
	if strings.Join(contents, "|") != strings.Join(want, "|") {
		t.Fatalf("contents %q", contents)
	}
	for i := range tags {
		wantTag := "F"
		if i == len(tags)-1 {
			wantTag = "P" // no newline at the end: TestUnterminatedLastLineIsPartial
		}
		if tags[i] != wantTag || streams[i] != "stdout" {
			t.Fatalf("line %d: %s %s", i, streams[i], tags[i])
		}
	}
}

func TestLongLineIsSplitIntoPartials(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	l, _ := Open(filepath.Dir(p), filepath.Base(p))
	long := strings.Repeat("x", 100*1024)
	l.Copy(Stderr, strings.NewReader(long+"\nafter\n"), nil)
	l.Close()
	_, tags, contents := parse(t, p)
	var joined strings.Builder
	for i, c := range contents[:len(contents)-1] {
		joined.WriteString(c)
		if len(c) > MaxLineSize {
			t.Fatalf("chunk %d is %d bytes", i, len(c))
		}
		wantTag := "P"
		if i == len(contents)-2 {
			wantTag = "F"
		}
		if tags[i] != wantTag {
			t.Fatalf("chunk %d tag %s, want %s", i, tags[i], wantTag)
		}
	}
	if joined.String() != long || contents[len(contents)-1] != "after" {
		t.Fatal("long line not reassembled exactly")
	}
}

func TestReopenLosesNothing(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "0.log")
	l, _ := Open(filepath.Dir(p), filepath.Base(p))
	pr, pw := io.Pipe()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { defer wg.Done(); l.Copy(Stdout, pr, nil) }()
	const n = 20000
	go func() {
		var b bytes.Buffer
		for i := 0; i < n; i++ {
			b.Reset()
			b.WriteString("line ")
			b.WriteString(strings.Repeat("y", i%50))
			b.WriteByte('\n')
			pw.Write(b.Bytes())
			if i == n/2 {
				os.Rename(p, p+".1")               // the kubelet rotates...
				if err := l.Reopen(); err != nil { // ...then asks for a reopen
					t.Error(err)
				}
			}
		}
		pw.Close()
	}()
	wg.Wait()
	l.Close()
	_, _, a := parse(t, p+".1")
	_, _, b := parse(t, p)
	if len(a)+len(b) != n {
		t.Fatalf("got %d+%d lines, want %d", len(a), len(b), n)
	}
	all := append(a, b...)
	for i, c := range all {
		if c != "line "+strings.Repeat("y", i%50) {
			t.Fatalf("line %d out of order or damaged: %q", i, c)
		}
	}
}

func TestReopenFailureKeepsOldFile(t *testing.T) {
	dir := t.TempDir()
	p := filepath.Join(dir, "sub", "0.log")
	l, err := Open(filepath.Dir(p), filepath.Base(p))
	if err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, "sub"))
	os.WriteFile(filepath.Join(dir, "sub"), []byte("a file, not a dir"), 0o644)
	if err := l.Reopen(); err == nil {
		t.Fatal("reopen into an impossible path must fail")
	}
	if err := l.writeLine(Stdout, false, []byte("still works")); err != nil {
		t.Fatalf("old file unusable after failed reopen: %v", err)
	}
}

// TestUnterminatedLastLineIsPartial: output that ends without a newline ends with a P
// entry, as containerd writes it, so that the kubelet reads back exactly the bytes written
// (the conformance spec "should report termination message from log output if
// TerminationMessagePolicy FallbackToLogsOnError is set" runs `echo -n DONE; false` and
// wants the message "DONE", not "DONE\n").
func TestUnterminatedLastLineIsPartial(t *testing.T) {
	p := filepath.Join(t.TempDir(), "0.log")
	l, err := Open(filepath.Dir(p), filepath.Base(p))
	if err != nil {
		t.Fatal(err)
	}
	l.Copy(Stdout, strings.NewReader("first\nDONE"), nil)
	l.Close()
	data, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	lines, err := parseCRILog(data)
	if err != nil {
		t.Fatal(err)
	}
	var got []byte
	for _, ln := range lines {
		got = append(got, ln.content...)
	}
	if string(got) != "first\nDONE" {
		t.Fatalf("the kubelet reads back %q, want %q (log %q)", got, "first\nDONE", data)
	}
	if n := len(lines); n != 2 || lines[0].partial || !lines[1].partial {
		t.Fatalf("entries %+v: want F \"first\" then P \"DONE\"", lines)
	}
}

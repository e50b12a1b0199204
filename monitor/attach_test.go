package monitor

import (
	"bytes"
	"io"
	"net"
	"strings"
	"testing"
)

func TestFramesRoundTrip(t *testing.T) {
	var buf bytes.Buffer
	writeFrame(&buf, frameStdout, []byte("out"))
	writeFrame(&buf, frameStdinClose, nil)
	writeFrame(&buf, frameStderr, []byte("err"))
	var got []string
	for {
		kind, data, err := readFrame(&buf)
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, string(rune('0'+kind))+string(data))
	}
	if strings.Join(got, ",") != "3out,2,4err" {
		t.Fatalf("frames: %v", got)
	}
	big := make([]byte, 5)
	big[1] = 0xff
	if _, _, err := readFrame(bytes.NewReader(big)); err == nil {
		t.Fatal("an oversized frame must be refused")
	}
}

func TestDemuxAndPumpStdin(t *testing.T) {
	a, b := net.Pipe()
	go func() {
		writeFrame(a, frameStdout, []byte("o1"))
		writeFrame(a, frameStderr, []byte("e1"))
		a.Close()
	}()
	var out, errOut bytes.Buffer
	if err := demux(b, &out, &errOut); err != nil || out.String() != "o1" || errOut.String() != "e1" {
		t.Fatalf("demux: %v %q %q", err, out.String(), errOut.String())
	}

	c, d := net.Pipe()
	go pumpStdin(c, strings.NewReader("hello"))
	kind, data, err := readFrame(d)
	if err != nil || kind != frameStdin || string(data) != "hello" {
		t.Fatalf("stdin frame: %v %d %q", err, kind, data)
	}
	if kind, _, err := readFrame(d); err != nil || kind != frameStdinClose {
		t.Fatalf("want a stdin close frame, got %d %v", kind, err)
	}
}

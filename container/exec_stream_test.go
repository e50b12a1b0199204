package container

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestHasEnv(t *testing.T) {
	env := []string{"PATH=/bin", "TERMINAL=x"}
	if hasEnv(env, "TERM") || !hasEnv(env, "PATH") {
		t.Fatal("hasEnv matches whole keys only")
	}
}

// recvPollable returns a descriptor whose pending read a Close interrupts.
func TestRecvPollableIsInterruptible(t *testing.T) {
	parent, child, err := socketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	defer child.Close()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	if err := unix.Sendmsg(int(child.Fd()), []byte("pipe"), unix.UnixRights(int(r.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	r.Close()
	got, err := recvPollable(parent)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := io.ReadAll(got)
		done <- err
	}()
	got.Close()
	if err := <-done; err == nil {
		t.Fatal("a read on a closed descriptor must fail")
	}
}

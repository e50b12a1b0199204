package console

import (
	"io"
	"os"
	"testing"

	"golang.org/x/sys/unix"
)

func TestSendAndReceiveADescriptor(t *testing.T) {
	parent, child, err := SocketPair()
	if err != nil {
		t.Fatal(err)
	}
	defer parent.Close()
	defer child.Close()
	r, w, _ := os.Pipe()
	defer r.Close()
	defer w.Close()
	if err := unix.Sendmsg(int(child.Fd()), []byte("/dev/pts/9"), unix.UnixRights(int(w.Fd())), nil, 0); err != nil {
		t.Fatal(err)
	}
	got, err := RecvFile(parent, true)
	if err != nil {
		t.Fatal(err)
	}
	defer got.Close()
	if got.Name() != "/dev/pts/9" {
		t.Fatalf("name %q", got.Name())
	}
	if _, err := got.Write([]byte("x")); err != nil {
		t.Fatal(err)
	}
	b := make([]byte, 1)
	if _, err := r.Read(b); err != nil || b[0] != 'x' {
		t.Fatalf("the received descriptor is not the sent pipe: %q %v", b, err)
	}
}

// A non-blocking RecvFile returns a descriptor whose pending read a Close interrupts.
func TestNonblockingRecvFileIsInterruptible(t *testing.T) {
	parent, child, err := SocketPair()
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
	got, err := RecvFile(parent, true)
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

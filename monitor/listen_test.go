package monitor

import (
	"os"
	"path/filepath"
	"testing"

	"golang.org/x/sys/unix"
)

// With a permissive inherited umask, the monitor's socket must still be
// reachable by root alone: connecting to it creates and kills containers.
func TestListenSocketIsPrivateWhateverTheUmask(t *testing.T) {
	old := unix.Umask(0)
	defer unix.Umask(old)
	sock := filepath.Join(t.TempDir(), "monitor.sock")
	ln, err := listen(sock)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	fi, err := os.Stat(sock)
	if err != nil {
		t.Fatal(err)
	}
	if perm := fi.Mode().Perm(); perm != 0o600 {
		t.Fatalf("socket mode %o, want 600", perm)
	}
	if got := unix.Umask(0); got != 0 {
		t.Fatalf("umask left at %o", got)
	}
}

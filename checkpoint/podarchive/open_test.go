package podarchive

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadManifestFileTypes(t *testing.T) {
	fifo, link, big := t.TempDir(), t.TempDir(), t.TempDir()
	if err := unix.Mkfifo(filepath.Join(fifo, ManifestName), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/hostname", filepath.Join(link, ManifestName)); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(big, ManifestName), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(filepath.Join(big, ManifestName), maxManifest+1); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{fifo, link, "/nonexistent", "/etc/hostname", big} {
		_, err := readManifest(dir)
		if !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want ErrInvalid", dir, err)
		}
		if dir != big && !strings.Contains(err.Error(), "holds no pod checkpoint") {
			t.Errorf("%s: %v, want the one message", dir, err)
		}
	}
}

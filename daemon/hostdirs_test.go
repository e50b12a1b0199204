package daemon

import (
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"

	"github.com/minicri/minicri/config"
)

// An operator moved the root and state dirs to another disk and left links
// at the configured paths: minicri starts, on the real directories.
func TestHostDirsFollowTheOperatorsLinks(t *testing.T) {
	base := t.TempDir()
	os.Chmod(base, 0o711)
	disk := filepath.Join(base, "disk")
	for _, d := range []string{"root", "state"} {
		if err := os.MkdirAll(filepath.Join(disk, d), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(filepath.Join(disk, d), filepath.Join(base, d)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := config.Config{Root: filepath.Join(base, "root"), State: filepath.Join(base, "state")}
	got, err := hostDirs(cfg, slog.New(slog.NewTextHandler(io.Discard, nil)))
	if err != nil {
		t.Fatal(err)
	}
	if got.Root != filepath.Join(disk, "root") || got.State != filepath.Join(disk, "state") {
		t.Fatalf("root %s, state %s", got.Root, got.State)
	}
	for d, want := range map[string]os.FileMode{got.Root: 0o700, got.State: 0o711} {
		if st, err := os.Lstat(d); err != nil || st.Mode().Perm() != want {
			t.Errorf("%s: %v %v", d, st.Mode(), err)
		}
	}
}

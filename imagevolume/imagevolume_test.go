package imagevolume

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/minicri/minicri/internal/errdefs"
)

func TestResolveSubPathStaysInRoot(t *testing.T) {
	root := t.TempDir()
	if err := os.MkdirAll(filepath.Join(root, "etc", "ssl"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/ssl", filepath.Join(root, "certs")); err != nil {
		t.Fatal(err)
	}
	got, err := resolveSubPath(root, "certs")
	if err != nil {
		t.Fatal(err)
	}
	if want := filepath.Join(root, "etc", "ssl"); got != want {
		t.Fatalf("certs -> %s, want %s (inside the root)", got, want)
	}
	if _, err := resolveSubPath(root, "missing"); !errors.Is(err, errdefs.ErrInvalid) {
		t.Fatalf("missing sub path: %v, want errdefs.ErrInvalid", err)
	}
	if got, _ := resolveSubPath(root, ""); got != root {
		t.Fatalf("empty sub path -> %s", got)
	}
}

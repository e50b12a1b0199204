package daemon

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWarnUntraversable(t *testing.T) {
	top := t.TempDir()
	closed := filepath.Join(top, "closed")
	inner := filepath.Join(closed, "state")
	os.MkdirAll(inner, 0o711)
	os.Chmod(top, 0o711)
	os.Chmod(closed, 0o700)
	var buf bytes.Buffer
	warnUntraversable(slog.New(slog.NewTextHandler(&buf, nil)), inner)
	out := buf.String()
	if !strings.Contains(out, "dir="+closed+" ") {
		t.Fatalf("no warning for %s:\n%s", closed, out)
	}
	for _, open := range []string{inner, top} {
		if strings.Contains(out, "dir="+open+" ") {
			t.Fatalf("a searchable dir %s was reported:\n%s", open, out)
		}
	}
}

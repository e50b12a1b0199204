package hostdir

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
)

func mode(t *testing.T, p string) os.FileMode {
	t.Helper()
	st, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return st.Mode().Perm()
}

func TestEnsureCreatesAndTightens(t *testing.T) {
	old := syscall.Umask(0o022)
	defer syscall.Umask(old)
	base := t.TempDir()
	fresh := filepath.Join(base, "a", "root")
	if err := Ensure(fresh, Private); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, fresh); m != Private {
		t.Fatalf("new dir: %v", m)
	}
	if m := mode(t, filepath.Dir(fresh)); m&0o001 == 0 {
		t.Fatalf("parent not searchable: %v", m)
	}
	existing := filepath.Join(base, "old")
	os.Mkdir(existing, 0o755)
	if err := Ensure(existing, Private); err != nil {
		t.Fatal(err)
	}
	if m := mode(t, existing); m != Private {
		t.Fatalf("existing dir left %v", m)
	}
	os.WriteFile(filepath.Join(base, "file"), nil, 0o644)
	if err := Ensure(filepath.Join(base, "file"), Private); err == nil {
		t.Fatal("a file passed for a directory")
	}
}

func TestTightenChangesEachSubdirectory(t *testing.T) {
	dir := t.TempDir()
	for _, n := range []string{"a", "b"} {
		os.Mkdir(filepath.Join(dir, n), 0o711)
		os.Chmod(filepath.Join(dir, n), 0o711)
	}
	os.WriteFile(filepath.Join(dir, "f"), nil, 0o644)
	if err := Tighten(dir, Private); err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"a", "b"} {
		if m := mode(t, filepath.Join(dir, n)); m != Private {
			t.Fatalf("%s: %v", n, m)
		}
	}
	if m := mode(t, filepath.Join(dir, "f")); m != 0o644 {
		t.Fatalf("a file was changed: %v", m)
	}
	if err := Tighten(filepath.Join(dir, "missing"), Private); err != nil {
		t.Fatal(err)
	}
}

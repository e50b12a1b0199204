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

func TestTightenGivesBackToRoot(t *testing.T) {
	dir := t.TempDir()
	sub := filepath.Join(dir, "ctr")
	os.Mkdir(sub, Private)
	if err := OpenToGroup(sub, 1_200_000); err != nil {
		t.Fatal(err)
	}
	st, _ := os.Stat(sub)
	if st.Mode().Perm() != GroupTraversable || st.Sys().(*syscall.Stat_t).Gid != 1_200_000 {
		t.Fatalf("opened: %v gid %d", st.Mode(), st.Sys().(*syscall.Stat_t).Gid)
	}
	if err := Tighten(dir, Private); err != nil {
		t.Fatal(err)
	}
	st, _ = os.Stat(sub)
	if st.Mode().Perm() != Private || st.Sys().(*syscall.Stat_t).Gid != 0 || st.Sys().(*syscall.Stat_t).Uid != 0 {
		t.Fatalf("tightened: %v uid %d gid %d", st.Mode(), st.Sys().(*syscall.Stat_t).Uid, st.Sys().(*syscall.Stat_t).Gid)
	}
}

// An operator's link (a state dir moved to another disk) is resolved once;
// a link to nothing fails clearly.
func TestResolveFollowsTheOperatorsLink(t *testing.T) {
	base := t.TempDir()
	real := filepath.Join(base, "disk", "minicri")
	os.MkdirAll(real, 0o700)
	link := filepath.Join(base, "varlib")
	os.Symlink(real, link)
	got, err := Resolve(link, Private)
	if err != nil || got != real {
		t.Fatalf("Resolve(link) = %q, %v; want %q", got, err, real)
	}
	if err := Ensure(got, Private); err != nil {
		t.Fatal(err)
	}
	fresh := filepath.Join(base, "new", "state")
	if got, err := Resolve(fresh, Traversable); err != nil || got != fresh || mode(t, fresh) != Traversable {
		t.Fatalf("Resolve(missing) = %q, %v", got, err)
	}
	os.Symlink(filepath.Join(base, "nowhere"), filepath.Join(base, "dangling"))
	if _, err := Resolve(filepath.Join(base, "dangling"), Private); err == nil {
		t.Fatal("a dangling link resolved")
	}
	if _, err := Resolve("relative", Private); err == nil {
		t.Fatal("a relative path resolved")
	}
}

package podarchive

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

func TestReadRefusesBadManifests(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.tar"), []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "link.tar")); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, manifest string
		want           error
	}{
		{"other format", `{"minicriPodCheckpointFormat":2,"runtime":"minicri","containers":[{"name":"a","archive":"a.tar"}]}`, ErrFailedPrecondition},
		{"other runtime", `{"minicriPodCheckpointFormat":1,"runtime":"cri-o","containers":[{"name":"a","archive":"a.tar"}]}`, ErrFailedPrecondition},
		{"escaping archive", `{"minicriPodCheckpointFormat":1,"runtime":"minicri","containers":[{"name":"a","archive":"../a.tar"}]}`, ErrInvalid},
		{"absolute archive", `{"minicriPodCheckpointFormat":1,"runtime":"minicri","containers":[{"name":"a","archive":"/etc/passwd"}]}`, ErrInvalid},
		{"symlinked archive", `{"minicriPodCheckpointFormat":1,"runtime":"minicri","containers":[{"name":"a","archive":"link.tar"}]}`, ErrInvalid},
		{"no container", `{"minicriPodCheckpointFormat":1,"runtime":"minicri","containers":[]}`, ErrInvalid},
		{"not json", `{`, ErrInvalid},
	} {
		if err := os.WriteFile(filepath.Join(dir, ManifestName), []byte(c.manifest), 0o600); err != nil {
			t.Fatal(err)
		}
		if _, err := Read(dir); !errors.Is(err, c.want) {
			t.Errorf("%s: %v, want %v", c.name, err, c.want)
		}
	}
	if err := Write(dir, Manifest{Containers: []Container{{Name: "a", Archive: "a.tar"}}}); err != nil {
		t.Fatal(err)
	}
	m, err := Read(dir)
	if err != nil || m.Archive(dir, "a") != filepath.Join(dir, "a.tar") || m.Archive(dir, "b") != "" {
		t.Errorf("round trip: %+v %v", m, err)
	}
	if _, err := Read("relative"); !errors.Is(err, ErrInvalid) {
		t.Errorf("relative path: %v", err)
	}
}

func TestCheckOutput(t *testing.T) {
	empty := t.TempDir()
	if err := CheckOutput(empty); err != nil {
		t.Errorf("empty dir: %v", err)
	}
	full := t.TempDir()
	os.WriteFile(filepath.Join(full, "x"), nil, 0o600)
	link := filepath.Join(t.TempDir(), "link")
	os.Symlink(empty, link)
	for _, d := range []string{full, link, "rel", filepath.Join(empty, "missing")} {
		if err := CheckOutput(d); !errors.Is(err, ErrInvalid) {
			t.Errorf("CheckOutput(%s): %v", d, err)
		}
	}
}

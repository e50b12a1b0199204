package lazy

import (
	"archive/tar"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
)

// hostileLayers are layers whose entry names (or link targets) a full
// pull's unpacker refuses or would place elsewhere: `..` components,
// absolute names, `.` and empty components, whiteouts that name nothing (or
// `.`, `..`), a root entry that is not a directory, hard links whose
// target climbs out. Each is a layer of a well-formed TOC, its digest the
// one the (hostile) manifest would name.
func hostileLayers() map[string][]tarEntry {
	ok := fileEntry("etc/ok", 0o644, []byte("ok\n"))
	return map[string][]tarEntry{
		"dotdot":                    {ok, fileEntry("../escape", 0o644, []byte("x"))},
		"dotdot inside":             {ok, fileEntry("etc/../../escape", 0o644, []byte("x"))},
		"dotdot dir":                {ok, dirEntry("../up/", 0o755, 0), fileEntry("../up/f", 0o644, []byte("x"))},
		"dotdot collapses":          {ok, fileEntry("etc/../etc/ok", 0o600, []byte("shadowed"))},
		"absolute":                  {ok, fileEntry("/etc/abs", 0o644, []byte("x"))},
		"dot component":             {ok, fileEntry("etc/./dot", 0o644, []byte("x"))},
		"empty component":           {ok, fileEntry("etc//empty", 0o644, []byte("x"))},
		"root as file":              {ok, fileEntry(".", 0o644, []byte("x"))},
		"root as symlink":           {ok, linkEntry(tar.TypeSymlink, "./", "/etc")},
		"whiteout empty":            {ok, fileEntry("etc/.wh.", 0o644, nil)},
		"whiteout dot":              {ok, fileEntry("etc/.wh..", 0o644, nil)},
		"whiteout dotdot":           {ok, fileEntry("etc/.wh...", 0o644, nil)},
		"hardlink dotdot":           {ok, linkEntry(tar.TypeLink, "etc/hl", "../../etc/ok")},
		"hardlink absolute":         {ok, linkEntry(tar.TypeLink, "etc/hl", "/etc/ok")},
		"hardlink to root":          {ok, linkEntry(tar.TypeLink, "etc/hl", ".")},
		"hardlink dotdot to itself": {ok, linkEntry(tar.TypeLink, "etc/hl", "etc/../etc/hl")},
		"hardlink to a dir":         {ok, dirEntry("d/", 0o755, 0), linkEntry(tar.TypeLink, "etc/hl", "d")},
	}
}

// TestHostileNamesRefused: a layer with any such name is refused at Open
// with ErrBadName, naming the entry (so the pull takes it whole, where the
// unpacker decides); nothing is written outside the cache directory.
func TestHostileNamesRefused(t *testing.T) {
	for name, entries := range hostileLayers() {
		t.Run(name, func(t *testing.T) {
			blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed, estargz.WithPrioritizedFiles(nil))
			r := newRegistry(t, blob)
			dir := t.TempDir()
			l, err := Open(context.Background(), r.blobReader(), Options{Dir: filepath.Join(dir, "cache"), TOCDigest: toc})
			if err == nil {
				defer l.Close()
				t.Fatalf("opened; tree: %v", treeNames(t, l))
			}
			if !errors.Is(err, ErrBadName) {
				t.Fatalf("Open: %v, want ErrBadName", err)
			}
			t.Logf("refused: %v", err)
		})
	}
}

// TestCanonicalNamesAccepted: what tar writers do put in layers is kept:
// a leading "./", a trailing "/", the root itself as "./" (a directory),
// symlinks to anywhere (resolved by the kernel inside the container's
// root, as a full pull keeps them), `..` inside a symlink's target.
func TestCanonicalNamesAccepted(t *testing.T) {
	entries := []tarEntry{
		dirEntry("./", 0o755, 0), dirEntry("./etc/", 0o755, 0),
		fileEntry("./etc/ok", 0o644, []byte("ok\n")),
		linkEntry(tar.TypeSymlink, "./etc/up", "../../../../etc/shadow"),
		linkEntry(tar.TypeSymlink, "etc/abs", "/etc/ok"),
		linkEntry(tar.TypeLink, "./etc/hl", "./etc/ok"),
		fileEntry("etc/.wh.gone", 0o644, nil),
		fileEntry("etc/..dots..", 0o644, []byte("a name, not a component\n")),
	}
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed, estargz.WithPrioritizedFiles(nil))
	m := mountFixture(t, newRegistry(t, blob), toc, Options{})
	for name, want := range map[string]string{"etc/up": "../../../../etc/shadow", "etc/abs": "/etc/ok"} {
		if got, err := os.Readlink(filepath.Join(m.Mountpoint, name)); err != nil || got != want {
			t.Errorf("readlink %s: %q, %v; want %q", name, got, err, want)
		}
	}
	for _, name := range []string{"etc/ok", "etc/hl", "etc/..dots.."} {
		if _, err := os.ReadFile(filepath.Join(m.Mountpoint, name)); err != nil {
			t.Errorf("read %s: %v", name, err)
		}
	}
	if st, err := os.Lstat(filepath.Join(m.Mountpoint, "etc/gone")); err != nil || st.Mode()&os.ModeCharDevice == 0 {
		t.Errorf("whiteout etc/gone: %v, %v", st, err)
	}
}

// TestCheckNamesByHand: what estargz.Build never writes but a TOC written
// by hand may hold is refused too.
func TestCheckNamesByHand(t *testing.T) {
	for name, entries := range map[string][]rawEntry{
		"twice":      {{Name: "etc/ok", Type: "reg"}, {Name: "./etc/ok", Type: "reg"}},
		"empty name": {{Name: "", Type: "reg"}},
		"nul":        {{Name: "etc/a\x00b", Type: "reg"}},
		"no target":  {{Name: "etc/hl", Type: "hardlink"}},
	} {
		if err := checkNames(entries); !errors.Is(err, ErrBadName) {
			t.Errorf("%s: %v, want ErrBadName", name, err)
		}
	}
	ok := []rawEntry{{Name: "./", Type: "dir"}, {Name: "etc/", Type: "dir"}, {Name: "etc/a", Type: "reg"},
		{Type: "chunk"}, {Name: "etc/b", Type: "hardlink", LinkName: "./etc/a"}, {Name: "etc/.wh..wh..opq", Type: "reg"}}
	if err := checkNames(ok); err != nil {
		t.Errorf("canonical names: %v", err)
	}
}

// treeNames lists the opened layer's tree as the mount would show it.
func treeNames(t *testing.T, l *Layer) []string {
	t.Helper()
	needFUSE(t)
	mnt := t.TempDir()
	m, err := Mount(mnt, l, false)
	if err != nil {
		return []string{"mount: " + err.Error()}
	}
	defer func() { _ = m.Unmount() }()
	var names []string
	err = filepath.WalkDir(mnt, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			names = append(names, p+": "+err.Error())
			return nil
		}
		rel, _ := filepath.Rel(mnt, p)
		names = append(names, rel+" "+d.Type().String())
		return nil
	})
	if err != nil {
		names = append(names, err.Error())
	}
	ents, _ := os.ReadDir(filepath.Join(mnt, "etc"))
	for _, e := range ents {
		names = append(names, fmt.Sprintf("etc/ readdir: %q", e.Name()))
	}
	return names
}

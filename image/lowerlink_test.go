package image

import (
	"archive/tar"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// buildImage builds an image of layers and pushes it as ref.
func buildImage(t *testing.T, srv *fixture.Server, ref string, layers ...*fixture.Layer) {
	t.Helper()
	img, err := fixture.Build(fixture.ImageSpec{Config: v1.Config{Cmd: []string{"/bin/tool"}}, Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, ref, img)
}

// mergedLookup returns the path of name in the image's merged view: the
// topmost layer holding it (the tests' layers have no whiteouts on the way).
func mergedLookup(img Image, name string) string {
	for i := len(img.Layers) - 1; i >= 0; i-- {
		p := filepath.Join(img.Layers[i], name)
		if exists(p) {
			return p
		}
	}
	return ""
}

func inode(t *testing.T, p string) uint64 {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	return st.Ino
}

// A layer whose only entry is a hard link to a file of a lower layer (valid
// per the OCI image spec) unpacks: the link and its target read as the
// lower file, and they are one file, as after ln(1) in a container.
func TestPullHardlinkToLowerLayer(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	base := baseLayer(t, "one")
	hl := mustLayer(t, []fixture.File{{Name: "bin/tool-again", Type: tar.TypeLink, Linkname: "bin/tool", Mode: 0o755}}, fixture.Gzip)
	buildImage(t, srv, "hl/app:1", base, hl)
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), srv.Host+"/hl/app:1", nil)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	p := mergedLookup(img, "bin/tool-again")
	if p == "" || !strings.HasPrefix(p, img.Layers[1]) {
		t.Fatalf("bin/tool-again not in the top layer: %q", p)
	}
	if got := readFile(t, p); got != "#!/bin/sh\necho one\n" {
		t.Fatalf("bin/tool-again holds %q", got)
	}
	fi, err := os.Lstat(p)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o755 || !fi.Mode().IsRegular() {
		t.Fatalf("bin/tool-again mode %v", fi.Mode())
	}
	if inode(t, p) != inode(t, filepath.Join(img.Layers[1], "bin/tool")) {
		t.Fatal("bin/tool-again and the top layer's bin/tool are not one file")
	}
}

// The directories a copy of a lower file needs in the upper layer take the
// lower directories' owner and mode (a 0700 directory stays 0700 in the
// merged view), and the copy keeps the file's owner, mode and xattrs.
func TestPullHardlinkToLowerKeepsAttributes(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	base := mustLayer(t, []fixture.File{
		{Name: "secret/", Mode: 0o700, UID: 5, GID: 6},
		{Name: "secret/key", Mode: 0o4750, UID: 7, GID: 8, Body: []byte("k"), Xattrs: map[string]string{"user.tag": "v"}},
		{Name: "pub/", Mode: 0o711, UID: 9},
	}, fixture.Gzip)
	// A tar writer gives a hard link its file's owner and mode (the
	// unpacker applies them to the file).
	hl := mustLayer(t, []fixture.File{{Name: "pub/key-again", Type: tar.TypeLink, Linkname: "/secret/key", Mode: 0o4750, UID: 7, GID: 8}}, fixture.Gzip)
	buildImage(t, srv, "hl/attr:1", base, hl)
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), srv.Host+"/hl/attr:1", nil)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	top := img.Layers[1]
	for _, c := range []struct {
		name       string
		mode       os.FileMode
		uid, gid   uint32
		xattrValue string
	}{
		{"secret", os.ModeDir | 0o700, 5, 6, ""},
		{"pub", os.ModeDir | 0o711, 9, 0, ""},
		{"secret/key", os.ModeSetuid | 0o750, 7, 8, "v"},
		{"pub/key-again", os.ModeSetuid | 0o750, 7, 8, "v"},
	} {
		p := filepath.Join(top, c.name)
		fi, err := os.Lstat(p)
		if err != nil {
			t.Fatal(err)
		}
		st := fi.Sys().(*syscall.Stat_t)
		if fi.Mode() != c.mode || st.Uid != c.uid || st.Gid != c.gid {
			t.Errorf("%s: mode %v uid %d gid %d, want %v %d %d", c.name, fi.Mode(), st.Uid, st.Gid, c.mode, c.uid, c.gid)
		}
		if c.xattrValue != "" {
			buf := make([]byte, 16)
			n, err := syscall.Getxattr(p, "user.tag", buf)
			if err != nil || string(buf[:n]) != c.xattrValue {
				t.Errorf("%s: user.tag %q, %v", c.name, buf[:max(n, 0)], err)
			}
		}
	}
}

// A hard-link layer's directory depends on the layers below it: two images
// that share the layer over different bases each see their own base's file
// (one image's base never leaks into another's through the shared layer).
func TestPullHardlinkLayerSharedOverDifferentBases(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	hl := mustLayer(t, []fixture.File{{Name: "bin/tool-again", Type: tar.TypeLink, Linkname: "bin/tool", Mode: 0o755}}, fixture.Gzip)
	buildImage(t, srv, "hl/a:1", baseLayer(t, "attacker"), hl)
	buildImage(t, srv, "hl/b:1", baseLayer(t, "victim"), hl)
	s := newStore(t, "", "")
	a, err := s.Pull(ctxT(t), srv.Host+"/hl/a:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Pull(ctxT(t), srv.Host+"/hl/b:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.Layers[1] == b.Layers[1] {
		t.Fatal("the hard-link layer has one directory for two different bases")
	}
	for _, c := range []struct {
		img  Image
		want string
	}{{a, "attacker"}, {b, "victim"}} {
		for _, n := range []string{"bin/tool-again", "bin/tool"} {
			if got := readFile(t, mergedLookup(c.img, n)); got != "#!/bin/sh\necho "+c.want+"\n" {
				t.Errorf("%s in the %s image holds %q", n, c.want, got)
			}
		}
	}
	// GC keeps both while both images exist, and removes one's with it.
	if err := s.GC(); err != nil {
		t.Fatal(err)
	}
	if !exists(a.Layers[1]) || !exists(b.Layers[1]) {
		t.Fatal("GC removed a hard-link layer in use")
	}
	if err := s.Remove(a.ID); err != nil {
		t.Fatal(err)
	}
	if exists(a.Layers[1]) || !exists(b.Layers[1]) {
		t.Fatalf("after removing image a: a's layer exists %v, b's %v", exists(a.Layers[1]), exists(b.Layers[1]))
	}
	// The store reloads the record with the layer's directory.
	s2 := newStore(t, s.cfg.Root, s.cfg.RegistryConfigPath)
	got, err := s2.Status(b.ID)
	if err != nil {
		t.Fatal(err)
	}
	if got.Layers[1] != b.Layers[1] {
		t.Fatalf("reloaded layer dir %q, want %q", got.Layers[1], b.Layers[1])
	}
}

// Hard links the layers below do not hold as a file (in the merged view)
// fail the pull, and nothing outside the store is linked or copied: the
// target is resolved in the lower layers only, through real directories.
func TestPullHardlinkToLowerRefused(t *testing.T) {
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("secret"), 0o600); err != nil {
		t.Fatal(err)
	}
	rel := strings.Repeat("../", 16) + strings.TrimPrefix(victim, "/")
	link := func(target string) fixture.File {
		return fixture.File{Name: "hl", Type: tar.TypeLink, Linkname: target}
	}
	cases := map[string][][]fixture.File{
		"missing":  {{link("etc/nothing")}},
		"dotdot":   {{link(rel)}},
		"absolute": {{link(victim)}},
		// A symlink in a lower layer on the way to the target.
		"symlinked parent abs":  {{{Name: "ld", Type: tar.TypeSymlink, Linkname: outside}}, {link("ld/victim")}},
		"symlinked parent rel":  {{{Name: "ld", Type: tar.TypeSymlink, Linkname: strings.Repeat("../", 16) + strings.TrimPrefix(outside, "/")}}, {link("ld/victim")}},
		"symlink in this layer": {{{Name: "ld", Type: tar.TypeSymlink, Linkname: outside}, link("ld/victim")}},
		"directory":             {{link("etc")}},
		// A middle layer deletes the target, or its directory, or hides it.
		"whited out":        {{{Name: "etc/"}, {Name: "etc/.wh.base"}}, {link("etc/base")}},
		"dir whited out":    {{{Name: ".wh.etc"}}, {link("etc/base")}},
		"opaque dir":        {{{Name: "etc/"}, {Name: "etc/.wh..wh..opq"}}, {link("etc/base")}},
		"deleted here":      {{{Name: "etc/"}, {Name: "etc/.wh.base"}, link("etc/base")}},
		"opaque here":       {{{Name: "etc/"}, {Name: "etc/.wh..wh..opq"}, link("etc/base")}},
		"replaced by a dir": {{{Name: "etc/base/"}}, {link("etc/base")}},
	}
	for name, layers := range cases {
		t.Run(name, func(t *testing.T) {
			srv := startRegistry(t, fixture.Options{})
			ls := []*fixture.Layer{baseLayer(t, "one")}
			for _, files := range layers {
				ls = append(ls, mustLayer(t, files, fixture.Gzip))
			}
			buildImage(t, srv, "hl/bad:1", ls...)
			s := newStore(t, "", "")
			if img, err := s.Pull(ctxT(t), srv.Host+"/hl/bad:1", nil); err == nil {
				t.Fatalf("pulled: layers %v", img.Layers)
			} else if t.Log(err); !errors.Is(err, ErrBadLayer) {
				t.Errorf("not ErrBadLayer: %v", err)
			}
			var st syscall.Stat_t
			if err := syscall.Stat(victim, &st); err != nil || st.Nlink != 1 || readFile(t, victim) != "secret" {
				t.Fatalf("victim touched: nlink %d, %v", st.Nlink, err)
			}
			if err := filepath.Walk(s.cfg.Root, func(p string, fi os.FileInfo, err error) error {
				if err == nil && fi.Mode().IsRegular() && readFile(t, p) == "secret" {
					return errors.New("victim copied into the store at " + p)
				}
				return err
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// The copy of a lower file counts against the pull's limits: a layer of a
// few bytes cannot make the store write a large lower file again and again.
func TestPullHardlinkCopyCharged(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	big := mustLayer(t, []fixture.File{{Name: "big", Body: make([]byte, 3<<20)}}, fixture.Gzip)
	ls := []*fixture.Layer{big}
	for i := range 4 {
		ls = append(ls, mustLayer(t, []fixture.File{{Name: "big-" + string(rune('a'+i)), Type: tar.TypeLink, Linkname: "big"}}, fixture.Gzip))
	}
	buildImage(t, srv, "hl/big:1", ls...)
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t), MaxImageSize: 10 << 20})
	if err != nil {
		t.Fatal(err)
	}
	_, err = s.Pull(ctxT(t), srv.Host+"/hl/big:1", nil)
	if !errors.Is(err, ErrLayerTooLarge) {
		t.Fatalf("pull of 5 copies of a 3 MiB file with a 10 MiB image limit: %v", err)
	}
}

// Hard links across several layers: the target two layers down, and a link
// to a file that a hard-link layer below copied in.
func TestPullHardlinkAcrossLayers(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ls := []*fixture.Layer{
		baseLayer(t, "deep"),
		mustLayer(t, []fixture.File{{Name: "other/"}, {Name: "other/f", Body: []byte("o")}}, fixture.Zstd),
		mustLayer(t, []fixture.File{{Name: "bin/tool-2", Type: tar.TypeLink, Linkname: "bin/tool", Mode: 0o755}}, fixture.Gzip),
		mustLayer(t, []fixture.File{{Name: "other/tool-3", Type: tar.TypeLink, Linkname: "bin/tool-2", Mode: 0o755}}, fixture.Gzip),
	}
	buildImage(t, srv, "hl/deep:1", ls...)
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), srv.Host+"/hl/deep:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []string{"bin/tool-2", "other/tool-3"} {
		if got := readFile(t, mergedLookup(img, n)); got != "#!/bin/sh\necho deep\n" {
			t.Errorf("%s holds %q", n, got)
		}
	}
	if got := readFile(t, mergedLookup(img, "other/f")); got != "o" {
		t.Errorf("other/f holds %q", got)
	}
	// Pulled again into the same store: nothing to fetch, same directories.
	again, err := s.Pull(ctxT(t), srv.Host+"/hl/deep:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(again.Layers, ":") != strings.Join(img.Layers, ":") {
		t.Errorf("layers moved: %v then %v", img.Layers, again.Layers)
	}
}

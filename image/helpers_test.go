package image

import (
	"archive/tar"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

func startRegistry(t testing.TB, opts fixture.Options) *fixture.Server {
	t.Helper()
	srv, err := fixture.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	return srv
}

func testLogger(t testing.TB) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t testing.TB }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSuffix(string(p), "\n"))
	return len(p), nil
}

func newStore(t testing.TB, root, hostsDir string) *Store {
	t.Helper()
	if root == "" {
		root = t.TempDir()
	}
	if hostsDir == "" {
		hostsDir = t.TempDir()
	}
	s, err := New(Config{Root: root, RegistryConfigPath: hostsDir, Logger: testLogger(t)})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func mustLayer(t testing.TB, files []fixture.File, c fixture.Compression) *fixture.Layer {
	t.Helper()
	l, err := fixture.NewLayer(fixture.Tar(files), c, false)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// testImage is a two-layer image (gzip base, zstd top) whose content
// depends on seed; base layers are shared by images with the same base.
type testImage struct {
	img    v1.Image
	layers []*fixture.Layer
	id     string
}

func baseLayer(t testing.TB, base string) *fixture.Layer {
	return mustLayer(t, []fixture.File{
		{Name: "etc/"},
		{Name: "etc/base", Body: []byte(base)},
		{Name: "bin/"},
		{Name: "bin/tool", Mode: 0o755, Body: []byte("#!/bin/sh\necho " + base + "\n")},
		{Name: "bin/tool-link", Type: tar.TypeLink, Linkname: "bin/tool", Mode: 0o755},
		{Name: "bin/sym", Type: tar.TypeSymlink, Linkname: "/bin/tool"},
	}, fixture.Gzip)
}

func makeImage(t testing.TB, base, top string) testImage {
	t.Helper()
	l1 := baseLayer(t, base)
	l2 := mustLayer(t, []fixture.File{
		{Name: "app/"},
		{Name: "app/" + top, Body: []byte(strings.Repeat(top, 1000))},
	}, fixture.Zstd)
	img, err := fixture.Build(fixture.ImageSpec{
		Config: v1.Config{User: "1000:1000", Cmd: []string{"/bin/tool"}},
		Layers: []*fixture.Layer{l1, l2},
	})
	if err != nil {
		t.Fatal(err)
	}
	cd, err := img.ConfigName()
	if err != nil {
		t.Fatal(err)
	}
	return testImage{img: img, layers: []*fixture.Layer{l1, l2}, id: cd.String()}
}

func manifestDigest(t testing.TB, img interface{ Digest() (v1.Hash, error) }) string {
	t.Helper()
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

func push(t testing.TB, srv *fixture.Server, ref string, img v1.Image) {
	t.Helper()
	if err := srv.Push(ref, img); err != nil {
		t.Fatal(err)
	}
}

func writeHosts(t testing.TB, dir, host, content string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Join(dir, host), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, host, "hosts.toml"), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func ctxT(t testing.TB) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	return ctx
}

// listDir returns the names in dir.
func listDir(t testing.TB, dir string) []string {
	t.Helper()
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

func readFile(t testing.TB, p string) string {
	t.Helper()
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

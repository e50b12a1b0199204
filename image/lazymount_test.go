package image

import (
	"bytes"
	"context"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// What LazySource returns is enough for a lazyfs server on its own: an
// eStargz layer behind token auth mounts, its landmark files prefetched,
// its files read, and it unmounts leaving no mount.
func TestLazySourceMounts(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root (FUSE mounts)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	files := fixture.EStargzFiles()
	l, err := fixture.NewEStargzLayer(files, []string{"lazy/hello.txt"}, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{l}})
	if err != nil {
		t.Fatal(err)
	}
	srv := startRegistry(t, fixture.Options{TokenAuth: true, Username: "bob", Password: "pw"})
	push(t, srv, "lazy/estargz:1", img)
	m, err := img.Manifest()
	if err != nil {
		t.Fatal(err)
	}
	toc := m.Layers[0].Annotations[fixture.TOCDigestAnnotation]
	s := newStore(t, "", "")
	src, err := s.LazySource(ctxT(t), srv.Host+"/lazy/estargz:1", &AuthConfig{Username: "bob", Password: "pw"},
		l.DigestString(), int64(len(l.Blob)))
	if err != nil {
		t.Fatal(err)
	}

	dir := t.TempDir()
	socket, mnt := filepath.Join(dir, "lazyfs.sock"), filepath.Join(dir, "mnt")
	if err := os.Mkdir(mnt, 0o755); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- lazy.NewServer(slog.New(slog.DiscardHandler)).Serve(ctx, socket) }()
	t.Cleanup(func() { cancel(); <-served })
	c := lazy.Client{Socket: socket}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, _, err := c.List(ctx); err == nil {
			break
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
	spec := lazy.MountSpec{Mountpoint: mnt, Dir: filepath.Join(dir, "cache"), TOCDigest: toc, Source: src, Prefetch: true}
	if err := c.Mount(ctxT(t), spec); err != nil {
		t.Fatal(err)
	}
	for _, f := range files {
		if f.Type != 0 {
			continue
		}
		got, err := os.ReadFile(filepath.Join(mnt, f.Name))
		if err != nil || !bytes.Equal(got, f.Body) {
			t.Errorf("%s: %d bytes, %v", f.Name, len(got), err)
		}
	}
	if err := c.Unmount(ctxT(t), mnt, false); err != nil {
		t.Fatal(err)
	}
	if on, err := mountinfo.Mounted(mnt); on || err != nil {
		t.Errorf("still mounted after unmount (%v)", err)
	}
}

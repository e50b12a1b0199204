package image

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	godigest "github.com/opencontainers/go-digest"

	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// lazyImage pushes an image of a plain gzip layer below an eStargz one and
// returns the eStargz layer's files.
func lazyImage(t *testing.T, srv *fixture.Server, ref string) []fixture.File {
	t.Helper()
	return lazyImageOn(t, srv, ref, "base\n")
}

// lazyImageOn is lazyImage with base's file holding baseText.
func lazyImageOn(t *testing.T, srv *fixture.Server, ref, baseText string) []fixture.File {
	t.Helper()
	files := fixture.EStargzFiles()
	el, err := fixture.NewEStargzLayer(files, []string{"lazy/hello.txt"}, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	base, err := fixture.NewLayer(fixture.Tar([]fixture.File{{Name: "base/", Type: tar.TypeDir, Mode: 0o755},
		{Name: "base/f", Type: tar.TypeReg, Mode: 0o644, Body: []byte(baseText)}}), fixture.Gzip, false)
	if err != nil {
		t.Fatal(err)
	}
	img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{base, el}})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, ref, img)
	return files
}

// lazyStore is a store that pulls lazily through an in-process lazyfs
// server (unmounting everything at the test's end).
func lazyStore(t *testing.T) *Store {
	t.Helper()
	node, _ := lazyServer(t)
	return lazyStoreAt(t, filepath.Join(t.TempDir(), "root"), node)
}

func lazyStoreAt(t *testing.T, root string, node *lazy.Node) *Store {
	t.Helper()
	s, err := New(Config{Root: root, RegistryConfigPath: t.TempDir(), Logger: testLogger(t), LazyPull: true, Lazy: node})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// lazyServer runs a lazyfs server in the test's process until the test's
// end or until stop is called (it unmounts what it serves).
func lazyServer(t *testing.T) (node *lazy.Node, stop func()) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root (FUSE mounts)")
	}
	if _, err := os.Stat("/dev/fuse"); err != nil {
		t.Skip("no /dev/fuse")
	}
	dir := t.TempDir()
	socket := filepath.Join(dir, "lazyfs.sock")
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- lazy.NewServer(slog.New(slog.DiscardHandler)).Serve(ctx, socket) }()
	var once sync.Once
	stop = func() { once.Do(func() { cancel(); <-served }) }
	t.Cleanup(stop)
	node = &lazy.Node{Socket: socket, Command: lazy.ServerCommand{Path: "/nonexistent", Log: filepath.Join(dir, "log")}}
	for deadline := time.Now().Add(5 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		if _, err := node.List(ctx); err == nil {
			return node, stop
		} else if time.Now().After(deadline) {
			t.Fatal(err)
		}
	}
}

// TestLazyPull: with lazy pulls on, the eStargz layer of an image is served
// by lazyfs at its lazy mount point (its files the layer's), the plain one
// below is unpacked; the record says which; FsInfo does not walk the mount;
// Remove unmounts the layer and removes its cache.
func TestLazyPull(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{})
	files := lazyImage(t, srv, "lazy/img:1")
	img, err := s.Pull(ctxT(t), srv.Host+"/lazy/img:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(img.Layers) != 2 || strings.HasPrefix(img.Layers[0], filepath.Join(s.cfg.Root, "lazy")) {
		t.Fatalf("layers %v: the plain one must be unpacked", img.Layers)
	}
	mnt := img.Layers[1]
	if on, err := mountinfo.Mounted(mnt); !on || err != nil || !strings.HasPrefix(mnt, filepath.Join(s.cfg.Root, "lazy")) {
		t.Fatalf("eStargz layer at %s: mounted %v (%v)", mnt, on, err)
	}
	for _, f := range files {
		if f.Type != tar.TypeReg {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(mnt, f.Name)); err != nil || !bytes.Equal(got, f.Body) {
			t.Errorf("%s: %d bytes, %v", f.Name, len(got), err)
		}
	}
	data, err := os.ReadFile(s.recordPath(img.ID))
	if err != nil || !strings.Contains(string(data), `"lazy": true`) {
		t.Errorf("record: %v\n%s", err, data)
	}
	if u, err := s.FsInfo(); err != nil || u.UsedBytes == 0 {
		t.Errorf("FsInfo: %+v, %v", u, err)
	}
	if err := s.Remove(img.ID); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Errorf("%s still mounted after Remove", mnt)
	}
	if _, err := os.Stat(filepath.Dir(mnt)); !os.IsNotExist(err) {
		t.Errorf("lazy layer's directory after Remove: %v", err)
	}
}

// TestLazyPullFallsBack: a registry that answers ranges with the whole blob
// gets the image pulled whole, as with lazy pulls off.
func TestLazyPullFallsBack(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{})
	lazyImage(t, srv, "lazy/img:1")
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") == "" {
			return false
		}
		r.Header.Del("Range") // the whole blob, 200
		srv.Handler().ServeHTTP(w, r)
		return true
	})
	img, err := s.Pull(ctxT(t), srv.Host+"/lazy/img:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range img.Layers {
		if strings.HasPrefix(l, filepath.Join(s.cfg.Root, "lazy")) {
			t.Errorf("layer %s served lazily by a registry without ranges", l)
		}
	}
	if _, err := os.Stat(filepath.Join(img.Layers[1], "lazy/hello.txt")); err != nil {
		t.Errorf("unpacked eStargz layer: %v", err)
	}
}

// TestLazyRefusedLeavesNothing: a layer lazyfs refuses (its manifest names
// another TOC than the blob's) is pulled whole, and its lazy directory (the
// mount point made for it, the cache lazyfs began) is not left behind.
func TestLazyRefusedLeavesNothing(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{})
	el, err := fixture.NewEStargzLayer(fixture.EStargzFiles(), []string{"lazy/hello.txt"}, 16<<10)
	if err != nil {
		t.Fatal(err)
	}
	img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{el.WithTOCDigest(godigest.FromString("another TOC").String())}})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "lazy/refused:1", img)
	pulled, err := s.Pull(ctxT(t), srv.Host+"/lazy/refused:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if strings.HasPrefix(pulled.Layers[0], filepath.Join(s.cfg.Root, "lazy")) {
		t.Fatalf("layer %s served lazily with a TOC not its manifest's", pulled.Layers[0])
	}
	if _, err := os.Stat(filepath.Join(pulled.Layers[0], "lazy/hello.txt")); err != nil {
		t.Errorf("unpacked layer: %v", err)
	}
	if _, err := os.Stat(s.lazyDir(el.DigestString())); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("refused lazy layer's directory: %v, want it gone", err)
	}
}

// TestLazyRemount: a store opened again over a lazyfs that lost its mounts
// (a new server) mounts the recorded lazy layers again, each from a fresh
// source; their files read.
func TestLazyRemount(t *testing.T) {
	nodeA, stopA := lazyServer(t)
	root := filepath.Join(t.TempDir(), "root")
	srv := startRegistry(t, fixture.Options{})
	files := lazyImage(t, srv, "lazy/img:1")
	img, err := lazyStoreAt(t, root, nodeA).Pull(ctxT(t), srv.Host+"/lazy/img:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	stopA()
	mnt := img.Layers[1]
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Fatalf("%s still mounted with its server gone", mnt)
	}
	nodeB, _ := lazyServer(t)
	s := lazyStoreAt(t, root, nodeB)
	if err := s.RemountLazy(ctxT(t)); err != nil {
		t.Fatal(err)
	}
	if on, err := mountinfo.Mounted(mnt); !on || err != nil {
		t.Fatalf("%s not mounted again (%v)", mnt, err)
	}
	for _, f := range files {
		if f.Type != tar.TypeReg {
			continue
		}
		if got, err := os.ReadFile(filepath.Join(mnt, f.Name)); err != nil || !bytes.Equal(got, f.Body) {
			t.Errorf("%s after the remount: %d bytes, %v", f.Name, len(got), err)
		}
	}
	if err := s.RemountLazy(ctxT(t)); err != nil {
		t.Errorf("a second RemountLazy: %v", err)
	}
	if err := s.Remove(img.ID); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Errorf("%s still mounted after Remove", mnt)
	}
}

// TestLazyUnmountedIsNotThere: a recorded lazy layer that cannot be
// mounted again at start (its registry refuses ranges now) makes its image
// absent to Status, List and Acquire, but not to the recovery; a pull
// mounts the layer again and the image is back.
func TestLazyUnmountedIsNotThere(t *testing.T) {
	nodeA, stopA := lazyServer(t)
	root := filepath.Join(t.TempDir(), "root")
	srv := startRegistry(t, fixture.Options{})
	lazyImage(t, srv, "lazy/img:1")
	ref := srv.Host + "/lazy/img:1"
	img, err := lazyStoreAt(t, root, nodeA).Pull(ctxT(t), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	stopA()
	nodeB, _ := lazyServer(t)
	s := lazyStoreAt(t, root, nodeB)
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Header.Get("Range") == "" {
			return false
		}
		http.Error(w, "no ranges today", http.StatusServiceUnavailable)
		return true
	})
	if err := s.RemountLazy(ctxT(t)); err == nil {
		t.Fatal("RemountLazy without ranges: no error")
	}
	if _, err := s.Acquire(img.ID, "recovered"); err != nil {
		t.Errorf("Acquire while recovering: %v", err)
	}
	if err := s.FinishRecovery(); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ref); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status of an image whose lazy layer is not mounted: %v, want ErrNotFound", err)
	}
	if l, err := s.List(""); err != nil || len(l) != 0 {
		t.Errorf("List: %v, %v; want nothing", l, err)
	}
	if _, err := s.Acquire(img.ID, "new"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Acquire: %v, want ErrNotFound", err)
	}
	srv.SetIntercept(nil)
	if _, err := s.Pull(ctxT(t), ref, nil); err != nil {
		t.Fatal(err)
	}
	if on, err := mountinfo.Mounted(img.Layers[1]); !on || err != nil {
		t.Errorf("%s not mounted by the new pull (%v)", img.Layers[1], err)
	}
	if _, err := s.Status(ref); err != nil {
		t.Errorf("Status after the pull: %v", err)
	}
}

// TestLazyLayerShared: two images with the same eStargz layer share its
// mount; removing one leaves it served for the other, removing both leaves
// it served for a container; the container's release unmounts it and
// removes its cache.
func TestLazyLayerShared(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{})
	lazyImageOn(t, srv, "lazy/a:1", "a\n")
	lazyImageOn(t, srv, "lazy/b:1", "b\n")
	a, err := s.Pull(ctxT(t), srv.Host+"/lazy/a:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := s.Pull(ctxT(t), srv.Host+"/lazy/b:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if a.ID == b.ID || a.Layers[1] != b.Layers[1] {
		t.Fatalf("images %s %s, eStargz layers %s %s: want two images sharing one mount", a.ID, b.ID, a.Layers[1], b.Layers[1])
	}
	mnt := a.Layers[1]
	if err := s.Remove(a.ID); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); !on {
		t.Fatalf("%s unmounted while image %s uses it", mnt, b.ID)
	}
	if _, err := os.ReadFile(filepath.Join(mnt, "lazy/hello.txt")); err != nil {
		t.Errorf("read after the other image's removal: %v", err)
	}
	if _, err := s.Acquire(b.ID, "ctr"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(b.ID); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); !on {
		t.Fatalf("%s unmounted while a container holds its image", mnt)
	}
	if err := s.Release("ctr"); err != nil {
		t.Fatal(err)
	}
	if on, _ := mountinfo.Mounted(mnt); on {
		t.Errorf("%s still mounted once no image nor container uses it", mnt)
	}
	if _, err := os.Stat(filepath.Dir(mnt)); !os.IsNotExist(err) {
		t.Errorf("lazy layer's directory: %v", err)
	}
}

// TestLazyPullRequests: a lazy pull of an image of three eStargz layers
// asks the registry's /v2/ once for its range requests (not once per
// layer), and each layer costs the daemon one range request: its end,
// which carries the TOC lazyfs then needs to ask for no more.
func TestLazyPullRequests(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{})
	var layers []*fixture.Layer
	for i := range 3 {
		files := append(fixture.EStargzFiles(), fixture.File{Name: "lazy/layer", Mode: 0o644, Body: []byte{byte('0' + i)}})
		l, err := fixture.NewEStargzLayer(files, []string{"lazy/hello.txt"}, 16<<10)
		if err != nil {
			t.Fatal(err)
		}
		layers = append(layers, l)
	}
	img, err := fixture.Build(fixture.ImageSpec{Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "lazy/three:1", img)
	var mu sync.Mutex
	pings, ranges := 0, map[string]int{}
	srv.SetIntercept(func(_ http.ResponseWriter, r *http.Request) bool {
		mu.Lock()
		defer mu.Unlock()
		switch {
		case r.URL.Path == "/v2/" || r.URL.Path == "/v2":
			pings++
		case r.Header.Get("Range") != "" && strings.Contains(r.UserAgent(), "go-containerregistry"):
			ranges[filepath.Base(r.URL.Path)]++
		}
		return false
	})
	got, err := s.Pull(ctxT(t), srv.Host+"/lazy/three:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range got.Layers {
		if !strings.HasPrefix(d, filepath.Join(s.cfg.Root, "lazy")) {
			t.Errorf("layer %s not lazy", d)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	// One ping for the manifest's client, one for the range requests'.
	if pings > 2 {
		t.Errorf("%d pings of /v2/ for a pull of 3 lazy layers, want at most 2", pings)
	}
	if len(ranges) != 3 {
		t.Errorf("the daemon's range requests went to %d blobs, want the 3 layers': %v", len(ranges), ranges)
	}
	for b, n := range ranges {
		if n != 1 {
			t.Errorf("%d range requests by the daemon for %s, want 1", n, b)
		}
	}
}

// TestLazyDirOnlyOfADigest: a layer digest that is not a sha256 one (a
// record or manifest could say anything) names no lazy directory: the
// removal of a layer's directory never removes <root>/lazy itself, nor
// anything outside it.
func TestLazyDirOnlyOfADigest(t *testing.T) {
	s := lazyStore(t)
	root := filepath.Join(s.cfg.Root, "lazy")
	victim := filepath.Join(s.cfg.Root, "victim")
	for _, d := range []string{root, filepath.Join(root, strings.Repeat("a", 64)), victim} {
		if err := os.MkdirAll(d, 0o700); err != nil {
			t.Fatal(err)
		}
	}
	for _, dgst := range []string{"sha256:", "", "sha256:../victim", "sha256:..", "sha512:" + strings.Repeat("a", 128), "sha256:" + strings.Repeat("A", 64)} {
		if err := s.dropLazy(dgst); err == nil {
			t.Errorf("dropLazy(%q): no error", dgst)
		}
		if err := s.mountLazy(ctxT(t), nil, layerRecord{Digest: dgst, TOCDigest: "sha256:" + strings.Repeat("b", 64)}); err == nil {
			t.Errorf("mountLazy(%q): no error", dgst)
		}
	}
	for _, d := range []string{root, filepath.Join(root, strings.Repeat("a", 64)), victim} {
		if _, err := os.Stat(d); err != nil {
			t.Errorf("%s: %v", d, err)
		}
	}
}

// TestLazyTokenRenewed: lazyfs reads with the token the daemon's probe
// got, which it cannot renew. Once the registry refuses it (expired), the
// store's watch gives lazyfs a fresh one, asked with the credentials the
// image was pulled with (kept in memory only), and a read waiting for the
// registry gets its bytes. Before, every read of a file not fetched yet
// failed with EIO from then on, and the background fetch never completed.
func TestLazyTokenRenewed(t *testing.T) {
	s := lazyStore(t)
	srv := startRegistry(t, fixture.Options{TokenAuth: true, Username: "bob", Password: "pw"})
	files := lazyImage(t, srv, "lazy/img:1")
	img, err := s.Pull(ctxT(t), srv.Host+"/lazy/img:1", &AuthConfig{Username: "bob", Password: "pw"})
	if err != nil {
		t.Fatal(err)
	}
	tokens := func() int {
		n := 0
		for _, r := range srv.Requests() {
			if r == "GET /token" {
				n++
			}
		}
		return n
	}
	before := tokens()
	srv.RevokeTokens() // big.bin is not prioritized: not fetched yet (the background fetch waits 1 s)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); s.WatchLazy(ctx, 100*time.Millisecond) }()
	t.Cleanup(func() { cancel(); <-done })
	start := time.Now()
	top := img.Layers[len(img.Layers)-1]
	for _, f := range files {
		if f.Name != "lazy/big.bin" {
			continue
		}
		got, err := os.ReadFile(filepath.Join(top, f.Name))
		if err != nil || !bytes.Equal(got, f.Body) {
			t.Fatalf("%s after the token was revoked: %d bytes, %v (after %v)", f.Name, len(got), err, time.Since(start))
		}
	}
	if n := tokens() - before; n == 0 {
		t.Error("no token asked for after the revocation: the read did not need a new one, the test tested nothing")
	}
	t.Logf("read after %v, %d new tokens", time.Since(start).Round(time.Millisecond), tokens()-before)
}

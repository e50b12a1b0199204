package image

import (
	"bytes"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/klauspost/compress/gzip"

	"github.com/minicri/minicri/test/registry/fixture"
)

// bigLayer is a layer of n files of 64 KiB (random-ish, poorly compressible).
func bigLayer(t *testing.T, name string, n int) *fixture.Layer {
	t.Helper()
	var files []fixture.File
	files = append(files, fixture.File{Name: name + "/"})
	for i := range n {
		body := make([]byte, 64<<10)
		for j := range body {
			body[j] = byte((i*7919 + j*j*31 + j>>3) & 0xff)
		}
		files = append(files, fixture.File{Name: fmt.Sprintf("%s/f%03d", name, i), Body: body})
	}
	return mustLayer(t, files, fixture.Gzip)
}

// A layer is unpacked while it downloads: its first files are in the
// store's temporary layer directory while the registry still holds back
// the rest of the blob.
func TestLayerUnpacksWhileDownloading(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	l := bigLayer(t, "stream", 64)
	buildImage(t, srv, "stream/app:1", l)
	release := make(chan struct{})
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, "/blobs/"+l.DigestString()) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(l.Blob)))
		half := len(l.Blob) / 2
		_, _ = w.Write(l.Blob[:half])
		w.(http.Flusher).Flush()
		select {
		case <-release:
		case <-time.After(30 * time.Second):
		}
		_, _ = w.Write(l.Blob[half:])
		return true
	})
	s := newStore(t, "", "")
	done := make(chan error, 1)
	go func() {
		_, err := s.Pull(ctxT(t), srv.Host+"/stream/app:1", nil)
		done <- err
	}()
	deadline := time.Now().Add(20 * time.Second)
	seen := false
	for !seen && time.Now().Before(deadline) {
		tmps, _ := filepath.Glob(filepath.Join(s.layDir, ".tmp-*", "stream", "f000"))
		seen = len(tmps) > 0
		time.Sleep(5 * time.Millisecond)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if !seen {
		t.Fatal("nothing unpacked while half the blob was held back: the layer is not unpacked as it downloads")
	}
}

// Layers download in parallel: the registry holds every layer's response
// until two are asked for at once.
func TestLayersDownloadInParallel(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	a, b := bigLayer(t, "a", 2), bigLayer(t, "b", 2)
	buildImage(t, srv, "par/app:1", a, b)
	var mu sync.Mutex
	inFlight, most := 0, 0
	both := make(chan struct{})
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.Contains(r.URL.Path, "/blobs/") ||
			(!strings.HasSuffix(r.URL.Path, a.DigestString()) && !strings.HasSuffix(r.URL.Path, b.DigestString())) {
			return false
		}
		mu.Lock()
		inFlight++
		if most = max(most, inFlight); most == 2 {
			close(both)
		}
		mu.Unlock()
		select {
		case <-both:
		case <-time.After(5 * time.Second):
		}
		mu.Lock()
		inFlight--
		mu.Unlock()
		return false
	})
	s := newStore(t, "", "")
	if _, err := s.Pull(ctxT(t), srv.Host+"/par/app:1", nil); err != nil {
		t.Fatal(err)
	}
	if most < 2 {
		t.Fatalf("at most %d layer downloads at once", most)
	}
}

// A blob that unpacks to the right diff ID but whose compressed digest is
// wrong (the same tar compressed otherwise) is never exposed: the pull
// fails and neither the layer's directory nor its blob is left in the store.
func TestRecompressedBlobNeverExposed(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	files := []fixture.File{{Name: "x/"}, {Name: "x/y", Body: bytes.Repeat([]byte("y"), 100000)}}
	l := mustLayer(t, files, fixture.Gzip)
	buildImage(t, srv, "recomp/app:1", l)
	var buf bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&buf, gzip.BestCompression)
	_, _ = zw.Write(fixture.Tar(files))
	_ = zw.Close()
	other := buf.Bytes()
	if bytes.Equal(other, l.Blob) {
		t.Fatal("recompression gave the same bytes")
	}
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+l.DigestString()) {
			w.Header().Set("Content-Length", fmt.Sprint(len(other)))
			_, _ = w.Write(other)
			return true
		}
		return false
	})
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), srv.Host+"/recomp/app:1", nil)
	if err == nil {
		t.Fatalf("pulled a blob with the wrong digest: %+v", img.Layers)
	}
	t.Log(err)
	if exists(s.layerPath(l.DiffIDString())) || exists(s.blobPath(l.DigestString())) {
		t.Fatal("unverified layer or blob stored")
	}
	for _, n := range listDir(t, s.layDir) {
		t.Errorf("left in the layer directory: %s", n)
	}
}

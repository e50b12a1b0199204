package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/minicri/minicri/test/registry/fixture"
)

// pullBomb pushes an image whose only layer is bomb and pulls it into s.
func pullBomb(t *testing.T, s *Store, bomb *fixture.Layer) error {
	t.Helper()
	srv := startRegistry(t, fixture.Options{})
	img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{bomb}})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "bomb/app:1", img)
	_, err = s.Pull(ctxT(t), srv.Host+"/bomb/app:1", nil)
	if err == nil {
		t.Fatal("bomb pulled")
	}
	t.Log(err)
	if !errors.Is(err, ErrLayerTooLarge) {
		t.Errorf("pull error is not ErrLayerTooLarge: %v", err)
	}
	// Nothing is left: no layer, no temporary dir or blob, no record;
	// only the config blob may stay (GC takes it).
	cfg, cerr := img.ConfigName()
	if cerr != nil {
		t.Fatal(cerr)
	}
	assertEmptyStore(t, s, cfg.String(), manifestDigest(t, img))
	return err
}

// Issue 11 item 10: a layer over the size limit fails the pull cleanly.
func TestLayerSizeLimit(t *testing.T) {
	bomb, err := fixture.BombLayer(256 << 20)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t), MaxLayerSize: 64 << 20})
	if err != nil {
		t.Fatal(err)
	}
	err = pullBomb(t, s, bomb)
	if !strings.Contains(err.Error(), "max_layer_size") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// A decompression bomb under the size limit is stopped by the ratio.
func TestDecompressionBombRatio(t *testing.T) {
	bomb, err := fixture.BombLayer(1 << 30)
	if err != nil {
		t.Fatal(err)
	}
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t), MaxLayerRatio: 10})
	if err != nil {
		t.Fatal(err)
	}
	s.ratioAllowance = 16 << 20
	err = pullBomb(t, s, bomb)
	if !strings.Contains(err.Error(), "max_layer_ratio") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// The corpus bomb (10 MiB, 50 GiB of zeros) with the default limits: it
// fails at once, before writing anything.
func TestDecompressionBombDefaults(t *testing.T) {
	bomb, err := fixture.BombLayer(fixture.BombSize)
	if err != nil {
		t.Fatal(err)
	}
	s := newStore(t, "", "")
	start := time.Now()
	pullBomb(t, s, bomb)
	if d := time.Since(start); d > 20*time.Second {
		t.Errorf("the bomb took %v to stop", d)
	}
}

// pullTooLarge pushes an image of layers, pulls it into s and checks that
// the pull fails with ErrLayerTooLarge, leaving nothing behind.
func pullTooLarge(t *testing.T, s *Store, layers ...*fixture.Layer) error {
	t.Helper()
	srv := startRegistry(t, fixture.Options{})
	img, err := fixture.Build(fixture.ImageSpec{Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "big/app:1", img)
	_, err = s.Pull(ctxT(t), srv.Host+"/big/app:1", nil)
	if err == nil {
		t.Fatal("pulled")
	}
	t.Log(err)
	if !errors.Is(err, ErrLayerTooLarge) {
		t.Errorf("pull error is not ErrLayerTooLarge: %v", err)
	}
	assertEmptyStore(t, s)
	return err
}

// zeroLayer is a zstd layer of one file of size zeros.
func zeroLayer(t *testing.T, name string, size int) *fixture.Layer {
	return mustLayer(t, []fixture.File{{Name: name, Body: make([]byte, size)}}, fixture.Zstd)
}

// The attack of review-11 item 2: each layer of zeros stays under the
// allowance a layer had, but the image writes it once per layer (128
// layers of 1 GiB of zeros wrote 128 GiB from a few MB). The allowance is
// once per pull, the ratio against the pull's compressed bytes.
func TestManyLayersShareOneAllowance(t *testing.T) {
	s := newStore(t, "", "")
	s.ratioAllowance = 8 << 20
	var layers []*fixture.Layer
	for i := range 6 {
		layers = append(layers, zeroLayer(t, fmt.Sprintf("zeros-%d", i), 6<<20))
	}
	err := pullTooLarge(t, s, layers...)
	if !strings.Contains(err.Error(), "max_layer_ratio") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// Directories are charged a block each: 12000 of them are 6 MiB of tar
// but take 47 MiB of disk (and 12000 inodes).
func TestDirectoriesChargedByBlock(t *testing.T) {
	var files []fixture.File
	for i := range 12000 {
		files = append(files, fixture.File{Name: fmt.Sprintf("d%05d/", i), Type: tar.TypeDir, Mode: 0o755})
	}
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t),
		MaxLayerSize: 32 << 20, MaxLayerRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	err = pullTooLarge(t, s, mustLayer(t, files, fixture.Zstd))
	if !strings.Contains(err.Error(), "max_layer_size") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// The entries (inodes) of all the layers of a pull are capped.
func TestEntriesPerImageCapped(t *testing.T) {
	var a, b []fixture.File
	for i := range 600 {
		a = append(a, fixture.File{Name: fmt.Sprintf("a%04d", i)})
		b = append(b, fixture.File{Name: fmt.Sprintf("b%04d", i)})
	}
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t), MaxEntries: 1000})
	if err != nil {
		t.Fatal(err)
	}
	err = pullTooLarge(t, s, mustLayer(t, a, fixture.Gzip), mustLayer(t, b, fixture.Gzip))
	if !strings.Contains(err.Error(), "max_entries") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// The bytes of all the layers of a pull are capped.
func TestImageSizeCapped(t *testing.T) {
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t),
		MaxImageSize: 3 << 20, MaxLayerRatio: -1})
	if err != nil {
		t.Fatal(err)
	}
	var layers []*fixture.Layer
	for i := range 4 {
		layers = append(layers, zeroLayer(t, fmt.Sprintf("mib-%d", i), 1<<20))
	}
	err = pullTooLarge(t, s, layers...)
	if !strings.Contains(err.Error(), "max_image_size") {
		t.Errorf("error does not name the limit: %v", err)
	}
}

// An image of more layers than the store takes fails before any layer is
// fetched.
func TestLayerCountCapped(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	var blobGets atomic.Int32
	srv.SetIntercept(func(_ http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/blobs/") {
			blobGets.Add(1)
		}
		return false
	})
	var layers []*fixture.Layer
	for i := range 5 {
		layers = append(layers, mustLayer(t, []fixture.File{{Name: fmt.Sprintf("l%d", i)}}, fixture.Gzip))
	}
	img, err := fixture.Build(fixture.ImageSpec{Layers: layers})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "many/app:1", img)
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Logger: testLogger(t), MaxLayers: 4})
	if err != nil {
		t.Fatal(err)
	}
	blobGets.Store(0)
	_, err = s.Pull(ctxT(t), srv.Host+"/many/app:1", nil)
	if !errors.Is(err, ErrLayerTooLarge) || !strings.Contains(fmt.Sprint(err), "max_layers") {
		t.Fatalf("pull of 5 layers with max_layers 4: %v", err)
	}
	if n := blobGets.Load(); n != 0 {
		t.Errorf("%d blobs fetched", n)
	}
	assertEmptyStore(t, s, manifestDigest(t, img))
}

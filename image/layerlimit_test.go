package image

import (
	"errors"
	"strings"
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

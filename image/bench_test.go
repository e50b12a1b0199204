package image

import (
	"context"
	"log/slog"
	"os"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// BenchmarkColdPull100MB pulls and unpacks the ~100 MB, 4-layer bench image
// from the local test registry into an empty store each time.
//
//	go test ./image/ -run '^$' -bench ColdPull -benchtime 5x
func BenchmarkColdPull100MB(b *testing.B) {
	img, err := fixture.BenchImage(fixture.DefaultCacheDir)
	if err != nil {
		b.Fatal(err)
	}
	srv := startRegistry(b, fixture.Options{})
	push(b, srv, fixture.BenchRef, img)
	ref := srv.Ref(fixture.BenchRef)
	layers, _ := img.Layers()
	var total int64
	for _, l := range layers {
		n, _ := l.Size()
		total += n
	}
	b.SetBytes(total)
	hosts := b.TempDir()
	for b.Loop() {
		b.StopTimer()
		root, err := os.MkdirTemp("", "minicri-bench-")
		if err != nil {
			b.Fatal(err)
		}
		s, err := New(Config{Root: root, RegistryConfigPath: hosts, Logger: slog.New(slog.DiscardHandler)})
		if err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
		if _, err := s.Pull(context.Background(), ref, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		_ = os.RemoveAll(root)
		b.StartTimer()
	}
}

package image

import (
	"context"
	"log/slog"
	"os"
	"syscall"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"

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
	coldPulls(b, srv.Ref(fixture.BenchRef), img)
}

// coldPulls times pulls of ref (img) into a new, empty store each.
func coldPulls(b *testing.B, ref string, img v1.Image) {
	layers, _ := img.Layers()
	var total int64
	for _, l := range layers {
		n, _ := l.Size()
		total += n
	}
	b.SetBytes(total)
	hosts := b.TempDir()
	var cpu time.Duration
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
		before := cpuTime(b)
		b.StartTimer()
		if _, err := s.Pull(context.Background(), ref, nil); err != nil {
			b.Fatal(err)
		}
		b.StopTimer()
		cpu += cpuTime(b) - before
		_ = os.RemoveAll(root)
		b.StartTimer()
	}
	// CPU time (user + system, the process's: the in-process registry's
	// serving included) tells more than the wall time on a busy machine.
	b.ReportMetric(cpu.Seconds()/float64(b.N), "cpu-s/op")
}

// cpuTime is the process's user + system time so far.
func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// BenchmarkColdPull1G pulls and unpacks the 1 GiB, 10-layer bench image
// (fixture.Bench1GImage, ~380 MB compressed) from the local test registry
// into an empty store each time. For the median of 5 cold pulls:
//
//	go test ./image/ -run '^$' -bench ColdPull1G -benchtime 1x -count 5
func BenchmarkColdPull1G(b *testing.B) {
	img, err := fixture.Bench1GImage(fixture.DefaultCacheDir)
	if err != nil {
		b.Fatal(err)
	}
	srv := startRegistry(b, fixture.Options{})
	push(b, srv, fixture.Bench1GRef, img)
	coldPulls(b, srv.Ref(fixture.Bench1GRef), img)
}

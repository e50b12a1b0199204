package main

import (
	"flag"
	"fmt"
	"os"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/minicri/minicri/test/registry/fixture"
)

// runPushPause publishes a static pause binary as the pause image on the test
// registry, in place of its shell-script stand-in (sh + sleep), so that
// containerd's pods hold their namespaces with the same small static process
// as minicri's (bin/minicri-pause; it reports readiness on fd 3 only when open).
func runPushPause(args []string) error {
	fs := flag.NewFlagSet("pushpause", flag.ExitOnError)
	registry := fs.String("registry", "", "test registry host:port")
	binary := fs.String("binary", "", "static pause binary")
	ref := fs.String("ref", "registry.k8s.io/pause:3.9", "image name (the registry host is dropped)")
	_ = fs.Parse(args)
	if *registry == "" || *binary == "" {
		return fmt.Errorf("pushpause: -registry and -binary are required")
	}
	body, err := os.ReadFile(*binary)
	if err != nil {
		return fmt.Errorf("pushpause: %w", err)
	}
	layer, err := fixture.NewLayer(fixture.Tar([]fixture.File{{Name: "pause", Mode: 0o755, Body: body}}), fixture.Gzip, true)
	if err != nil {
		return fmt.Errorf("pushpause: layer: %w", err)
	}
	img, err := fixture.Build(fixture.ImageSpec{
		Config: v1.Config{Entrypoint: []string{"/pause"}, User: "65535:65535"},
		Layers: []*fixture.Layer{layer}, Docker: true,
	})
	if err != nil {
		return fmt.Errorf("pushpause: image: %w", err)
	}
	repo := *ref
	if first, rest, ok := strings.Cut(repo, "/"); ok && strings.ContainsAny(first, ".:") {
		repo = rest
	}
	dst, err := name.NewTag(*registry+"/"+repo, name.Insecure)
	if err != nil {
		return fmt.Errorf("pushpause: %w", err)
	}
	if err := remote.Write(dst, img); err != nil {
		return fmt.Errorf("pushpause: push %s: %w", dst, err)
	}
	fmt.Printf("cribench: %s is now %s as /pause (%d bytes)\n", *ref, *binary, len(body))
	return nil
}

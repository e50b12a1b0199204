// Command ckptimage packages a checkpoint archive (the kubelet's checkpoint
// API has the runtime write it under <kubelet root>/checkpoints) as an OCI
// image the way buildah and checkpointctl do (fixture.CheckpointImage: one
// layer holding the archive's files, the
// io.kubernetes.cri-o.annotations.checkpoint.name manifest annotation) and
// pushes it over plain HTTP to a loopback registry (the e2e suite's offline
// test/registry, whose in-memory store takes pushes). It prints the
// manifest's digest.
//
//	ckptimage -archive PATH -container NAME -ref 127.0.0.1:PORT/repo:tag
package main

import (
	"flag"
	"fmt"
	"log"
	"net"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/minicri/minicri/test/registry/fixture"
)

func main() {
	archive := flag.String("archive", "", "checkpoint archive (tar) to package")
	container := flag.String("container", "", "the checkpointed container's name (the annotation's value)")
	ref := flag.String("ref", "", "where to push: 127.0.0.1:PORT/repository:tag (a loopback registry, plain HTTP)")
	flag.Parse()
	log.SetFlags(0)
	if *archive == "" || *container == "" || *ref == "" {
		log.Fatal("ckptimage: -archive, -container and -ref are required")
	}
	tag, err := name.NewTag(*ref, name.Insecure)
	if err != nil {
		log.Fatalf("ckptimage: -ref %q: %v", *ref, err)
	}
	// Plain HTTP only to a loopback registry.
	host, _, err := net.SplitHostPort(tag.RegistryStr())
	if ip := net.ParseIP(host); err != nil || ip == nil || !ip.IsLoopback() {
		log.Fatalf("ckptimage: -ref %q: want a loopback registry (127.0.0.1:PORT/...)", *ref)
	}
	img, err := fixture.CheckpointImage(*archive, *container)
	if err != nil {
		log.Fatalf("ckptimage: %v", err)
	}
	if err := remote.Write(tag, img); err != nil {
		log.Fatalf("ckptimage: push %s: %v", tag, err)
	}
	d, err := img.Digest()
	if err != nil {
		log.Fatalf("ckptimage: %v", err)
	}
	fmt.Println(d)
}

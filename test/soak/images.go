package main

import (
	"context"
	"math/rand"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// churnImages are pulled and removed in turn; pods never use them.
var churnImages = []string{
	"gcr.io/k8s-staging-cri-tools/test-image-1:latest", "gcr.io/k8s-staging-cri-tools/test-image-2:latest",
	"gcr.io/k8s-staging-cri-tools/test-image-3:latest", "gcr.io/k8s-staging-cri-tools/test-image-tag:test",
}

// puller pulls an absent churn image or removes a present one every few
// seconds (at once when a registry stall is armed), and checks ImageStatus
// agrees.
func (s *soak) puller(ctx context.Context) {
	rng := rand.New(rand.NewSource(s.cfg.seed + 1))
	for ctx.Err() == nil {
		select {
		case <-ctx.Done():
			return
		case <-s.pullKick:
		case <-time.After(time.Duration(2000+rng.Intn(4000)) * time.Millisecond):
		}
		ref := churnImages[rng.Intn(len(churnImages))]
		if s.bel.image(ref) {
			s.removeImage(ref)
		} else {
			s.pullImage(ref)
		}
	}
}

// pullNow makes the puller pull (an absent image) now.
func (s *soak) pullNow() {
	for _, ref := range churnImages {
		if s.bel.image(ref) {
			s.removeImage(ref)
		}
	}
	select {
	case s.pullKick <- struct{}{}:
	default:
	}
}

func (s *soak) pullImage(ref string) {
	until := time.Now().Add(2 * time.Minute)
	for time.Now().Before(until) {
		start := time.Now()
		err := s.rpc.call("PullImage", func(ctx context.Context) error {
			_, err := s.inst.img.PullImage(ctx, &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
			return err
		})
		if err == nil {
			s.pulls.Add(1)
			s.bel.setImage(ref, true)
			s.expectImage(ref, true)
			return
		}
		if !s.tolerated(nil, start, "PullImage "+ref, err, "daemon-kill", "enospc", "registry-stall", "cni-hang", "cni-fail", "cni-hang-forever") {
			return
		}
		time.Sleep(300 * time.Millisecond)
	}
}

func (s *soak) removeImage(ref string) {
	ok := s.retry(nil, "RemoveImage", func(ctx context.Context) error {
		_, err := s.inst.img.RemoveImage(ctx, &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		return err
	})
	if ok {
		s.removals.Add(1)
		s.bel.setImage(ref, false)
		s.expectImage(ref, false)
	}
}

func (s *soak) expectImage(ref string, present bool) {
	var got bool
	if !s.retry(nil, "ImageStatus", func(ctx context.Context) error {
		r, err := s.inst.img.ImageStatus(ctx, &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err == nil {
			got = r.Image != nil
		}
		return err
	}) {
		return
	}
	if got != present {
		s.find.add("convergence", "image %s: present %v, the client believes %v", ref, got, present)
	}
}

package image

import (
	"context"
	"net/http"

	v1 "github.com/google/go-containerregistry/pkg/v1"

	"github.com/minicri/minicri/lazy"
)

// lazyOn says whether pulls mount eStargz layers lazily.
func (p *puller) lazyOn() bool { return p.s.cfg.LazyPull && p.s.cfg.Lazy != nil }

// lazyClients are the pull's clients of range requests (see lazyClients),
// made once and shared by its layers; the pull's own clients stay its
// manifests' and blobs'.
func (p *puller) lazyClients() *lazyClients {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.lazy == nil {
		p.lazy = &lazyClients{p: p, eps: p.endpointsWith(capPull)}
		p.lazy.clients = make([]*http.Client, len(p.lazy.eps))
		p.lazy.recs = make([]*recordTransport, len(p.lazy.eps))
	}
	return p.lazy
}

// warmLazy, with lazy pulls on, makes the first endpoint's range client
// (its ping, and its token) while the manifest is fetched, rather than
// after it. It runs in p.bg.
func (p *puller) warmLazy(ctx context.Context) {
	if !p.lazyOn() {
		return
	}
	p.bg.Add(1)
	go func() {
		defer p.bg.Done()
		if lc := p.lazyClients(); len(lc.eps) > 0 {
			_, _ = lc.client(ctx, 0) // an error is met again, and reported, by the first layer
		}
	}()
}

// probeLazy, with lazy pulls on, reads the ends of the manifest's eStargz
// layers (lazyClients.source: their TOCs) while the image's config is
// fetched: the mounts then find them read. The probes run in p.bg; one that
// fails is reported by its layer's mount.
func (p *puller) probeLazy(ctx context.Context, m *v1.Manifest) {
	if !p.lazyOn() {
		return
	}
	lc := p.lazyClients()
	for _, l := range m.Layers {
		if l.Annotations[lazy.TOCDigestAnnotation] == "" || l.Digest.Algorithm != "sha256" || l.Size <= 0 ||
			p.s.isLazy(l.Digest.String()) {
			continue
		}
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			_, _, _ = lc.source(ctx, l.Digest.String(), l.Size)
		}()
	}
}

// mountLazyLayers starts mounting every eStargz layer of the image through
// lazyfs, all at once: a lazy mount costs a range request and no CPU, and a
// pod of the image waits for the slowest. It does not wait for them: the
// fetch of each layer (ensureLayer, a few at a time, in order) waits for
// its own mount, and pulls it whole if it failed, within the limit (a
// registry that refuses ranges then costs no more than lazy pulls off).
// Concurrent pulls of a layer share its mount (the flight "lazy:<digest>",
// apart from the whole layer's, so a failed mount never fails another
// pull's fetch of it).
func (p *puller) mountLazyLayers(ctx context.Context, layers []layerRecord) {
	p.mu.Lock()
	p.lazyDone, p.lazyErr = map[int]chan struct{}{}, map[int]error{}
	p.mu.Unlock()
	for i, l := range layers {
		if l.TOCDigest == "" {
			continue
		}
		if _, ok := p.layerDir(layers, i); ok {
			continue
		}
		done := make(chan struct{})
		p.mu.Lock()
		p.lazyDone[i] = done
		p.mu.Unlock()
		p.bg.Add(1)
		go func() {
			defer p.bg.Done()
			defer close(done)
			err := p.s.flights.do(ctx, "lazy:"+l.Digest, p.prog, func(fctx context.Context, _ *progressSet) error {
				if p.s.isLazy(l.Digest) {
					return nil
				}
				return p.s.mountLazy(fctx, p.lazyClients(), l)
			})
			if err != nil {
				p.mu.Lock()
				p.lazyErr[i] = err
				p.mu.Unlock()
			}
		}()
	}
}

// lazyResult waits for layer i's lazy mount: mounted, or a context error
// (the pull's end), or neither: pull it whole (the failure is logged).
func (p *puller) lazyResult(ctx context.Context, layers []layerRecord, i int) (mounted bool, err error) {
	p.mu.Lock()
	done := p.lazyDone[i]
	p.mu.Unlock()
	if done == nil {
		return false, nil // not tried: the layer was there when the pull began
	}
	select {
	case <-done:
	case <-ctx.Done():
		return false, contextErr(ctx)
	}
	p.mu.Lock()
	merr := p.lazyErr[i]
	p.mu.Unlock()
	if merr == nil {
		if _, ok := p.layerDir(layers, i); ok {
			return true, nil
		}
		return false, nil // mounted, then collected: whole, then
	}
	if cerr := contextErr(ctx); cerr != nil {
		return false, cerr
	}
	p.s.log.Warn("image: layer pulled whole, not lazily", "image", p.ref.String(), "layer", layers[i].Digest, "error", merr)
	return false, nil
}

package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/minicri/minicri/lazy"
)

// LazyServer is the node's minicri-lazyfs as the store uses it (lazy.Node
// implements it): a pull mounts a lazily pulled layer through it, removal
// and GC unmount it, a restart lists what it still serves.
type LazyServer interface {
	Mount(ctx context.Context, spec lazy.MountSpec) error
	Unmount(ctx context.Context, mountpoint string) error
	List(ctx context.Context) ([]lazy.MountStatus, error)
}

// lazyOpTimeout bounds one call to the server that is not a mount (a
// mount's prefetch is bounded by lazyfs's fetch timeout).
const lazyOpTimeout = 30 * time.Second

// A lazily pulled layer lives in <root>/lazy/<blob digest hex>/: mnt, where
// lazyfs serves it (the overlay's lower directory), and cache, its fetched
// bytes. Unpacked layers are never there.
func (s *Store) lazyDir(blobDigest string) string {
	return filepath.Join(s.cfg.Root, "lazy", strings.TrimPrefix(blobDigest, "sha256:"))
}

func (s *Store) lazyMount(blobDigest string) string {
	return filepath.Join(s.lazyDir(blobDigest), "mnt")
}

// isLazy says whether the store serves layer l lazily now (this run).
func (s *Store) isLazy(blobDigest string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.lazyMounted[blobDigest]
}

// runnableLocked fails, wrapping ErrNotFound, for an image with a lazily
// pulled layer lazyfs does not serve (it could not be mounted again at
// start): ImageStatus then says the image is not there, so the kubelet
// pulls it again, with its credentials, which mounts the layer. s.mu held.
func (s *Store) runnableLocked(r *record) error {
	for _, l := range r.Layers {
		if l.Lazy && !s.lazyMounted[l.Digest] {
			return fmt.Errorf("%w: image %s: its lazily pulled layer %s is not mounted: pull it again", ErrNotFound, r.ID, l.Digest)
		}
	}
	return nil
}

// hasLazy says whether the store serves any layer lazily now.
func (s *Store) hasLazy() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.lazyMounted) > 0
}

// mountLazy serves layer l of the image ref through lazyfs, its
// prioritized files fetched before it returns. Any error means the layer is
// to be pulled whole: no TOC digest, no endpoint a lazyfs source can read
// (ErrNoLazySource, or one that refuses ranges: lazy.ErrRangeRefused), a
// layer lazyfs refuses or a server that does not start.
func (s *Store) mountLazy(ctx context.Context, ref string, auth *AuthConfig, l layerRecord) error {
	if s.cfg.Lazy == nil || l.TOCDigest == "" {
		return errors.New("not an eStargz layer")
	}
	src, err := s.LazySource(ctx, ref, auth, l.Digest, l.Size)
	if err != nil {
		return err
	}
	s.lazyMu.RLock()
	defer s.lazyMu.RUnlock()
	mnt := s.lazyMount(l.Digest)
	if err := os.MkdirAll(mnt, 0o755); err != nil { //nolint:gosec // a lower layer's root: its mode is the TOC's once mounted
		return fmt.Errorf("lazy layer %s: %w", l.Digest, err)
	}
	spec := lazy.MountSpec{Mountpoint: mnt, Dir: filepath.Join(s.lazyDir(l.Digest), "cache"), TOCDigest: l.TOCDigest,
		Source: src, Prefetch: true, Background: true}
	if err := s.cfg.Lazy.Mount(ctx, spec); err != nil {
		return fmt.Errorf("lazy layer %s: %w", l.Digest, err)
	}
	s.mu.Lock()
	s.lazyMounted[l.Digest] = true
	s.mu.Unlock()
	s.fsGen.Add(1)
	s.log.Info("image: layer mounted lazily", "image", ref, "layer", l.Digest, "toc", l.TOCDigest)
	return nil
}

// RemountLazy, at the daemon's start, mounts again the lazily pulled layers
// of the store's records (images, and those removed while containers used
// them) that the server no longer serves (it was restarted, or the node
// was), each with a fresh source (a fresh token) from the image's registry,
// without credentials: the pull's are not kept. A layer that fails stays
// unmounted (its containers' reads fail) and is logged.
func (s *Store) RemountLazy(ctx context.Context) error {
	layers := s.lazyLayers()
	if s.cfg.Lazy == nil || len(layers) == 0 {
		return nil // no server started for nothing
	}
	lctx, cancel := context.WithTimeout(ctx, lazyOpTimeout)
	served, err := s.cfg.Lazy.List(lctx)
	cancel()
	if err != nil {
		return fmt.Errorf("lazy layers: %w", err)
	}
	up := map[string]bool{}
	for _, m := range served {
		up[m.Mountpoint] = true
	}
	var errs []error
	for _, l := range layers {
		if up[s.lazyMount(l.Digest)] {
			s.mu.Lock()
			s.lazyMounted[l.Digest] = true
			s.mu.Unlock()
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 2*lazyOpTimeout)
		err := s.mountLazy(lctx, l.Ref, nil, l)
		cancel()
		if err != nil {
			s.log.Error("image: lazy layer not mounted again", "image", l.Ref, "layer", l.Digest, "error", err)
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// lazyLayers is every lazily pulled layer the records name, once each.
func (s *Store) lazyLayers() []layerRecord {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []layerRecord
	seen := map[string]bool{}
	for _, set := range []map[string]*record{s.images, s.removed, s.leased} {
		for _, r := range set {
			for _, l := range r.Layers {
				if l.Lazy && !seen[l.Digest] {
					seen[l.Digest] = true
					out = append(out, l)
				}
			}
		}
	}
	return out
}

// collectLazy unmounts and removes (cache and all) the lazily pulled
// layers that no image, lease or pull under way uses. A layer lazyfs
// cannot let go of stays, for the next collection.
func (s *Store) collectLazy() error {
	s.lazyMu.Lock()
	defer s.lazyMu.Unlock()
	return s.collectLazyLocked()
}

// collectLazyNow is collectLazy unless a mount is under way (a pull's
// prefetch): a container's removal does not wait for it; the next
// removal or GC collects.
func (s *Store) collectLazyNow() error {
	if !s.lazyMu.TryLock() {
		return nil
	}
	defer s.lazyMu.Unlock()
	return s.collectLazyLocked()
}

// collectLazyLocked: see collectLazy; s.lazyMu held for writing.
func (s *Store) collectLazyLocked() error {
	root := filepath.Join(s.cfg.Root, "lazy")
	ents, err := os.ReadDir(root)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("lazy layers: %w", err)
	}
	s.mu.Lock()
	used := s.usedLocked()
	s.mu.Unlock()
	var errs []error
	for _, e := range ents {
		dgst := "sha256:" + e.Name()
		if used[dgst] {
			continue
		}
		if err := s.dropLazy(dgst); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// dropLazy unmounts layer dgst and removes its directory; s.lazyMu held.
func (s *Store) dropLazy(dgst string) error {
	if s.cfg.Lazy == nil {
		return fmt.Errorf("lazy layer %s: no lazyfs server to unmount it", dgst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lazyOpTimeout)
	defer cancel()
	if err := s.cfg.Lazy.Unmount(ctx, s.lazyMount(dgst)); err != nil {
		return fmt.Errorf("lazy layer %s: %w", dgst, err)
	}
	s.mu.Lock()
	delete(s.lazyMounted, dgst)
	s.mu.Unlock()
	if err := os.RemoveAll(s.lazyDir(dgst)); err != nil {
		return fmt.Errorf("lazy layer %s: %w", dgst, err)
	}
	s.log.Info("image: lazy layer removed", "layer", dgst)
	return nil
}

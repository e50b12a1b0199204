package image

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/moby/sys/mountinfo"
	godigest "github.com/opencontainers/go-digest"

	"github.com/minicri/minicri/lazy"
)

// LazyServer is the node's minicri-lazyfs as the store uses it (lazy.Node
// implements it): a pull mounts a lazily pulled layer through it, removal
// and GC unmount it, a restart lists what it still serves.
type LazyServer interface {
	Mount(ctx context.Context, spec lazy.MountSpec) error
	Unmount(ctx context.Context, mountpoint string) error
	List(ctx context.Context) ([]lazy.MountStatus, error)
	SetSource(ctx context.Context, mountpoint string, src lazy.Source) error
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

// lazyDirOf is lazyDir of a digest that must be a sha256 one, so that the
// directory is one layer's, never <root>/lazy itself nor outside it: a
// record or manifest could say anything, and the directory is removed
// whole (dropLazy).
func (s *Store) lazyDirOf(blobDigest string) (string, error) {
	d, err := godigest.Parse(blobDigest)
	if err != nil || d.Algorithm() != godigest.SHA256 {
		return "", fmt.Errorf("lazy layer %q: not a sha256 digest (%v)", blobDigest, err)
	}
	return s.lazyDir(d.String()), nil
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

// mountLazy serves layer l through lazyfs, read with lc's clients, its
// prioritized files being fetched as it returns. Any error means the layer
// is to be pulled whole: no TOC digest, no endpoint a lazyfs source can read
// (ErrNoLazySource, or one that refuses ranges: lazy.ErrRangeRefused), a
// layer lazyfs refuses or a server that does not start.
func (s *Store) mountLazy(ctx context.Context, lc *lazyClients, l layerRecord) error {
	if s.cfg.Lazy == nil || l.TOCDigest == "" {
		return errors.New("not an eStargz layer")
	}
	dir, err := s.lazyDirOf(l.Digest)
	if err != nil {
		return err
	}
	src, tail, err := lc.source(ctx, l.Digest, l.Size)
	if err != nil {
		return err
	}
	s.lazyMu.RLock()
	defer s.lazyMu.RUnlock()
	mnt := filepath.Join(dir, "mnt")
	_, statErr := os.Stat(dir)
	if err := os.MkdirAll(mnt, 0o755); err != nil { //nolint:gosec // a lower layer's root: its mode is the TOC's once mounted
		return fmt.Errorf("lazy layer %s: %w", l.Digest, err)
	}
	spec := lazy.MountSpec{Mountpoint: mnt, Dir: filepath.Join(dir, "cache"), TOCDigest: l.TOCDigest,
		Source: src, Tail: tail, Prefetch: true, Background: true}
	if err := s.cfg.Lazy.Mount(ctx, spec); err != nil {
		if errors.Is(statErr, os.ErrNotExist) {
			s.removeUnmounted(dir, mnt)
		}
		return fmt.Errorf("lazy layer %s: %w", l.Digest, err)
	}
	s.mu.Lock()
	s.lazyMounted[l.Digest] = true
	if lc.p.auth != nil {
		s.lazyAuth[l.Digest] = lc.p.auth
	}
	s.mu.Unlock()
	s.fsGen.Add(1)
	s.log.Info("image: layer mounted lazily", "image", lc.p.ref.String(), "layer", l.Digest, "toc", l.TOCDigest)
	return nil
}

// removeUnmounted removes the directory a failed mount made (its mount
// point, the cache lazyfs began), unless something is mounted there: a
// mount that answered late, or another's of the same layer, is left to
// image removal and GC. A directory that was there before (a layer mounted
// again, whose cache holds what it fetched) is not the caller's to remove.
func (s *Store) removeUnmounted(dir, mnt string) {
	if on, err := mountinfo.Mounted(mnt); err != nil || on {
		return
	}
	if err := os.RemoveAll(dir); err != nil {
		s.log.Warn("image: a refused lazy layer's directory not removed", "dir", dir, "error", err)
	}
}

// RemountLazy, at the daemon's start and then every WatchLazy period,
// mounts again the lazily pulled layers of the store's records (images,
// and those removed while containers used them) that the server no longer
// serves (it was restarted, or the node was), and gives a fresh source to
// those whose token the registry refused (it expired): each with a fresh
// source (a fresh token) from the image's registry, with the credentials
// the layer was pulled with if this daemon pulled it (kept in memory
// only), else none. A layer that fails stays unmounted (its containers'
// reads fail; its images read as absent) and is in the error.
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
	up := map[string]lazy.MountStatus{}
	for _, m := range served {
		up[m.Mountpoint] = m
	}
	var errs []error
	for _, l := range layers {
		st, served := up[s.lazyMount(l.Digest)]
		s.mu.Lock()
		s.lazyMounted[l.Digest] = served // not served: its images read as absent until mounted again
		s.mu.Unlock()
		if served && !st.Denied {
			continue
		}
		lctx, cancel := context.WithTimeout(ctx, 2*lazyOpTimeout)
		err := s.serveAgain(lctx, l, served)
		cancel()
		if err != nil {
			errs = append(errs, fmt.Errorf("image %s: %w", l.Ref, err))
		}
	}
	return errors.Join(errs...)
}

// serveAgain mounts layer l again (served false), or gives lazyfs a fresh
// source for it (served, its token refused), with the credentials it was
// pulled with if this daemon pulled it, else none.
func (s *Store) serveAgain(ctx context.Context, l layerRecord, served bool) error {
	s.mu.Lock()
	auth := s.lazyAuth[l.Digest]
	s.mu.Unlock()
	lc, err := s.newLazyClients(l.Ref, auth)
	if err != nil {
		return err
	}
	defer lc.CloseIdle()
	if !served {
		return s.mountLazy(ctx, lc, l)
	}
	src, _, err := lc.source(ctx, l.Digest, l.Size)
	if err != nil {
		return fmt.Errorf("lazy layer %s: fresh source: %w", l.Digest, err)
	}
	if err := s.cfg.Lazy.SetSource(ctx, s.lazyMount(l.Digest), src); err != nil {
		return fmt.Errorf("lazy layer %s: %w", l.Digest, err)
	}
	s.log.Info("image: lazy layer's source renewed", "image", l.Ref, "layer", l.Digest)
	return nil
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
		if _, err := s.lazyDirOf(dgst); err != nil {
			s.log.Warn("image: not a lazy layer's directory, left alone", "dir", filepath.Join(root, e.Name()))
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
	dir, err := s.lazyDirOf(dgst)
	if err != nil {
		return err
	}
	if s.cfg.Lazy == nil {
		return fmt.Errorf("lazy layer %s: no lazyfs server to unmount it", dgst)
	}
	ctx, cancel := context.WithTimeout(context.Background(), lazyOpTimeout)
	defer cancel()
	if err := s.cfg.Lazy.Unmount(ctx, filepath.Join(dir, "mnt")); err != nil {
		return fmt.Errorf("lazy layer %s: %w", dgst, err)
	}
	s.mu.Lock()
	delete(s.lazyMounted, dgst)
	delete(s.lazyAuth, dgst)
	s.mu.Unlock()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("lazy layer %s: %w", dgst, err)
	}
	s.log.Info("image: lazy layer removed", "layer", dgst)
	return nil
}

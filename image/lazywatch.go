package image

import (
	"context"
	"time"
)

// LazyWatchPeriod is how often WatchLazy asks lazyfs what it serves.
const LazyWatchPeriod = 2 * time.Second

// WatchLazy, until ctx ends, asks lazyfs every period what it serves and
// mounts again the lazily pulled layers it no longer serves (RemountLazy).
// A lazyfs that died (the OOM killer, a kill) is started again by that
// call (lazy.Node): new containers of its images then find their layers,
// and an image whose layer cannot be mounted again (a private registry:
// the pull's credentials are not kept) reads as absent, so the kubelet
// pulls it again. Containers running on the dead mounts keep them: their
// reads fail until they are restarted (see docs/DESIGN.md).
func (s *Store) WatchLazy(ctx context.Context, period time.Duration) {
	t := time.NewTicker(period)
	defer t.Stop()
	var failing bool
	var next time.Time
	delay := period
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			if now.Before(next) || !s.hasLazyLayers() {
				continue // backing off; or no server to start for nothing
			}
		}
		err := s.RemountLazy(ctx)
		switch {
		case err != nil && !failing && ctx.Err() == nil:
			s.log.Error("image: lazy layers not served, nor mounted again", "error", err)
		case err == nil && failing:
			s.log.Info("image: lazy layers served again")
		}
		failing = err != nil
		if failing { // a registry that refuses is not asked every period
			delay = min(2*delay, time.Minute)
		} else {
			delay = period
		}
		next = time.Now().Add(delay - period)
	}
}

// hasLazyLayers says whether any record names a lazily pulled layer.
func (s *Store) hasLazyLayers() bool {
	return len(s.lazyLayers()) > 0
}

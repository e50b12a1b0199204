package image

import (
	"errors"
	"fmt"
	"strings"
)

// Leases: a holder (a container, a container's image volumes) pins the
// layers of the images it uses. A lease is the pair (image, holder), so
// Acquire and Release are idempotent per holder: a holder that releases
// twice (a retried RemoveContainer), or releases what it never acquired in
// this run (a crashed creation cleaned up at restart), cannot take away
// another holder's lease. Leases live in memory; after a restart, the
// recovered containers acquire again (removed images are kept on disk as
// tombstones until then, see Store.remove).

// Acquire pins the layers of the image that ref names for holder: they stay
// on disk, even if the image is removed, until Release(holder). Acquiring
// an image the holder already holds changes nothing. After a restart,
// containers must Acquire again, by image ID, before FinishRecovery; until
// then an image removed while in use is found too.
func (s *Store) Acquire(ref, holder string) (Image, error) {
	if holder == "" {
		return Image{}, errors.New("image: lease without a holder")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	r, err := s.lookup(ref)
	if errors.Is(err, ErrNotFound) && s.recovering {
		if t := s.removed["sha256:"+strings.TrimPrefix(ref, "sha256:")]; t != nil {
			r, err = t, nil
		}
	}
	if err != nil {
		return Image{}, err
	}
	if err := s.runnableLocked(r); err != nil && !s.recovering {
		return Image{}, err // recovered containers run on the overlays they have
	}
	if s.leases[r.ID] == nil {
		s.leases[r.ID] = map[string]bool{}
	}
	s.leases[r.ID][holder] = true
	if s.held[holder] == nil {
		s.held[holder] = map[string]bool{}
	}
	s.held[holder][r.ID] = true
	s.leased[r.ID] = r
	return s.image(r), nil
}

// Release drops every lease of holder and removes the layers that nothing
// uses any more. A holder without leases is no error.
func (s *Store) Release(holder string) error {
	trash, err := s.release(holder)
	return errors.Join(err, purge(trash), s.collectLazyNow())
}

func (s *Store) release(holder string) ([]string, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := s.held[holder]
	if len(ids) == 0 {
		return nil, nil
	}
	delete(s.held, holder)
	last := false
	var errs []error
	for id := range ids {
		delete(s.leases[id], holder)
		if len(s.leases[id]) > 0 {
			continue
		}
		last = true
		delete(s.leases, id)
		delete(s.leased, id)
		if s.images[id] == nil {
			// Removed while in use: its tombstone goes with the last user.
			if err := s.deleteRecord(id); err != nil {
				errs = append(errs, fmt.Errorf("delete tombstone of %s: %w", id, err))
			}
		}
	}
	if !last {
		return nil, errors.Join(errs...)
	}
	trash, err := s.gcLocked()
	return trash, errors.Join(append(errs, err)...)
}

package sandbox

import (
	"errors"
	"fmt"
	"sort"

	"github.com/minicri/minicri/internal/idindex"
)

// store indexes the published sandboxes by ID.
type store struct{ idx *idindex.Index[*Sandbox] }

func newStore() *store { return &store{idx: idindex.New[*Sandbox]()} }

func (s *store) add(sb *Sandbox)  { s.idx.Add(sb.ID(), sb) }
func (s *store) delete(id string) { s.idx.Delete(id) }
func (s *store) len() int         { return s.idx.Len() }

// get finds a sandbox by full ID or unique ID prefix.
func (s *store) get(idOrPrefix string) (*Sandbox, error) {
	sb, err := s.idx.Get(idOrPrefix)
	switch {
	case errors.Is(err, idindex.ErrNotFound):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, idOrPrefix)
	case err != nil:
		return nil, fmt.Errorf("%w: sandbox ID %q: %v", ErrInvalid, idOrPrefix, err)
	}
	return sb, nil
}

// all returns the sandboxes sorted by creation time.
func (s *store) all() []*Sandbox {
	out := s.idx.All()
	sort.Slice(out, func(i, j int) bool { return out[i].rec.CreatedAt.Before(out[j].rec.CreatedAt) })
	return out
}

// byKey finds a sandbox with the given metadata.
func (s *store) byKey(key string) *Sandbox {
	for _, sb := range s.idx.All() {
		if sb.rec.Config.Metadata.key() == key {
			return sb
		}
	}
	return nil
}

package sandbox

import (
	"fmt"
	"sort"
	"strings"
	"sync"
)

// store indexes the published sandboxes by ID.
type store struct {
	mu   sync.RWMutex
	byID map[string]*Sandbox
}

func newStore() *store { return &store{byID: map[string]*Sandbox{}} }

func (s *store) add(sb *Sandbox) {
	s.mu.Lock()
	s.byID[sb.ID()] = sb
	s.mu.Unlock()
}

func (s *store) delete(id string) {
	s.mu.Lock()
	delete(s.byID, id)
	s.mu.Unlock()
}

// get finds a sandbox by full ID or unique ID prefix.
func (s *store) get(idOrPrefix string) (*Sandbox, error) {
	if idOrPrefix == "" {
		return nil, fmt.Errorf("%w: empty sandbox ID", ErrInvalid)
	}
	s.mu.RLock()
	defer s.mu.RUnlock()
	if sb, ok := s.byID[idOrPrefix]; ok {
		return sb, nil
	}
	var found *Sandbox
	for id, sb := range s.byID {
		if strings.HasPrefix(id, idOrPrefix) {
			if found != nil {
				return nil, fmt.Errorf("%w: sandbox ID prefix %q is ambiguous", ErrInvalid, idOrPrefix)
			}
			found = sb
		}
	}
	if found == nil {
		return nil, fmt.Errorf("%w: %s", ErrNotFound, idOrPrefix)
	}
	return found, nil
}

// all returns the sandboxes sorted by creation time.
func (s *store) all() []*Sandbox {
	s.mu.RLock()
	out := make([]*Sandbox, 0, len(s.byID))
	for _, sb := range s.byID {
		out = append(out, sb)
	}
	s.mu.RUnlock()
	sort.Slice(out, func(i, j int) bool { return out[i].rec.CreatedAt.Before(out[j].rec.CreatedAt) })
	return out
}

// byKey finds a sandbox with the given metadata.
func (s *store) byKey(key string) *Sandbox {
	s.mu.RLock()
	defer s.mu.RUnlock()
	for _, sb := range s.byID {
		if sb.rec.Config.Metadata.key() == key {
			return sb
		}
	}
	return nil
}

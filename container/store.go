package container

import (
	"errors"
	"fmt"
	"sort"

	"github.com/minicri/minicri/internal/idindex"
)

// store indexes the published containers by ID.
type store struct{ idx *idindex.Index[*Container] }

func newStore() *store { return &store{idx: idindex.New[*Container]()} }

func (s *store) add(c *Container) { s.idx.Add(c.ID(), c) }
func (s *store) delete(id string) { s.idx.Delete(id) }

// get finds a container by full ID or unique ID prefix.
func (s *store) get(idOrPrefix string) (*Container, error) {
	c, err := s.idx.Get(idOrPrefix)
	switch {
	case errors.Is(err, idindex.ErrNotFound):
		return nil, fmt.Errorf("%w: %s", ErrNotFound, idOrPrefix)
	case err != nil:
		return nil, fmt.Errorf("%w: container ID %q: %v", ErrInvalid, idOrPrefix, err)
	}
	return c, nil
}

// all returns the containers sorted by creation time, optionally of one pod.
func (s *store) all(podID string) []*Container {
	var out []*Container
	for _, c := range s.idx.All() {
		if podID == "" || c.rec.PodID == podID {
			out = append(out, c)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].rec.CreatedAt.Before(out[j].rec.CreatedAt) })
	return out
}

package container

import (
	"fmt"

	"github.com/minicri/minicri/internal/oplock"
	"github.com/minicri/minicri/internal/published"
)

// Container is one container in memory.
type Container struct {
	rec    Record // immutable after creation; its Status is the initial one
	status *published.Value[Status]

	op      *oplock.Lock // serialises Start, Stop, Remove, UpdateResources and Checkpoint
	removed bool         // set under op once Remove finished

	// changed, when set, hears every published change of state.
	changed func(c *Container, to State)
}

func newContainer(rec Record, recordPath string) *Container {
	c := &Container{rec: rec, op: oplock.New()}
	c.status = published.New(rec.Status, recordPath, func(st Status) any {
		r := c.rec
		r.Status = st
		return r
	})
	return c
}

// ID returns the container ID.
func (c *Container) ID() string { return c.rec.ID }

// update persists the next status, then publishes it; the state machine
// must allow the transition.
func (c *Container) update(fn func(Status) Status) (Status, error) {
	var from State
	st, err := c.status.Update(func(cur Status) (Status, error) {
		from = cur.State
		next := fn(cur)
		return next, checkTransition(cur.State, next.State)
	})
	if err != nil {
		return st, fmt.Errorf("update container %s: %w", c.rec.ID, err)
	}
	if st.State != from && c.changed != nil {
		c.changed(c, st.State)
	}
	return st, nil
}

// Info is a read-only view of a container.
type Info struct {
	Record
}

// Status returns the published status.
func (c *Container) Status() Status { return c.status.Load() }

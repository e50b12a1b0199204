package container

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	"github.com/minicri/minicri/ocirt"
)

// What package checkpoint uses of containers, and nothing more: it dumps
// the running containers it holds (Manager.Hold) through their runtime, and
// makes containers from checkpoints as the Manager's Restorer
// (restoring.go). Nothing here knows CRIU or the archives.

// Dirs are where a container's files are (docs/DESIGN.md, "On-disk layout").
type Dirs struct {
	// State is <state>/containers/<id>: the bundle (config.json, the OCI
	// spec, as written at creation), exit.json, the rootfs mount point.
	State string
	// Upper is the writable layer, <root>/containers/<id>/fs/upper.
	Upper string
	// Rootfs is the container's overlay mount (in State).
	Rootfs string
	// RuncRoot is libcontainer's state root (of every container).
	RuncRoot string
}

// dirs are container id's Dirs.
func (m *Manager) dirs(id string) Dirs {
	return Dirs{
		State:    m.ctrStateDir(id),
		Upper:    filepath.Join(m.rootDir(id), "fs", "upper"),
		Rootfs:   m.rootfsPath(id),
		RuncRoot: m.runcRoot(),
	}
}

// Checkpointable is a container as package checkpoint works on it: its
// operation lock is held (by Hold, or by the StartContainer that restores
// it), so no Start, Stop, Remove, UpdateResources or other checkpoint runs
// on it meanwhile.
type Checkpointable struct {
	m *Manager
	c *Container
}

// ID is the container's ID.
func (k Checkpointable) ID() string { return k.c.ID() }

// Record is the container's record as it was created.
func (k Checkpointable) Record() Record { return k.c.rec }

// Dirs are where the container's files are.
func (k Checkpointable) Dirs() Dirs { return k.m.dirs(k.c.ID()) }

// Runtime is the container's handle in its OCI runtime
// (ocirt.LibcontainerOf tells the built-in runtime's).
func (k Checkpointable) Runtime() (ocirt.Handle, error) { return k.m.loadOf(k.c) }

// Hold takes the operation locks of the running containers ids (IDs or
// unique ID prefixes, no container named twice; all of pod podID unless
// it is ""), in ID order so that two holders of overlapping sets cannot
// deadlock; waiting for a lock ends with ctx. It returns them in ID order,
// and a release that gives back every lock taken: never nil, to be called
// on error too.
func (m *Manager) Hold(ctx context.Context, podID string, ids []string) ([]Checkpointable, func(), error) {
	var locked []Checkpointable
	release := func() {
		for _, k := range locked {
			k.c.op.Unlock()
		}
	}
	cs, err := m.lookupEach(podID, ids)
	if err != nil {
		return nil, release, err
	}
	for _, c := range cs {
		if err := c.op.Acquire(ctx); err != nil {
			return nil, release, fmt.Errorf("checkpoint container %s: %w", c.ID(), err)
		}
		locked = append(locked, Checkpointable{m: m, c: c})
		if st := m.refresh(c); c.removed || st.State != StateRunning {
			return nil, release, fmt.Errorf("%w: container %s is %s, not running", ErrFailedPrecondition, c.ID(), st.State)
		}
	}
	return locked, release, nil
}

// lookupEach finds the containers ids name, each once, all of pod podID
// (unless ""), sorted by ID.
func (m *Manager) lookupEach(podID string, ids []string) ([]*Container, error) {
	var cs []*Container
	seen := map[string]bool{}
	for _, id := range ids {
		c, err := m.store.get(id)
		if err != nil {
			return nil, err
		}
		if seen[c.ID()] {
			return nil, fmt.Errorf("%w: container %s named twice", ErrInvalid, c.ID())
		}
		seen[c.ID()] = true
		if podID != "" && c.rec.PodID != podID {
			return nil, fmt.Errorf("%w: container %s is not in pod %s", ErrInvalid, c.ID(), podID)
		}
		cs = append(cs, c)
	}
	slices.SortFunc(cs, func(a, b *Container) int { return strings.Compare(a.ID(), b.ID()) })
	return cs, nil
}

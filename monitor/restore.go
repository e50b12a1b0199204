package monitor

import (
	"errors"
	"path/filepath"
	"time"

	"github.com/minicri/minicri/internal/ocirt"
)

// restore creates a container by having CRIU restore the process tree
// dumped in req.Checkpoint into the bundle's container. The restored init
// is this monitor's child, like a created one, so its stdio goes to the
// log, its exit is recorded and its OOM kills seen as for any container;
// it is running at once (no OpStart).
func (cs *containers) restore(id string, req *CreateRequest) (*ContainerInfo, error) {
	if req == nil || req.Checkpoint == "" {
		return nil, errors.New("restore: no checkpoint given")
	}
	if req.Runtime != nil {
		return nil, errors.New("restore: only the built-in runtime restores checkpoints")
	}
	rt := ocirt.LibcontainerRestore{
		Root: req.RuncRoot, Images: req.Checkpoint, Work: filepath.Join(req.Dir, "criu-restore"),
	}
	if _, err := cs.createWith(id, req, rt); err != nil {
		return nil, err
	}
	k, err := cs.get(id)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	k.startedAt = time.Now()
	k.mu.Unlock()
	cs.log.Info("container restored", "container", id, "pid", k.c.PID())
	return k.info(), nil
}

package monitor

import (
	"errors"
	"log/slog"
	"path/filepath"

	"github.com/minicri/minicri/ocirt"
)

// restoreContainer creates a container by having CRIU restore the process
// tree dumped in req.Create.Checkpoint into the bundle's container. The
// restored init is this helper's child (CRIU's --restore-sibling) and
// re-parents to the monitor when the helper exits, as a created init does,
// so its stdio goes to the log, its exit is recorded and its OOM kills are
// seen as for any container. It is running at once (no OpStart).
func restoreContainer(req Request, a *answer, log *slog.Logger) error {
	cr := req.Create
	if cr == nil || cr.Checkpoint == "" {
		return errors.New("restore: no checkpoint given")
	}
	if cr.Runtime != nil {
		return errors.New("restore: only the built-in runtime restores checkpoints")
	}
	rt := ocirt.LibcontainerRestore{
		Root: cr.RuncRoot, Images: cr.Checkpoint, Work: filepath.Join(cr.Dir, "criu-restore"),
	}
	if err := createThrough(req, rt, a, log); err != nil {
		return err
	}
	a.set("started", "1")
	log.Info("container restored")
	return nil
}

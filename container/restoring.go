package container

import (
	"context"
	"fmt"
	"time"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/steps"
	"github.com/minicri/minicri/monitor"
)

// Restorer makes containers from checkpoints (package checkpoint; the
// daemon sets it in Options). A CreateContainer whose image IsCheckpoint
// runs restoreSteps: the restore's steps at their places among the
// creation's own. The container is CREATED with no process; its
// StartContainer has the Restorer restore the dumped processes (as CRI-O
// does), and a Stop before that only marks it exited.
type Restorer interface {
	// IsCheckpoint tells whether a CreateContainer image names a
	// checkpoint (an archive's path, or a checkpoint image), not an image.
	IsCheckpoint(image string) bool
	// Begin is the restore of one creation; t is valid while it runs.
	Begin(t Restoring) Restoration
	// Start restores the dumped processes of k (made by a Restoration,
	// created, never started) in its pod's monitor, whose children they
	// become; setInit records the restored init in the container's status.
	Start(ctx context.Context, k Checkpointable, pod PodInfo, setInit func(proc.Ref) error) (monitor.Response, error)
}

// Restoring is a CreateContainer from a checkpoint, as its Restoration
// sees it.
type Restoring interface {
	// ID is the new container's.
	ID() string
	// Config is the request; until Read returns, its Image names the
	// checkpoint.
	Config() Config
	// Pod is the pod the container is made in.
	Pod() PodInfo
	// Dirs are the container's (made after Read, before Unpack).
	Dirs() Dirs
	// Spec is the container's spec once built and adjusted by the hooks;
	// nil before.
	Spec() *specs.Spec
	// AcquireImage pins image ref for the container: released with it, or
	// by the undo of the step that pinned it.
	AcquireImage(ref string) (image.Image, error)
}

// Restoration is the restore of one container.
type Restoration interface {
	// Read checks the checkpoint (the first step): it returns what the
	// record keeps of it and the image it was taken from, which the
	// container's rootfs is made of.
	Read(ctx context.Context) (*Restore, string, error)
	// Unpack puts the checkpoint's files in the container's directories:
	// after they are made, before the rootfs is mounted.
	Unpack(ctx context.Context) error
	// Checks are the steps that run once the spec is built and adjusted
	// by the hooks: they refuse what the checkpoint holds beyond what the
	// spec gives, and prepare the pod for the restored processes.
	Checks() []steps.Step
}

// Restore records a container created from a checkpoint: its
// StartContainer restores the dumped processes instead of starting a new
// init (as CRI-O does).
type Restore struct {
	Archive        string    `json:"archive"`       // the archive path, or the checkpoint image's reference
	Dir            string    `json:"dir,omitempty"` // the checkpoint image's layer: the archive's contents
	FromContainer  string    `json:"from_container"`
	CheckpointedAt time.Time `json:"checkpointed_at"`
}

// restores tells a CreateContainer image that names a checkpoint.
func (m *Manager) restores(image string) bool {
	return m.opts.Restorer != nil && m.opts.Restorer.IsCheckpoint(image)
}

// restoreSteps are the steps of a CreateContainer from the checkpoint
// cfg.Image: the image the checkpoint names, the checkpoint's rootfs
// changes on top, the spec from the request in the target pod, checked
// against the checkpoint; no process yet (StartContainer restores it).
func (c *creation) restoreSteps() []steps.Step {
	r := c.m.opts.Restorer.Begin(restoreTarget{c})
	list := []steps.Step{
		{Name: "check cgroup view", Do: c.refuseDelegatedRestore},
		{Name: "read checkpoint", Do: func(ctx context.Context) error { return c.readCheckpoint(ctx, r) }, Undo: c.releaseImage},
		{Name: "acquire image", Do: c.acquireImage, Undo: c.releaseImage},
		{Name: "record intent", Do: c.recordIntent, Undo: c.removeDirs},
		{Name: "unpack checkpoint", Do: r.Unpack},
		{Name: "acquire image volumes", Do: c.acquireImageVolumes, Undo: c.releaseImageVolumes},
		{Name: "mount rootfs", Do: c.mountRootfs, Undo: c.unmountRootfs},
		{Name: "build spec", Do: c.buildSpec},
		{Name: "nri create container", Do: c.hookCreate, Undo: c.unhookCreate},
	}
	list = append(list, r.Checks()...)
	return append(list,
		steps.Step{Name: "write spec", Do: c.writeSpecSynced},
		steps.Step{Name: "publish created", Do: c.publish})
}

// readCheckpoint has the restore read the checkpoint; the container is
// then made from the image the checkpoint was taken from.
func (c *creation) readCheckpoint(ctx context.Context, r Restoration) error {
	restore, img, err := r.Read(ctx)
	if err != nil {
		return err
	}
	c.rec.Restore, c.rec.Config.Image = restore, img
	return nil
}

// restoreTarget is a creation as its Restoration sees it.
type restoreTarget struct{ c *creation }

func (t restoreTarget) ID() string        { return t.c.rec.ID }
func (t restoreTarget) Config() Config    { return t.c.rec.Config }
func (t restoreTarget) Pod() PodInfo      { return t.c.pod }
func (t restoreTarget) Dirs() Dirs        { return t.c.m.dirs(t.c.rec.ID) }
func (t restoreTarget) Spec() *specs.Spec { return t.c.spec }
func (t restoreTarget) AcquireImage(ref string) (image.Image, error) {
	img, err := t.c.m.opts.Images.Acquire(ref, t.c.rec.ID)
	if err != nil {
		return img, err
	}
	t.c.img.ID = img.ID // for releaseImage
	return img, nil
}

// startRestored is StartContainer of a container created from a
// checkpoint: the Restorer restores the dumped processes; nothing new is
// started.
func (m *Manager) startRestored(ctx context.Context, c *Container, pod PodInfo) (monitor.Response, error) {
	if m.opts.Restorer == nil {
		return monitor.Response{}, fmt.Errorf("%w: container %s is made from a checkpoint, and nothing restores it", ErrFailedPrecondition, c.ID())
	}
	return m.opts.Restorer.Start(ctx, Checkpointable{m: m, c: c}, pod, func(ref proc.Ref) error {
		_, err := c.update(func(s Status) Status { s.Init = ref; return s })
		return err
	})
}

// stopUnrestored stops a restore container whose StartContainer has not
// restored it: there is no process, it just becomes exited.
func (m *Manager) stopUnrestored(c *Container) error {
	_, err := c.update(func(s Status) Status {
		return exited(s, &monitor.Exit{Code: 128 + int(unix.SIGKILL), FinishedAt: time.Now()})
	})
	return err
}

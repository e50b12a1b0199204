package checkpoint

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/moby/sys/mountinfo"
	"github.com/opencontainers/runc/libcontainer"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/ocirt"
)

// DefaultCheckpointTimeout bounds a checkpoint whose request names no timeout.
const DefaultCheckpointTimeout = 5 * time.Minute

// Names inside a checkpoint archive: the layout CRI-O and containerd write and
// checkpointctl reads (KEP-2008 forensic checkpoints).
const (
	checkpointImagesDir  = "checkpoint"      // CRIU's image files
	checkpointConfigName = "config.dump"     // checkpointMeta as JSON
	checkpointSpec       = "spec.dump"       // the container's OCI spec (config.json)
	checkpointRootfs     = "rootfs-diff.tar" // the writable layer, without whiteouts
	checkpointDeleted    = "deleted.files"   // JSON list of paths the layer deletes
	checkpointStats      = "stats-dump"      // CRIU's dump statistics
	checkpointDumpLog    = "dump.log"        // CRIU's log of the dump
	checkpointRuntime    = "minicri (libcontainer)"
)

// checkpointMeta is config.dump: checkpointctl's metadata.ContainerConfig.
type checkpointMeta struct {
	ID              string    `json:"id"`
	Name            string    `json:"name"`
	RootfsImage     string    `json:"rootfsImage,omitempty"`
	RootfsImageRef  string    `json:"rootfsImageRef,omitempty"`
	RootfsImageName string    `json:"rootfsImageName,omitempty"`
	OCIRuntime      string    `json:"runtime,omitempty"`
	CreatedTime     time.Time `json:"createdTime"`
	CheckpointedAt  time.Time `json:"checkpointedTime"`
	RestoredAt      time.Time `json:"restoredTime"`
	Restored        bool      `json:"restored"`
	// Format is minicri's archive format (restore.go's checkpointFormat).
	Format int `json:"minicriCheckpointFormat,omitempty"`
	// PodNamespace is the checkpointed container's pod namespace (the
	// kubelet's label): only that namespace may restore it (restore_guard.go).
	PodNamespace string `json:"podNamespace,omitempty"`
}

// Containers is what checkpoints use of the container manager
// (*container.Manager).
type Containers interface {
	// Hold takes the operation locks of running containers (see
	// container.Manager.Hold).
	Hold(ctx context.Context, podID string, ids []string) ([]container.Checkpointable, func(), error)
	// List lists containers.
	List(f container.Filter) []container.Info
}

// Checkpointer writes checkpoints of running containers.
type Checkpointer struct {
	containers Containers
	log        *slog.Logger
}

// NewCheckpointer makes the checkpointer of containers and thaws every
// running container an interrupted CheckpointPod left frozen
// (podcheckpoint.go): call it once the container manager has recovered,
// before requests are served.
func NewCheckpointer(ctx context.Context, containers Containers, log *slog.Logger) *Checkpointer {
	if log == nil {
		log = slog.Default()
	}
	cp := &Checkpointer{containers: containers, log: log}
	cp.thawLeftFrozen(ctx)
	return cp
}

// Checkpoint writes a forensic checkpoint of a running container to the tar
// archive at location (absolute); the container keeps running. CRIU dumps the
// processes through libcontainer; the archive holds the CRIU images, the OCI
// spec, the container's metadata and its writable layer. The archive appears
// atomically (temp file + rename) or not at all.
//
// The container's operation lock is held until CRIU is done, even when the
// timeout returns first: a Stop must not kill processes CRIU has frozen.
func (cp *Checkpointer) Checkpoint(ctx context.Context, id, location string, timeout time.Duration) error {
	if location == "" || !filepath.IsAbs(location) {
		return fmt.Errorf("%w: checkpoint location %q must be an absolute path", ErrInvalid, location)
	}
	location = filepath.Clean(location)
	if timeout <= 0 {
		timeout = DefaultCheckpointTimeout
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	held, release, err := cp.containers.Hold(ctx, "", []string{id})
	if err != nil {
		release()
		return err
	}
	k := held[0]
	tmp, err := tempDirFor(k.ID(), location)
	if err != nil {
		release()
		return err
	}
	return cp.dumpInBackground(ctx, k, tmp, location, release, timeout)
}

// tempDirFor makes the scratch directory of container id's checkpoint to
// location, once it knows CRIU is there. Everything temporary lives next
// to the archive, so the final rename stays within one file system.
func tempDirFor(id, location string) (string, error) {
	if _, err := exec.LookPath("criu"); err != nil {
		return "", fmt.Errorf("%w: checkpointing needs CRIU >= 4.1 (make deps installs it): %v", ErrFailedPrecondition, err)
	}
	if err := os.MkdirAll(filepath.Dir(location), 0o700); err != nil {
		return "", fmt.Errorf("checkpoint container %s: %w", id, err)
	}
	tmp, err := os.MkdirTemp(filepath.Dir(location), "."+filepath.Base(location)+".tmp-")
	if err != nil {
		return "", fmt.Errorf("checkpoint container %s: %w", id, err)
	}
	return tmp, nil
}

// dumpInBackground checkpoints k, held, into location with the scratch
// directory tmp, and waits for it until ctx ends: a CRIU that is still at
// work then finishes in the background, still holding the container,
// and its files are removed (killing it could leave the cgroup frozen).
// It releases k and removes tmp once done.
func (cp *Checkpointer) dumpInBackground(ctx context.Context, k container.Checkpointable, tmp, location string, release func(), timeout time.Duration) error {
	id := k.ID()
	done := make(chan error, 1)
	gate := &commitGate{}
	go func() {
		err := cp.checkpointLocked(ctx, k, tmp, location, gate)
		// Clean up before answering, so the caller never sees the temp dir.
		if rerr := os.RemoveAll(tmp); rerr != nil {
			cp.log.Warn("remove checkpoint temp dir", "container", id, "dir", tmp, "err", rerr)
		}
		release()
		done <- err
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		if gate.abandon() {
			return <-done // the archive is already in place: finish normally
		}
		cp.log.Warn("checkpoint timed out; CRIU finishes in the background and its files are removed",
			"container", id, "timeout", timeout.String())
		return fmt.Errorf("checkpoint container %s: %w", id, ctx.Err())
	}
}

// commitGate decides, once, between publishing the archive and giving up on
// it (timeout): an archive never appears after the caller was told it failed.
type commitGate struct {
	mu                   sync.Mutex
	committed, abandoned bool
}

// commit runs publish unless the caller gave up.
func (g *commitGate) commit(publish func() error) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.abandoned {
		return context.DeadlineExceeded
	}
	if err := publish(); err != nil {
		return err
	}
	g.committed = true
	return nil
}

// abandon gives up unless the archive was already published; it reports
// whether it was.
func (g *commitGate) abandon() bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.committed {
		g.abandoned = true
	}
	return g.committed
}

// checkpointLocked dumps the container into tmp and builds the archive at
// location. The caller holds k and removes tmp.
func (cp *Checkpointer) checkpointLocked(ctx context.Context, k container.Checkpointable, tmp, location string, gate *commitGate) error {
	start := time.Now()
	rec, dirs := k.Record(), k.Dirs()
	lc, err := libcontainerOf(k)
	if err != nil {
		return err
	}
	spec, err := os.ReadFile(filepath.Join(dirs.State, "config.json"))
	if err != nil {
		return fmt.Errorf("checkpoint container %s: read OCI spec: %w", rec.ID, err)
	}
	images, work := filepath.Join(tmp, "images"), filepath.Join(tmp, "work")
	if err := dump(lc, images, work); err != nil {
		return fmt.Errorf("checkpoint container %s: criu dump: %w%s", rec.ID, err, criuLogErrors(filepath.Join(work, checkpointDumpLog)))
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	cfg, err := json.Marshal(metaOf(rec))
	if err != nil {
		return err
	}
	f, err := os.CreateTemp(tmp, "archive-*.tar")
	if err != nil {
		return err
	}
	defer f.Close()
	err = publishArchive(ctx, f, location, gate, checkpointParts{
		Images: images, Work: work, Config: cfg, Spec: spec, Tmp: tmp,
		Upper: dirs.Upper, Lower: rootfsLowerDirs(dirs.Rootfs),
	})
	if err != nil {
		return fmt.Errorf("checkpoint container %s: write %s: %w", rec.ID, location, err)
	}
	cp.log.Info("container checkpointed", "pod", rec.PodID, "container", rec.ID, "location", location,
		"took", time.Since(start).Round(time.Millisecond).String())
	return nil
}

// libcontainerOf is k in the built-in runtime, the one CRIU dumps through.
func libcontainerOf(k container.Checkpointable) (*libcontainer.Container, error) {
	rec := k.Record()
	h, err := k.Runtime()
	if err != nil {
		return nil, fmt.Errorf("%w: container %s: load runtime state: %v", ErrFailedPrecondition, rec.ID, err)
	}
	lc, ok := ocirt.LibcontainerOf(h)
	if !ok {
		return nil, fmt.Errorf("%w: container %s: checkpoint is supported by the built-in runtime only, not by runtime handler %q", ErrFailedPrecondition, rec.ID, rec.RuntimeHandler)
	}
	return lc, nil
}

// dump has CRIU dump lc's processes into images (its log and statistics in
// work); they keep running.
func dump(lc *libcontainer.Container, images, work string) error {
	return lc.Checkpoint(&libcontainer.CriuOpts{
		ImagesDirectory:         images,
		WorkDirectory:           work,
		LeaveRunning:            true,
		TcpEstablished:          true,
		ExternalUnixConnections: true,
		FileLocks:               true,
	})
}

// metaOf is the config.dump of a checkpoint of rec, taken now.
func metaOf(rec container.Record) checkpointMeta {
	return checkpointMeta{
		ID: rec.ID, Name: rec.Config.Name,
		RootfsImage: rec.ImageName, RootfsImageRef: rec.ImageID, RootfsImageName: rec.ImageName,
		OCIRuntime: checkpointRuntime, CreatedTime: rec.CreatedAt, CheckpointedAt: time.Now().UTC(),
		Format: checkpointFormat, PodNamespace: rec.Config.Labels[podNamespaceLabel],
	}
}

// publishArchive writes the archive of p to f, a new file next to
// location, and, unless gate was abandoned meanwhile, renames it onto
// location.
func publishArchive(ctx context.Context, f *os.File, location string, gate *commitGate, p checkpointParts) error {
	err := writeCheckpointArchive(ctx, f, p)
	if err == nil {
		err = f.Sync()
	}
	if err == nil {
		err = f.Close()
	}
	if err == nil {
		err = gate.commit(func() error { return os.Rename(f.Name(), location) })
	}
	return err
}

// criuLogErrors returns the error lines of CRIU's log, for the message.
func criuLogErrors(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	var errs []string
	for _, l := range strings.Split(string(data), "\n") {
		if strings.Contains(l, "Error") || strings.Contains(l, "error") {
			errs = append(errs, strings.TrimSpace(l))
		}
	}
	if len(errs) > 5 {
		errs = errs[len(errs)-5:]
	}
	if len(errs) == 0 {
		return ""
	}
	return " (criu: " + strings.Join(errs, "; ") + ")"
}

// rootfsLowerDirs returns the lower dirs of the overlay mounted at rootfs,
// top first; nil when it is not mounted.
func rootfsLowerDirs(rootfs string) []string {
	ms, err := mountinfo.GetMounts(mountinfo.SingleEntryFilter(rootfs))
	if err != nil || len(ms) == 0 {
		return nil
	}
	for _, o := range strings.Split(ms[len(ms)-1].VFSOptions, ",") {
		if v, ok := strings.CutPrefix(o, "lowerdir="); ok {
			return strings.Split(v, ":")
		}
	}
	return nil
}

// checkpointParts are the inputs of a checkpoint archive.
type checkpointParts struct {
	Images string   // CRIU's images: checkpoint/
	Work   string   // CRIU's work dir: its stats-dump and dump.log go to the top (optional)
	Config []byte   // config.dump
	Spec   []byte   // spec.dump
	Upper  string   // the overlay upper dir: rootfs-diff.tar and deleted.files
	Lower  []string // the overlay lower dirs, to resolve opaque directories (optional)
	Tmp    string   // scratch space for rootfs-diff.tar
}

// writeCheckpointArchive writes the checkpoint archive to w:
//
//	checkpoint/       CRIU images
//	config.dump       container metadata (JSON)
//	spec.dump         OCI runtime spec (JSON)
//	rootfs-diff.tar   the container's changes to its image
//	deleted.files     JSON list of image paths the container deleted (if any)
//	stats-dump, dump.log  CRIU's statistics and log (if present)
func writeCheckpointArchive(ctx context.Context, w io.Writer, p checkpointParts) error {
	tw := tar.NewWriter(w)
	now := time.Now()
	if err := tarDir(ctx, tw, p.Images, checkpointImagesDir); err != nil {
		return fmt.Errorf("add CRIU images: %w", err)
	}
	for _, b := range []struct {
		name string
		data []byte
	}{{checkpointConfigName, p.Config}, {checkpointSpec, p.Spec}} {
		if err := tarBytes(tw, b.name, b.data, now); err != nil {
			return err
		}
	}
	if p.Work != "" {
		for _, name := range []string{checkpointStats, checkpointDumpLog} {
			path := filepath.Join(p.Work, name)
			fi, err := os.Lstat(path)
			if err != nil || !fi.Mode().IsRegular() {
				continue
			}
			if err := tarFile(tw, path, name, fi); err != nil {
				return err
			}
		}
	}
	diff, err := os.CreateTemp(p.Tmp, "rootfs-diff-*.tar")
	if err != nil {
		return err
	}
	// Early removal only frees space: the caller removes all of p.Tmp (and
	// logs a failure) once the archive is written.
	defer func() { _ = os.Remove(diff.Name()) }()
	defer diff.Close()
	deleted, err := writeRootfsDiff(ctx, diff, p.Upper, p.Lower)
	if err != nil {
		return fmt.Errorf("rootfs diff: %w", err)
	}
	fi, err := diff.Stat()
	if err != nil {
		return err
	}
	if err := tarFile(tw, diff.Name(), checkpointRootfs, fi); err != nil {
		return err
	}
	if len(deleted) > 0 {
		data, err := json.Marshal(deleted)
		if err != nil {
			return err
		}
		if err := tarBytes(tw, checkpointDeleted, data, now); err != nil {
			return err
		}
	}
	return tw.Close()
}

// tarDir adds the tree at dir under the name prefix.
func tarDir(ctx context.Context, tw *tar.Writer, dir, prefix string) error {
	return filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		return tarFile(tw, path, filepath.Join(prefix, rel), fi)
	})
}

// tarBytes adds a regular file holding data.
func tarBytes(tw *tar.Writer, name string, data []byte, mtime time.Time) error {
	if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: name, Mode: 0o600, Size: int64(len(data)), ModTime: mtime}); err != nil {
		return err
	}
	_, err := tw.Write(data)
	return err
}

// tarFile adds the file at path as name. A regular file that changes size
// while it is read is cut or padded to the size it had (the container runs).
func tarFile(tw *tar.Writer, path, name string, fi fs.FileInfo) error {
	link := ""
	if fi.Mode()&fs.ModeSymlink != 0 {
		var err error
		if link, err = os.Readlink(path); err != nil {
			return err
		}
	}
	hdr, err := tar.FileInfoHeader(fi, link)
	if err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	hdr.Name = name
	if fi.IsDir() {
		hdr.Name += "/"
	}
	hdr.Uname, hdr.Gname = "", ""
	if err := tw.WriteHeader(hdr); err != nil {
		return err
	}
	if !fi.Mode().IsRegular() || hdr.Size == 0 {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			_, err = io.CopyN(tw, zeros{}, hdr.Size)
		}
		return err
	}
	defer f.Close()
	n, err := io.CopyN(tw, f, hdr.Size)
	if errors.Is(err, io.EOF) {
		_, err = io.CopyN(tw, zeros{}, hdr.Size-n)
	}
	return err
}

// zeros reads as an endless run of zero bytes.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) {
	clear(p)
	return len(p), nil
}

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
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/internal/proc"
	"github.com/minicri/minicri/internal/steps"
	"github.com/minicri/minicri/monitor"
)

// checkpointFormat is the version of the archives this minicri writes and
// restores (config.dump's minicriCheckpointFormat).
const checkpointFormat = 1

// maxCheckpointMeta bounds config.dump, spec.dump and deleted.files.
const maxCheckpointMeta = 4 << 20

// Images is what a restore looks up in the image store (*image.Store).
type Images interface {
	Status(ref string) (image.Image, error)
}

// Restorer makes containers from checkpoints: it is the container
// manager's container.Restorer (the daemon wires it).
type Restorer struct {
	images Images // nil: no image is a checkpoint image
	log    *slog.Logger
}

// NewRestorer makes the restorer; images tells checkpoint images.
func NewRestorer(images Images, log *slog.Logger) *Restorer {
	if log == nil {
		log = slog.Default()
	}
	return &Restorer{images: images, log: log}
}

// IsCheckpoint implements container.Restorer: an archive's path or a
// checkpoint image.
func (r *Restorer) IsCheckpoint(image string) bool {
	return isCheckpointArchive(image) || r.isCheckpointImage(image)
}

// isCheckpointArchive tells a CreateContainer image that names a
// checkpoint archive (an absolute path: no image reference starts with "/").
func isCheckpointArchive(image string) bool { return strings.HasPrefix(image, "/") }

// isCheckpointImage tells a CreateContainer image that is a checkpoint
// packaged as an OCI image (image.CheckpointAnnotation on its manifest).
func (r *Restorer) isCheckpointImage(ref string) bool {
	if r.images == nil {
		return false
	}
	img, err := r.images.Status(ref)
	return err == nil && img.CheckpointName != ""
}

// restoration is the restore of one container: container's restoreSteps
// run its Read, Unpack and Checks among the creation's own steps.
type restoration struct {
	log *slog.Logger
	t   container.Restoring
	rec *container.Restore // once read
	// metaSum is config.dump's digest as Read checked it.
	metaSum [32]byte
}

// Begin implements container.Restorer.
func (r *Restorer) Begin(t container.Restoring) container.Restoration {
	return &restoration{log: r.log, t: t}
}

// Checks implements container.Restoration: the checkpoint's processes,
// mounts, rootfs changes and files against the spec, then its pids.
func (x *restoration) Checks() []steps.Step {
	return []steps.Step{
		{Name: "check checkpoint credentials", Do: x.checkCheckpointCreds}, // restore_creds.go
		{Name: "check checkpoint mounts", Do: x.checkCheckpointMounts},     // restore_mounts.go
		{Name: "check checkpoint rootfs", Do: x.checkCheckpointRootfs},     // restore_rootfs.go
		{Name: "check checkpoint files", Do: x.checkCheckpointFiles},       // restore_files.go
		{Name: "reserve checkpoint pids", Do: x.reservePids},               // restore_pids.go
	}
}

// imagesDir is where the container's CRIU images are unpacked.
func (x *restoration) imagesDir() string {
	return filepath.Join(x.t.Dirs().State, checkpointImagesDir)
}

// Read implements container.Restoration: it checks the archive and its
// metadata (a minicri archive of this format, CRIU images present); the
// container is then made from the image the checkpoint was taken from.
func (x *restoration) Read(context.Context) (*container.Restore, string, error) {
	cfg, pod := x.t.Config(), x.t.Pod()
	if err := restorable(cfg, pod); err != nil {
		return nil, "", err
	}
	path, dir, walk := filepath.Clean(cfg.Image), "", walkArchive
	if !isCheckpointArchive(path) {
		// A checkpoint image: its one layer holds the archive's files. The
		// container holds it (and, next, the image it names) until removed.
		img, err := x.t.AcquireImage(cfg.Image)
		if err != nil {
			return nil, "", err
		}
		if img.CheckpointName == "" || len(img.Layers) != 1 {
			return nil, "", fmt.Errorf("%w: image %s is not a checkpoint image", ErrInvalid, path)
		}
		path, dir, walk = cfg.Image, img.Layers[0], walkDir
	}
	meta, sum, err := readCheckpointMeta(path, func(fn func(*tar.Header, io.Reader) error) error { return walk(srcOf(path, dir), fn) })
	if err != nil && dir == "" {
		x.log.Info("checkpoint archive refused", "path", path, "err", err) // the cause, for the operator
		return nil, "", hideHostPath(path, err)                            // restore_guard.go
	}
	if err != nil {
		return nil, "", err
	}
	if err := checkNamespace(meta, cfg.Labels, path); err != nil { // restore_guard.go
		return nil, "", err
	}
	x.rec, x.metaSum = &container.Restore{Archive: path, Dir: dir, FromContainer: meta.ID, CheckpointedAt: meta.CheckpointedAt}, sum
	return x.rec, meta.RootfsImageRef, nil
}

// restorable refuses what minicri does not restore into: a pod user
// namespace, a TTY, a runtime handler.
func restorable(cfg container.Config, pod container.PodInfo) error {
	if pod.UserNS != nil {
		return fmt.Errorf("%w: restoring into a pod with a user namespace is not supported", ErrFailedPrecondition)
	}
	if cfg.TTY {
		return fmt.Errorf("%w: a TTY container cannot be restored", ErrInvalid)
	}
	if pod.RuntimeHandler != "" {
		return fmt.Errorf("%w: restore needs the built-in runtime, not runtime handler %q", ErrFailedPrecondition, pod.RuntimeHandler)
	}
	return nil
}

// srcOf is what a walker reads: the archive's path or the image's layer.
func srcOf(path, dir string) string {
	if dir != "" {
		return dir
	}
	return path
}

// walkRestore walks the restore's checkpoint, archive or image layer.
func walkRestore(r *container.Restore, fn func(*tar.Header, io.Reader) error) error {
	if r.Dir != "" {
		return walkDir(r.Dir, fn)
	}
	return walkArchive(r.Archive, fn)
}

// walkDir calls fn for every regular file and directory under dir (a
// checkpoint image's layer), as walkArchive does for an archive.
func walkDir(dir string, fn func(*tar.Header, io.Reader) error) error {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return fmt.Errorf("%w: checkpoint image layer: %v", ErrInvalid, err)
	}
	defer func() { _ = root.Close() }()
	return fs.WalkDir(root.FS(), ".", func(rel string, d fs.DirEntry, err error) error {
		if err != nil || rel == "." {
			return err
		}
		hdr := &tar.Header{Name: rel, Typeflag: tar.TypeDir}
		switch {
		case d.IsDir():
			return fn(hdr, nil)
		case d.Type().IsRegular():
			f, err := root.Open(rel)
			if err != nil {
				return err
			}
			defer func() { _ = f.Close() }()
			fi, err := f.Stat()
			if err != nil {
				return err
			}
			hdr.Typeflag, hdr.Size = tar.TypeReg, fi.Size()
			return fn(hdr, io.LimitReader(f, hdr.Size))
		default:
			return fmt.Errorf("%w: checkpoint image entry %q is not a regular file", ErrInvalid, rel)
		}
	})
}

// readCheckpointMeta reads config.dump and checks the archive's version.
func readCheckpointMeta(path string, walk func(func(*tar.Header, io.Reader) error) error) (*checkpointMeta, [32]byte, error) {
	var meta *checkpointMeta
	var sum [32]byte
	images := false
	err := walk(func(hdr *tar.Header, r io.Reader) error {
		switch hdr.Name {
		case checkpointConfigName:
			data, err := io.ReadAll(io.LimitReader(r, maxCheckpointMeta))
			if err != nil {
				return err
			}
			meta, sum = &checkpointMeta{}, metaSum(data)
			if err := json.Unmarshal(data, meta); err != nil {
				return fmt.Errorf("%w: checkpoint %s: bad %s: %v", ErrInvalid, path, checkpointConfigName, err)
			}
		case checkpointImagesDir + "/inventory.img":
			images = true
		}
		return nil
	})
	if err != nil {
		return nil, sum, err
	}
	switch {
	case meta == nil || !images:
		return nil, sum, fmt.Errorf("%w: %s is not a checkpoint archive (no %s or CRIU images)", ErrInvalid, path, checkpointConfigName)
	case meta.OCIRuntime != checkpointRuntime || meta.Format != checkpointFormat:
		return nil, sum, fmt.Errorf("%w: checkpoint %s was written by %q (format %d); this minicri restores %q format %d only",
			ErrFailedPrecondition, path, meta.OCIRuntime, meta.Format, checkpointRuntime, checkpointFormat)
	case meta.RootfsImageRef == "":
		return nil, sum, fmt.Errorf("%w: checkpoint %s names no image", ErrInvalid, path)
	}
	return meta, sum, nil
}

// walkArchive calls fn for every entry of the tar archive at path (a
// regular file, restore_guard.go); a broken archive, or one whose entries
// add up to more than its size, is ErrInvalid.
func walkArchive(path string, fn func(*tar.Header, io.Reader) error) error {
	f, size, err := openArchive(path)
	if err != nil {
		return err
	}
	defer f.Close()
	b := &budget{left: size}
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("%w: checkpoint archive %s is corrupt: %v", ErrInvalid, path, err)
		}
		hdr.Name = strings.TrimPrefix(filepath.Clean(hdr.Name), "./")
		if err := b.take(hdr); err != nil {
			return fmt.Errorf("checkpoint archive %s: %w", path, err)
		}
		if err := fn(hdr, tr); err != nil {
			return err
		}
	}
}

// Unpack implements container.Restoration: it puts the CRIU images in the
// container's state directory and the archive's rootfs changes in its
// (not yet mounted) upper dir: rootfs-diff.tar unpacked there,
// deleted.files as whiteouts. The container's removeDirs (the undo of its
// "record intent") undoes all of it.
func (x *restoration) Unpack(ctx context.Context) error {
	dirs := x.t.Dirs()
	for _, d := range []string{filepath.Dir(dirs.Upper), dirs.Upper} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) { //nolint:gosec // the container's "/"
			return err
		}
	}
	images, err := os.OpenRoot(dirs.State)
	if err != nil {
		return err
	}
	defer func() { _ = images.Close() }()
	if err := images.Mkdir(checkpointImagesDir, 0o700); err != nil {
		return err
	}
	u := &unpacker{ctx: ctx, images: images, upper: dirs.Upper, archive: x.rec.Archive, metaSum: x.metaSum}
	if err := walkRestore(x.rec, u.entry); err != nil {
		return err
	}
	if !u.seen {
		return fmt.Errorf("%w: checkpoint %s changed while it was read", ErrInvalid, x.rec.Archive)
	}
	return whiteout(dirs.Upper, u.deleted)
}

// unpacker unpacks the entries of a checkpoint (Unpack's second pass over
// it).
type unpacker struct {
	ctx     context.Context
	images  *os.Root // the state dir: CRIU images go to its checkpoint/
	upper   string
	archive string   // for messages
	metaSum [32]byte // config.dump's digest in the first pass
	seen    bool     // config.dump was met again
	deleted []string // deleted.files
}

// entry unpacks one entry of the checkpoint.
func (u *unpacker) entry(hdr *tar.Header, r io.Reader) error {
	if err := u.ctx.Err(); err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(hdr.Name, checkpointImagesDir+"/"):
		return unpackImageFile(u.images, hdr, r)
	case hdr.Name == checkpointRootfs:
		if err := unpackBounded(r, hdr.Size, u.upper); err != nil { // restore_guard.go
			return fmt.Errorf("%w: checkpoint %s: %s: %v", ErrInvalid, u.archive, checkpointRootfs, err)
		}
	case hdr.Name == checkpointConfigName:
		u.seen = true
		if data, err := io.ReadAll(io.LimitReader(r, maxCheckpointMeta)); err != nil || metaSum(data) != u.metaSum {
			return fmt.Errorf("%w: checkpoint %s changed while it was read", ErrInvalid, u.archive)
		}
	case hdr.Name == checkpointDeleted:
		data, err := io.ReadAll(io.LimitReader(r, maxCheckpointMeta))
		if err == nil {
			err = json.Unmarshal(data, &u.deleted)
		}
		if err != nil {
			return fmt.Errorf("%w: checkpoint %s: bad %s: %v", ErrInvalid, u.archive, checkpointDeleted, err)
		}
	}
	return nil
}

// unpackImageFile writes one CRIU image file (regular files and
// directories only) beneath images.
func unpackImageFile(images *os.Root, hdr *tar.Header, r io.Reader) error {
	name := hdr.Name
	if !filepath.IsLocal(name) {
		return fmt.Errorf("%w: checkpoint entry %q escapes", ErrInvalid, name)
	}
	switch hdr.Typeflag {
	case tar.TypeDir:
		if err := images.Mkdir(name, 0o700); err != nil && !errors.Is(err, os.ErrExist) {
			return err
		}
		return nil
	case tar.TypeReg:
		f, err := images.OpenFile(name, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
		if err != nil {
			return fmt.Errorf("%w: checkpoint entry %q: %v", ErrInvalid, name, err)
		}
		_, err = io.Copy(f, r) //nolint:gosec // the archive is the caller's, sized by it
		return errors.Join(err, f.Close())
	default:
		return fmt.Errorf("%w: checkpoint entry %q is not a regular file", ErrInvalid, name)
	}
}

// whiteout hides each image path the checkpointed container had deleted:
// an overlay whiteout (a 0/0 character device) in the upper dir.
func whiteout(upper string, deleted []string) error {
	if len(deleted) == 0 {
		return nil
	}
	root, err := os.OpenRoot(upper)
	if err != nil {
		return err
	}
	defer func() { _ = root.Close() }()
	for _, p := range deleted {
		rel := filepath.Clean(strings.TrimPrefix(p, "/"))
		if !filepath.IsLocal(rel) {
			return fmt.Errorf("%w: deleted file %q escapes", ErrInvalid, p)
		}
		if err := root.MkdirAll(filepath.Dir(rel), 0o755); err != nil {
			return fmt.Errorf("whiteout %s: %w", p, err)
		}
		dir, err := root.Open(filepath.Dir(rel))
		if err != nil {
			return fmt.Errorf("whiteout %s: %w", p, err)
		}
		err = unix.Mknodat(int(dir.Fd()), filepath.Base(rel), unix.S_IFCHR, 0)
		dir.Close()
		if err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("whiteout %s: %w", p, err)
		}
	}
	return nil
}

// Start implements container.Restorer: StartContainer of a container
// created from a checkpoint. The pod's monitor has CRIU restore the dumped
// processes (they become its children); nothing new is started.
func (r *Restorer) Start(ctx context.Context, k container.Checkpointable, pod container.PodInfo, setInit func(proc.Ref) error) (monitor.Response, error) {
	rec, dirs := k.Record(), k.Dirs()
	dir := dirs.State
	start := time.Now()
	resp, err := monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{
		Op: monitor.OpRestore, ID: rec.ID, Create: restoreRequest(rec, pod, dirs),
	})
	if err != nil {
		if !errors.Is(err, monitor.ErrUnavailable) {
			// CRIU refused: the pod cannot hold what was dumped (an address
			// it does not have, say). The container stays CREATED, removable.
			err = fmt.Errorf("%w: %v", ErrFailedPrecondition, err)
		}
		return resp, fmt.Errorf("restore container %s from %s: %w%s", rec.ID, rec.Restore.Archive, err,
			criuLogErrors(filepath.Join(dir, "criu-restore", "restore.log")))
	}
	ref, err := proc.RefOf(resp.Container.PID)
	if err != nil {
		return resp, fmt.Errorf("restored init %d: %w", resp.Container.PID, err)
	}
	if err := setInit(ref); err != nil {
		return resp, err
	}
	// The images are in the processes now; the archive keeps them.
	if err := os.RemoveAll(filepath.Join(dir, checkpointImagesDir)); err != nil {
		r.log.Warn("remove restored CRIU images", "container", rec.ID, "err", err)
	}
	r.log.Info("container restored", "pod", rec.PodID, "container", rec.ID, "archive", rec.Restore.Archive,
		"took", time.Since(start).Round(time.Millisecond).String())
	return resp, nil
}

// restoreRequest is what the monitor needs to restore rec's processes
// into its bundle: new stdio, the log, the CRIU images.
func restoreRequest(rec container.Record, pod container.PodInfo, dirs container.Dirs) *monitor.CreateRequest {
	logDir, logName := "", ""
	if rec.LogPath != "" {
		logDir, logName = pod.LogDirectory, filepath.Clean(rec.Config.LogPath)
	}
	return &monitor.CreateRequest{
		Bundle: dirs.State, Dir: dirs.State, RuncRoot: dirs.RuncRoot, LogDir: logDir, LogPath: logName,
		Stdin: rec.Config.Stdin, StdinOnce: rec.Config.StdinOnce,
		Checkpoint: filepath.Join(dirs.State, checkpointImagesDir),
	}
}

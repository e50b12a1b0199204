package container

import (
	"archive/tar"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"golang.org/x/sys/unix"

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

// Restore records a container created from a checkpoint archive: its
// StartContainer restores the dumped processes instead of starting a new
// init (as CRI-O does).
type Restore struct {
	Archive        string    `json:"archive"`       // the archive path, or the checkpoint image's reference
	Dir            string    `json:"dir,omitempty"` // the checkpoint image's layer: the archive's contents
	FromContainer  string    `json:"from_container"`
	CheckpointedAt time.Time `json:"checkpointed_at"`
	// metaSum is config.dump's digest as readCheckpoint checked it.
	metaSum [32]byte
}

// isCheckpointArchive tells a CreateContainer image that names a
// checkpoint archive (an absolute path: no image reference starts with "/").
func isCheckpointArchive(image string) bool { return strings.HasPrefix(image, "/") }

// isCheckpointImage tells a CreateContainer image that is a checkpoint
// packaged as an OCI image (image.CheckpointAnnotation on its manifest).
func (m *Manager) isCheckpointImage(ref string) bool {
	st, ok := m.opts.Images.(interface {
		Status(ref string) (image.Image, error)
	})
	if !ok {
		return false
	}
	img, err := st.Status(ref)
	return err == nil && img.CheckpointName != ""
}

// restoreSteps are the steps of a CreateContainer from the checkpoint
// archive cfg.Image: the image the checkpoint names, the archive's rootfs
// changes on top, the spec from the request in the target pod; no process
// yet (StartContainer restores it).
func (c *creation) restoreSteps() []steps.Step {
	return []steps.Step{
		{Name: "read checkpoint", Do: c.readCheckpoint, Undo: c.releaseImage},
		{Name: "acquire image", Do: c.acquireImage, Undo: c.releaseImage},
		{Name: "record intent", Do: c.recordIntent, Undo: c.removeDirs},
		{Name: "unpack checkpoint", Do: c.unpackCheckpoint},
		{Name: "acquire image volumes", Do: c.acquireImageVolumes, Undo: c.releaseImageVolumes},
		{Name: "mount rootfs", Do: c.mountRootfs, Undo: c.unmountRootfs},
		{Name: "build spec", Do: c.buildSpec},
		{Name: "nri create container", Do: c.hookCreate, Undo: c.unhookCreate},
		{Name: "check checkpoint credentials", Do: c.checkCheckpointCreds}, // restore_creds.go
		{Name: "check checkpoint mounts", Do: c.checkCheckpointMounts},     // restore_mounts.go
		{Name: "check checkpoint rootfs", Do: c.checkCheckpointRootfs},     // restore_rootfs.go
		{Name: "check checkpoint files", Do: c.checkCheckpointFiles},       // restore_files.go
		{Name: "reserve checkpoint pids", Do: c.reservePids},               // restore_pids.go
		{Name: "write spec", Do: c.writeSpecSynced},
		{Name: "publish created", Do: c.publish},
	}
}

// readCheckpoint checks the archive and its metadata: a minicri archive
// of this format, CRIU images present; the container is then made from
// the image the checkpoint was taken from.
func (c *creation) readCheckpoint(context.Context) error {
	path := filepath.Clean(c.rec.Config.Image)
	if c.pod.UserNS != nil {
		return fmt.Errorf("%w: restoring into a pod with a user namespace is not supported", ErrFailedPrecondition)
	}
	if c.rec.Config.TTY {
		return fmt.Errorf("%w: a TTY container cannot be restored", ErrInvalid)
	}
	if c.pod.RuntimeHandler != "" {
		return fmt.Errorf("%w: restore needs the built-in runtime, not runtime handler %q", ErrFailedPrecondition, c.pod.RuntimeHandler)
	}
	walk, dir := walkArchive, ""
	if !isCheckpointArchive(path) {
		// A checkpoint image: its one layer holds the archive's files. The
		// container holds it (and, next, the image it names) until removed.
		img, err := c.m.opts.Images.Acquire(c.rec.Config.Image, c.rec.ID)
		if err != nil {
			return err
		}
		c.img.ID = img.ID // for releaseImage
		if img.CheckpointName == "" || len(img.Layers) != 1 {
			return fmt.Errorf("%w: image %s is not a checkpoint image", ErrInvalid, path)
		}
		path, dir, walk = c.rec.Config.Image, img.Layers[0], walkDir
	}
	meta, sum, err := readCheckpointMeta(path, func(fn func(*tar.Header, io.Reader) error) error { return walk(srcOf(path, dir), fn) })
	if err != nil && dir == "" {
		c.m.log.Info("checkpoint archive refused", "path", path, "err", err) // the cause, for the operator
		return hideHostPath(path, err)                                       // restore_guard.go
	}
	if err != nil {
		return err
	}
	if err := checkNamespace(meta, c.rec.Config.Labels, path); err != nil { // restore_guard.go
		return err
	}
	c.rec.Restore = &Restore{Archive: path, Dir: dir, FromContainer: meta.ID, CheckpointedAt: meta.CheckpointedAt, metaSum: sum}
	c.rec.Config.Image = meta.RootfsImageRef
	return nil
}

// srcOf is what a walker reads: the archive's path or the image's layer.
func srcOf(path, dir string) string {
	if dir != "" {
		return dir
	}
	return path
}

// walk walks the restore's checkpoint, archive or image layer.
func (r *Restore) walk(fn func(*tar.Header, io.Reader) error) error {
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

// unpackCheckpoint puts the CRIU images in the container's state
// directory and the archive's rootfs changes in its (not yet mounted)
// upper dir: rootfs-diff.tar unpacked there, deleted.files as whiteouts.
// removeDirs undoes all of it.
func (c *creation) unpackCheckpoint(ctx context.Context) error {
	upper := filepath.Join(c.m.rootDir(c.rec.ID), "fs", "upper")
	for _, d := range []string{filepath.Dir(upper), upper} {
		if err := os.Mkdir(d, 0o755); err != nil && !errors.Is(err, os.ErrExist) { //nolint:gosec // the container's "/"
			return err
		}
	}
	images, err := os.OpenRoot(c.m.ctrStateDir(c.rec.ID))
	if err != nil {
		return err
	}
	defer func() { _ = images.Close() }()
	if err := images.Mkdir(checkpointImagesDir, 0o700); err != nil {
		return err
	}
	var deleted []string
	seen := false
	err = c.rec.Restore.walk(func(hdr *tar.Header, r io.Reader) error {
		if err := ctx.Err(); err != nil {
			return err
		}
		switch {
		case strings.HasPrefix(hdr.Name, checkpointImagesDir+"/"):
			return unpackImageFile(images, hdr, r)
		case hdr.Name == checkpointRootfs:
			if err := unpackBounded(r, hdr.Size, upper); err != nil { // restore_guard.go
				return fmt.Errorf("%w: checkpoint %s: %s: %v", ErrInvalid, c.rec.Restore.Archive, checkpointRootfs, err)
			}
		case hdr.Name == checkpointConfigName:
			seen = true
			if data, err := io.ReadAll(io.LimitReader(r, maxCheckpointMeta)); err != nil || metaSum(data) != c.rec.Restore.metaSum {
				return fmt.Errorf("%w: checkpoint %s changed while it was read", ErrInvalid, c.rec.Restore.Archive)
			}
		case hdr.Name == checkpointDeleted:
			data, err := io.ReadAll(io.LimitReader(r, maxCheckpointMeta))
			if err == nil {
				err = json.Unmarshal(data, &deleted)
			}
			if err != nil {
				return fmt.Errorf("%w: checkpoint %s: bad %s: %v", ErrInvalid, c.rec.Restore.Archive, checkpointDeleted, err)
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	if !seen {
		return fmt.Errorf("%w: checkpoint %s changed while it was read", ErrInvalid, c.rec.Restore.Archive)
	}
	return whiteout(upper, deleted)
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

// startRestored is StartContainer of a container created from a
// checkpoint: the pod's monitor has CRIU restore the dumped processes
// (they become its children); nothing new is started.
func (m *Manager) startRestored(ctx context.Context, c *Container, pod PodInfo) (monitor.Response, error) {
	dir := m.ctrStateDir(c.ID())
	logDir, logName := "", ""
	if c.rec.LogPath != "" {
		logDir, logName = pod.LogDirectory, filepath.Clean(c.rec.Config.LogPath)
	}
	start := time.Now()
	resp, err := monitor.Call(ctx, monitor.SocketPath(pod.MonitorDir), monitor.Request{
		Op: monitor.OpRestore, ID: c.ID(),
		Create: &monitor.CreateRequest{
			Bundle: dir, Dir: dir, RuncRoot: m.runcRoot(), LogDir: logDir, LogPath: logName,
			Stdin: c.rec.Config.Stdin, StdinOnce: c.rec.Config.StdinOnce,
			Checkpoint: filepath.Join(dir, checkpointImagesDir),
		},
	})
	if err != nil {
		if !errors.Is(err, monitor.ErrUnavailable) {
			// CRIU refused: the pod cannot hold what was dumped (an address
			// it does not have, say). The container stays CREATED, removable.
			err = fmt.Errorf("%w: %v", ErrFailedPrecondition, err)
		}
		return resp, fmt.Errorf("restore container %s from %s: %w%s", c.ID(), c.rec.Restore.Archive, err,
			criuLogErrors(filepath.Join(dir, "criu-restore", "restore.log")))
	}
	ref, err := proc.RefOf(resp.Container.PID)
	if err != nil {
		return resp, fmt.Errorf("restored init %d: %w", resp.Container.PID, err)
	}
	if _, err := c.update(func(s Status) Status { s.Init = ref; return s }); err != nil {
		return resp, err
	}
	// The images are in the processes now; the archive keeps them.
	if err := os.RemoveAll(filepath.Join(dir, checkpointImagesDir)); err != nil {
		m.log.Warn("remove restored CRIU images", "container", c.ID(), "err", err)
	}
	m.log.Info("container restored", "pod", c.rec.PodID, "container", c.ID(), "archive", c.rec.Restore.Archive,
		"took", time.Since(start).Round(time.Millisecond).String())
	return resp, nil
}

// stopUnrestored stops a restore container whose StartContainer has not
// restored it: there is no process, it just becomes exited.
func (m *Manager) stopUnrestored(c *Container) error {
	_, err := c.update(func(s Status) Status {
		return exited(s, &monitor.Exit{Code: 128 + int(unix.SIGKILL), FinishedAt: time.Now()})
	})
	return err
}

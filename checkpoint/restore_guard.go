package checkpoint

import (
	"archive/tar"
	"crypto/sha256"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/moby/go-archive"
	"golang.org/x/sys/unix"
)

// What a restore refuses of a hostile request or archive (docs/DESIGN.md,
// "Restore: threat model"): another namespace's checkpoint, a path that is
// not a regular file (never opened: a FIFO would block, a device act), an
// archive whose entries expand beyond its own size (sparse bombs), an
// archive that changes between the two passes over it.

// podNamespaceLabel is the label the kubelet puts on every container: the
// namespace of its pod. A checkpoint records it; only a pod of the same
// namespace may restore it.
const podNamespaceLabel = "io.kubernetes.pod.namespace"

// errExpands is an archive entry that would write more than the archive
// holds: only sparse tar entries can, and no minicri archive has them.
var errExpands = fmt.Errorf("%w: expands to more than the archive holds (sparse entry)", ErrInvalid)

// checkNamespace refuses a checkpoint taken in another pod namespace than
// the one of the container restoring it: the kubelet writes every pod's
// checkpoints to one directory, and a tenant names any path as its image.
func checkNamespace(meta *checkpointMeta, labels map[string]string, src string) error {
	if ns := labels[podNamespaceLabel]; meta.PodNamespace != ns {
		return fmt.Errorf("%w: checkpoint %s was taken in pod namespace %q, not %q", ErrPermissionDenied, src, meta.PodNamespace, ns)
	}
	return nil
}

// errNotArchive is every refusal of a host path before its config.dump is
// read: a missing path, a link, a directory, a device, a file that is no
// tar, a tar that is no checkpoint. The image field is the tenant's: told
// apart, these probed which host files exist and what they are.
var errNotArchive = fmt.Errorf("%w: not a checkpoint archive (a regular file, a tar holding %s and CRIU images)", ErrInvalid, checkpointConfigName)

// hideHostPath is err as the tenant sees it: an ErrInvalid of reading
// path becomes errNotArchive (a sparse bomb is still told: only an
// archive made to be one has sparse entries).
func hideHostPath(path string, err error) error {
	if errors.Is(err, ErrInvalid) && !errors.Is(err, errExpands) {
		return fmt.Errorf("checkpoint %s: %w", path, errNotArchive)
	}
	return err
}

// openArchive opens the regular file at path for reading, and its size.
// The path is looked at with O_PATH first: a FIFO, device, directory or
// (last-component) symlink is refused without being opened.
func openArchive(path string) (*os.File, int64, error) {
	fd, err := unix.Open(path, unix.O_PATH|unix.O_NOFOLLOW|unix.O_CLOEXEC, 0)
	if err != nil {
		return nil, 0, fmt.Errorf("%w: checkpoint archive %s: %v", ErrInvalid, path, err)
	}
	defer func() { _ = unix.Close(fd) }()
	var st unix.Stat_t
	if err := unix.Fstat(fd, &st); err != nil {
		return nil, 0, fmt.Errorf("checkpoint archive %s: %w", path, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG {
		return nil, 0, fmt.Errorf("%w: checkpoint archive %s is not a regular file", ErrInvalid, path)
	}
	f, err := os.Open("/proc/self/fd/" + strconv.Itoa(fd))
	if err != nil {
		return nil, 0, fmt.Errorf("checkpoint archive %s: %w", path, err)
	}
	return f, st.Size, nil
}

// budget counts the entry sizes of a tar stream against a limit.
type budget struct{ left int64 }

func (b *budget) take(hdr *tar.Header) error {
	if hdr.Size < 0 || hdr.Size > b.left {
		return fmt.Errorf("%w: entry %q", errExpands, hdr.Name)
	}
	b.left -= hdr.Size
	return nil
}

// unpackBounded unpacks the tar stream r (an entry of size limit) into
// dest with go-archive (os.Root-confined), through a copy that fails on
// entries adding up to more than limit (sparse ones) and drops trusted.*
// extended attributes (overlayfs's).
func unpackBounded(r io.Reader, limit int64, dest string) error {
	pr, pw := io.Pipe()
	done := make(chan error, 1)
	go func() {
		err := copyBounded(pw, r, limit)
		pw.CloseWithError(err)
		done <- err
	}()
	err := archive.Unpack(pr, dest, &archive.TarOptions{})
	_ = pr.Close() // a copy still writing stops
	if cerr := <-done; cerr != nil && !errors.Is(cerr, io.ErrClosedPipe) {
		return cerr
	}
	return err
}

func copyBounded(w io.Writer, r io.Reader, limit int64) error {
	tr, tw := tar.NewReader(r), tar.NewWriter(w)
	b := &budget{left: limit}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return err
		}
		if err := b.take(hdr); err != nil {
			return err
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "SCHILY.xattr.trusted.") {
				delete(hdr.PAXRecords, k)
			}
		}
		hdr.Xattrs = nil //nolint:staticcheck // deprecated mirror of PAXRecords
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if _, err := io.Copy(tw, tr); err != nil { //nolint:gosec // bounded by the budget
			return err
		}
	}
}

// metaSum is the digest of a config.dump: the second pass over an archive
// must see the one the first pass checked.
func metaSum(data []byte) [sha256.Size]byte { return sha256.Sum256(data) }

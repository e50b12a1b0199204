package image

import (
	"bufio"
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/klauspost/compress/gzip"
	"github.com/klauspost/compress/zstd"
	"github.com/moby/go-archive"

	"github.com/minicri/minicri/internal/atomicfile"
)

// ErrBadLayer is the cause of a pull whose layer, as the image names it
// (its digest verified), does not unpack: a tar error, an entry that would
// escape the layer, a hard link to nothing, a diff ID that does not match.
var ErrBadLayer = errors.New("layer does not unpack")

// badLayer marks an unpack error of verified content as the image's fault.
func badLayer(err error) error {
	if errors.Is(err, ErrLayerTooLarge) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return fmt.Errorf("%w: %w", ErrBadLayer, err)
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// decompress detects gzip and zstd by their magic numbers (registries do
// not always label layers right); anything else is taken as a plain tar.
func decompress(r io.Reader) (io.ReadCloser, error) {
	br := bufio.NewReaderSize(r, 1<<20)
	head, err := br.Peek(4)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, err
	}
	switch {
	case bytes.HasPrefix(head, gzipMagic):
		return gzip.NewReader(br)
	case bytes.HasPrefix(head, zstdMagic):
		d, err := zstd.NewReader(br, zstd.WithDecoderConcurrency(1))
		if err != nil {
			return nil, err
		}
		return d.IOReadCloser(), nil
	default:
		return io.NopCloser(br), nil
	}
}

// unpackLayer unpacks the (compressed) layer r into a new temporary
// directory under the layers directory, in overlayfs form: whiteouts become
// 0/0 character devices and opaque directories get trusted.overlay.opaque=y.
// Entries that would escape the directory (../, absolute or escaping
// symlinks and hardlinks) fail the unpack. A layer that breaks the pull's
// limits lim fails with ErrLayerTooLarge. It checks the uncompressed
// digest against diffID and returns the directory, which the caller renames
// into place; on error nothing is left. lowers (nil for none) gives the
// directories of the layers below, for hard links to their files
// (lowerlink.go); usedLowers says the directory depends on them.
func (s *Store) unpackLayer(ctx context.Context, r io.Reader, diffID string, lim *pullLimits,
	lowers func(context.Context) ([]string, error)) (dir string, usedLowers bool, err error) {
	tmp, err := os.MkdirTemp(s.layDir, ".tmp-"+strings.TrimPrefix(diffID, "sha256:")[:12]+"-")
	if err != nil {
		return "", false, err
	}
	defer func() {
		if err != nil {
			_ = os.RemoveAll(tmp)
		}
	}()
	// A layer's root is an overlay lower dir, so part of the container's
	// "/": a non-root container user must search it. The layer store above it
	// is 0700 (nothing there is reachable by host users).
	if err := os.Chmod(tmp, 0o755); err != nil { //nolint:gosec // see above
		return "", false, err
	}
	compressed := &countingReader{r: &ctxReader{ctx: ctx, r: r}, n: &lim.compressed}
	dr, err := decompress(compressed)
	if err != nil {
		return "", false, fmt.Errorf("decompress: %w", err)
	}
	defer dr.Close()
	h := sha256.New()
	tr := io.TeeReader(dr, h)
	ll := &lowerLinks{lowers: lowers, ctx: ctx, names: newLayerNames()}
	if err := unpackLimited(tr, tmp, &layerCharge{p: lim}, ll); err != nil {
		if cerr := contextErr(ctx); cerr != nil {
			return "", false, cerr
		}
		return "", false, err
	}
	// The tar end marker and any padding count in the diff ID.
	if _, err := io.Copy(io.Discard, tr); err != nil {
		return "", false, err
	}
	if got := "sha256:" + hex.EncodeToString(h.Sum(nil)); got != diffID {
		return "", false, fmt.Errorf("layer diff ID mismatch: got %s, want %s", got, diffID)
	}
	return tmp, ll.used, nil
}

// unpackLimited unpacks the tar stream in into dir through a filter that
// charges lc (see filterLayer).
func unpackLimited(in io.Reader, dir string, lc *layerCharge, ll *lowerLinks) error {
	pr, pw := io.Pipe()
	filterErr := make(chan error, 1)
	go func() {
		err := filterLayer(in, pw, lc, ll)
		_ = pw.CloseWithError(err)
		filterErr <- err
	}()
	err := archive.Unpack(pr, dir, &archive.TarOptions{WhiteoutFormat: archive.OverlayWhiteoutFormat})
	_ = pr.CloseWithError(io.ErrClosedPipe) // unblocks the filter if Unpack stopped early
	ferr := <-filterErr
	switch {
	case ferr != nil && !errors.Is(ferr, io.ErrClosedPipe):
		return ferr // the cause: a limit, or a tar or decompression error
	case err != nil:
		return fmt.Errorf("unpack: %w", err)
	}
	return nil
}

// commitLayerDir renames an unpacked temporary directory into place. If a
// concurrent run put the layer there first, its copy stays.
func (s *Store) commitLayerDir(tmp, dir string) error {
	if err := atomicfile.SyncDir(tmp); err != nil {
		_ = os.RemoveAll(tmp)
		return err
	}
	if err := os.Rename(tmp, dir); err != nil {
		_ = os.RemoveAll(tmp)
		if exists(dir) {
			return nil
		}
		if errors.Is(err, fs.ErrExist) {
			return nil
		}
		return err
	}
	return atomicfile.SyncDir(filepath.Dir(dir))
}

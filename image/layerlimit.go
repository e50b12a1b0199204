package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
)

// ErrLayerTooLarge is the cause of a pull whose layers unpack to more than
// the store allows (Config.MaxLayerSize, MaxImageSize, MaxLayerRatio,
// MaxEntries): a decompression bomb, a sparse-file bomb, an inode bomb, or
// an image too big for the node.
var ErrLayerTooLarge = errors.New("layer too large")

// ErrImageTooLarge is the cause of a pull of an image with too many layers
// or whose layers together break a limit; errors.Is sees ErrLayerTooLarge
// in it too.
var ErrImageTooLarge = fmt.Errorf("image too large (%w)", ErrLayerTooLarge)

const (
	// DefaultMaxLayerSize applies when Config.MaxLayerSize is zero.
	DefaultMaxLayerSize = 32 << 30
	// DefaultMaxImageSize applies when Config.MaxImageSize is zero.
	DefaultMaxImageSize = 64 << 30
	// DefaultMaxLayerRatio applies when Config.MaxLayerRatio is zero.
	DefaultMaxLayerRatio = 100
	// DefaultMaxLayers applies when Config.MaxLayers is zero: overlayfs
	// stacks at most 500 lower directories.
	DefaultMaxLayers = 500
	// DefaultMaxEntries applies when Config.MaxEntries is zero.
	DefaultMaxEntries = 1 << 20
	// ratioAllowance is what an image may unpack to whatever its
	// compressed size: small layers of zeros, a large sparse file early in
	// a layer.
	ratioAllowance = 1 << 30
	// entryBlock is the least an entry costs, whatever its size: a block
	// (a directory's, a file's last) and an inode.
	entryBlock = 4 << 10
)

// pullLimits bound what one pull may unpack: each layer (maxLayer) and
// all the layers it unpacks together (the rest). Sizes are charged as the
// disk will take them: every entry at least entryBlock, a file's content
// rounded up to a whole block, sparse files expanded.
type pullLimits struct {
	maxLayer   int64 // <= 0: none
	maxImage   int64 // <= 0: none
	maxEntries int64 // <= 0: none
	ratio      int64 // <= 0: none
	allowance  int64 // bytes allowed beyond ratio, once per pull

	unpacked   atomic.Int64 // bytes charged so far
	compressed atomic.Int64 // compressed bytes read so far
	entries    atomic.Int64
}

func (s *Store) newPullLimits() *pullLimits {
	return &pullLimits{maxLayer: s.cfg.MaxLayerSize, maxImage: s.cfg.MaxImageSize, maxEntries: s.cfg.MaxEntries,
		ratio: int64(s.cfg.MaxLayerRatio), allowance: s.ratioAllowance}
}

// checkLayers fails for an image of more layers than the store takes.
func (s *Store) checkLayers(n int) error {
	if s.cfg.MaxLayers > 0 && n > s.cfg.MaxLayers {
		return fmt.Errorf("%w: %d layers, more than %d (registry.max_layers)", ErrImageTooLarge, n, s.cfg.MaxLayers)
	}
	return nil
}

// layerCharge is one layer's account with its pull's limits.
type layerCharge struct {
	p *pullLimits
	n int64 // bytes charged to this layer
}

// charge adds n bytes and fails if they, with declared bytes still to
// come (counted against the size limits only), break a limit.
func (l *layerCharge) charge(n, declared int64) error {
	l.n += n
	total := l.p.unpacked.Add(n)
	p := l.p
	if p.maxLayer > 0 && l.n+declared > p.maxLayer {
		return fmt.Errorf("%w: unpacks to more than %d bytes, the limit (registry.max_layer_size)", ErrLayerTooLarge, p.maxLayer)
	}
	if p.maxImage > 0 && total+declared > p.maxImage {
		return fmt.Errorf("%w: its layers unpack to more than %d bytes, the limit (registry.max_image_size)", ErrImageTooLarge, p.maxImage)
	}
	if p.ratio > 0 {
		if c := p.compressed.Load(); total > p.allowance+p.ratio*c {
			return fmt.Errorf("%w: its layers unpack to more than %d times their compressed size (%d bytes from %d; limit registry.max_layer_ratio)",
				ErrImageTooLarge, p.ratio, total, c)
		}
	}
	return nil
}

// entry counts one more entry.
func (l *layerCharge) entry() error {
	if n := l.p.entries.Add(1); l.p.maxEntries > 0 && n > l.p.maxEntries {
		return fmt.Errorf("%w: more than %d files and directories (registry.max_entries)", ErrImageTooLarge, l.p.maxEntries)
	}
	return nil
}

// entryOverhead is what an entry costs beyond its content's bytes: the
// rest of its last block (at least one block), its names and extended
// attributes.
func entryOverhead(hdr *tar.Header) int64 {
	size := max(hdr.Size, 0)
	blocks := max(entryBlock, (size+entryBlock-1)/entryBlock*entryBlock)
	extra := int64(len(hdr.Name) + len(hdr.Linkname))
	for k, v := range hdr.PAXRecords {
		extra += int64(len(k) + len(v))
	}
	return blocks - size + extra
}

// filterLayer copies the tar stream in to out, entry by entry, and stops
// with ErrLayerTooLarge as soon as an entry's declared size or the bytes
// written break a limit. The copy is what gets unpacked: sparse files come
// out expanded (and counted so), as the unpacker would write them. With
// ll, a hard link to a file of a lower layer is preceded by a copy of it
// (see lowerlink.go), charged like any entry.
func filterLayer(in io.Reader, out io.Writer, lc *layerCharge, ll *lowerLinks) error {
	tr := tar.NewReader(in)
	tw := tar.NewWriter(out)
	cw := &chargeWriter{w: tw, lc: lc}
	emit := func(hdr *tar.Header, body io.Reader) error {
		if err := lc.entry(); err != nil {
			return err
		}
		if err := lc.charge(entryOverhead(hdr), max(hdr.Size, 0)); err != nil {
			return fmt.Errorf("entry %q: %w", sanitizeRemote(hdr.Name, 200), err)
		}
		if err := tw.WriteHeader(hdr); err != nil {
			return fmt.Errorf("entry %q: %w", sanitizeRemote(hdr.Name, 200), err)
		}
		if body == nil {
			return nil
		}
		// cw charges every byte to the pull's limits and stops at the
		// first one over (ErrLayerTooLarge): no decompression bomb gets through.
		_, err := io.Copy(cw, body) //nolint:gosec // see above
		return err
	}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		if hdr.Typeflag == tar.TypeGNUSparse {
			hdr.Typeflag = tar.TypeReg
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				delete(hdr.PAXRecords, k)
			}
		}
		if ll != nil && hdr.Typeflag == tar.TypeLink {
			if err := ll.prepare(hdr, emit); err != nil {
				return err
			}
		}
		if err := emit(hdr, tr); err != nil {
			return err
		}
		if ll != nil {
			ll.names.record(hdr)
		}
	}
}

// chargeWriter charges what is written and fails once a limit breaks.
type chargeWriter struct {
	w  io.Writer
	lc *layerCharge
}

func (w *chargeWriter) Write(p []byte) (int, error) {
	if err := w.lc.charge(int64(len(p)), 0); err != nil {
		return 0, err
	}
	return w.w.Write(p)
}

// countingReader counts the bytes read through it into n.
type countingReader struct {
	r io.Reader
	n *atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

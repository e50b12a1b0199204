package image

import (
	"archive/tar"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync/atomic"
)

// ErrLayerTooLarge is the cause of a pull whose layer unpacks to more than
// the store allows (Config.MaxLayerSize, Config.MaxLayerRatio): a
// decompression bomb, a sparse-file bomb, or a layer too big for the node.
var ErrLayerTooLarge = errors.New("layer too large")

const (
	// DefaultMaxLayerSize applies when Config.MaxLayerSize is zero.
	DefaultMaxLayerSize = 32 << 30
	// DefaultMaxLayerRatio applies when Config.MaxLayerRatio is zero.
	DefaultMaxLayerRatio = 100
	// ratioAllowance is what any layer may unpack to whatever its
	// compressed size: small layers of zeros, a large sparse file early in
	// a layer.
	ratioAllowance = 1 << 30
)

// layerLimits bound what one layer may unpack to.
type layerLimits struct {
	maxSize   int64 // bytes of tar stream, sparse files expanded; <= 0: none
	ratio     int64 // <= 0: none
	allowance int64 // bytes allowed beyond ratio

	compressed *countingReader // compressed bytes read so far
}

func (s *Store) layerLimits(compressed *countingReader) layerLimits {
	return layerLimits{maxSize: s.cfg.MaxLayerSize, ratio: int64(s.cfg.MaxLayerRatio), allowance: s.ratioAllowance, compressed: compressed}
}

// check fails if n bytes unpacked so far break a limit; declared bytes
// (still to come) count against the size limit only.
func (l layerLimits) check(n, declared int64) error {
	if l.maxSize > 0 && n+declared > l.maxSize {
		return fmt.Errorf("%w: unpacks to more than %d bytes, the limit (registry.max_layer_size)", ErrLayerTooLarge, l.maxSize)
	}
	if l.ratio > 0 && l.compressed != nil {
		if c := l.compressed.n.Load(); n > l.allowance+l.ratio*c {
			return fmt.Errorf("%w: unpacks to more than %d times its compressed size (%d bytes from %d; limit registry.max_layer_ratio)",
				ErrLayerTooLarge, l.ratio, n, c)
		}
	}
	return nil
}

// filterLayer copies the tar stream in to out, entry by entry, and stops
// with ErrLayerTooLarge as soon as an entry's declared size or the bytes
// written break a limit. The copy is what gets unpacked: sparse files come
// out expanded (and counted so), as the unpacker would write them.
func filterLayer(in io.Reader, out io.Writer, lim layerLimits) error {
	cw := &limitWriter{w: out, lim: lim}
	tr := tar.NewReader(in)
	tw := tar.NewWriter(cw)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return tw.Close()
		}
		if err != nil {
			return fmt.Errorf("read layer: %w", err)
		}
		if err := lim.check(cw.n, max(hdr.Size, 0)); err != nil {
			return fmt.Errorf("entry %q: %w", sanitizeRemote(hdr.Name, 200), err)
		}
		if hdr.Typeflag == tar.TypeGNUSparse {
			hdr.Typeflag = tar.TypeReg
		}
		for k := range hdr.PAXRecords {
			if strings.HasPrefix(k, "GNU.sparse.") {
				delete(hdr.PAXRecords, k)
			}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			if errors.Is(err, ErrLayerTooLarge) {
				return err
			}
			return fmt.Errorf("entry %q: %w", sanitizeRemote(hdr.Name, 200), err)
		}
		// tw writes through limitWriter, which stops a layer at its size
		// cap (ErrLayerTooLarge): no decompression bomb gets through.
		if _, err := io.Copy(tw, tr); err != nil { //nolint:gosec // see above
			return err
		}
	}
}

// limitWriter counts what is written and fails once a limit breaks.
type limitWriter struct {
	w   io.Writer
	lim layerLimits
	n   int64
}

func (w *limitWriter) Write(p []byte) (int, error) {
	if err := w.lim.check(w.n+int64(len(p)), 0); err != nil {
		return 0, err
	}
	n, err := w.w.Write(p)
	w.n += int64(n)
	return n, err
}

// countingReader counts the bytes read through it.
type countingReader struct {
	r io.Reader
	n atomic.Int64
}

func (c *countingReader) Read(p []byte) (int, error) {
	n, err := c.r.Read(p)
	c.n.Add(int64(n))
	return n, err
}

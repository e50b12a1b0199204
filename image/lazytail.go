package image

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/containerd/stargz-snapshotter/estargz"

	"github.com/minicri/minicri/lazy"
)

// tailProbe is how much of a layer blob's end the probe of its source reads:
// the footer and, for most layers, the whole TOC, which lazyfs then reads
// from what the daemon hands it rather than asking the registry twice more.
const tailProbe = 64 << 10

// maxTail bounds the blob's end the daemon reads for lazyfs; a bigger TOC
// lazyfs reads itself.
const maxTail = 8 << 20

// readTail reads the end of an eStargz blob: its last tailProbe bytes (all
// but the first byte of a smaller blob) and,
// when the footer there says the TOC starts before them, the rest of the
// TOC with a second request. Nothing of it is trusted here: lazyfs checks
// the TOC against the manifest's digest, and reads again from the registry
// what does not check out; a footer that does not parse gives the first
// read's bytes alone.
func readTail(ctx context.Context, hb *lazy.HTTPBlob) ([]byte, error) {
	// Never the whole blob: a registry that ignores ranges answers that
	// with a 200 as good as a 206, and lazyfs needs ranges.
	n := max(min(hb.Len-1, tailProbe), 1)
	buf := make([]byte, n)
	if _, err := hb.ReadAt(ctx, buf, hb.Len-n); err != nil {
		return nil, err
	}
	tocOff, _, err := estargz.OpenFooter(io.NewSectionReader(tailReader{b: buf, size: hb.Len}, 0, hb.Len))
	if err != nil || tocOff < 0 || tocOff >= hb.Len-n || hb.Len-tocOff > maxTail {
		return buf, nil
	}
	more := make([]byte, hb.Len-n-tocOff)
	if _, err := hb.ReadAt(ctx, more, tocOff); err != nil {
		return buf, nil //nolint:nilerr // the endpoint answered; lazyfs reads the TOC itself
	}
	return append(more, buf...), nil
}

// tailReader reads the last len(b) bytes of a blob of size bytes.
type tailReader struct {
	b    []byte
	size int64
}

func (t tailReader) ReadAt(p []byte, off int64) (int, error) {
	start := t.size - int64(len(t.b))
	if off < start || off > t.size {
		return 0, fmt.Errorf("read at %d: %w", off, errOutsideTail)
	}
	n := copy(p, t.b[off-start:])
	if n < len(p) {
		return n, io.EOF
	}
	return n, nil
}

var errOutsideTail = errors.New("outside the blob's end read")

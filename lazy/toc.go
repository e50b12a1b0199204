package lazy

import (
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/minicri/minicri/internal/atomicfile"
)

// tocFile keeps the blob's end, from the TOC to the footer, in the layer's
// cache directory: a layer reopens without its registry (the TOC is checked
// against the manifest's digest all the same).
const tocFile = "toc"

// maxTOCKeep bounds the kept end of a blob.
const maxTOCKeep = 64 << 20

// tailReaderAt reads the blob for estargz.Open, keeping what it read (the
// footer, the TOC): estargz.OpenFooter then costs no request, and the TOC
// can be saved.
type tailReaderAt struct {
	ctxReaderAt
	size   int64
	mu     sync.Mutex
	pieces []piece
	loaded bool  // the first piece is the kept end of the blob
	err    error // the last failed read's
}

type piece struct {
	off int64
	b   []byte
}

// loadTail starts the reader with the blob's end saved in dir, if any.
func (r *tailReaderAt) loadTail(dir string) {
	b, err := os.ReadFile(filepath.Join(dir, tocFile))
	if err == nil && int64(len(b)) <= r.size {
		r.pieces = append(r.pieces, piece{off: r.size - int64(len(b)), b: b})
		r.loaded = true
	}
}

// addTail adds the blob's end as the caller read it (Options.Tail); like a
// kept end, a TOC that does not check out makes the reader start again
// from the registry.
func (r *tailReaderAt) addTail(b []byte) {
	if len(b) == 0 || int64(len(b)) > r.size || len(b) > maxTOCKeep {
		return
	}
	r.pieces = append(r.pieces, piece{off: r.size - int64(len(b)), b: b})
	r.loaded = true
}

func (r *tailReaderAt) lastErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *tailReaderAt) ReadAt(p []byte, off int64) (int, error) {
	r.mu.Lock()
	for _, pc := range r.pieces {
		if off >= pc.off && off+int64(len(p)) <= pc.off+int64(len(pc.b)) {
			n := copy(p, pc.b[off-pc.off:])
			r.mu.Unlock()
			return n, nil
		}
	}
	r.mu.Unlock()
	n, err := r.ctxReaderAt.ReadAt(p, off)
	r.mu.Lock()
	defer r.mu.Unlock()
	if err != nil {
		r.err = err
	} else if r.size-off <= maxTOCKeep {
		r.pieces = append(r.pieces, piece{off: off, b: append([]byte(nil), p[:n]...)})
	}
	return n, err
}

// saveTail writes the blob's end from off (the TOC's offset) into dir,
// unless it is there already; what was not read yet is read.
func (r *tailReaderAt) saveTail(dir string, off int64) error {
	path := filepath.Join(dir, tocFile)
	if st, err := os.Stat(path); err == nil && st.Size() == r.size-off {
		return nil
	}
	if r.size-off > maxTOCKeep {
		return nil
	}
	b := make([]byte, r.size-off)
	for at := int64(0); at < int64(len(b)); { // the pieces first, then the blob
		n, err := r.ReadAt(b[at:at+r.covered(off+at)], off+at)
		if err != nil {
			return fmt.Errorf("TOC: %w", err)
		}
		at += int64(n)
	}
	return atomicfile.Write(path, b, 0o600)
}

// covered is how many bytes from off one kept piece holds (else all that is
// left of the blob: one read).
func (r *tailReaderAt) covered(off int64) int64 {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, pc := range r.pieces {
		if off >= pc.off && off < pc.off+int64(len(pc.b)) {
			return pc.off + int64(len(pc.b)) - off
		}
	}
	n := r.size - off
	for _, pc := range r.pieces { // up to the next kept piece
		if pc.off > off && pc.off-off < n {
			n = pc.off - off
		}
	}
	return n
}

package lazy

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"

	"github.com/containerd/stargz-snapshotter/estargz"

	"github.com/minicri/minicri/internal/atomicfile"
)

// The cache of a layer, in its directory: data holds every chunk's
// uncompressed bytes at the chunk's pos (a sparse file of the layer's total
// size); state.json says which streams are in it. A stream's bit is saved
// only after its bytes are synced, so a crash loses fetched chunks, never
// marks missing ones present.
const (
	dataFile  = "data"
	stateFile = "state.json"
)

type cacheState struct {
	TOC   string `json:"toc"`
	Total int64  `json:"total"`
	Have  []byte `json:"have"` // a bit per stream
}

// openCache opens (or creates) the data file and loads the saved state when
// it is of this TOC.
func (l *Layer) openCache() error {
	if err := os.MkdirAll(l.opts.Dir, 0o700); err != nil {
		return err
	}
	f, err := os.OpenFile(filepath.Join(l.opts.Dir, dataFile), os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return err
	}
	l.data = f
	l.have = make([]bool, len(l.streams))
	if st, err := f.Stat(); err != nil || st.Size() != l.total {
		return errors.Join(err, f.Truncate(l.total))
	}
	var s cacheState
	if err := atomicfile.ReadJSON(filepath.Join(l.opts.Dir, stateFile), &s); err != nil || s.TOC != l.opts.TOCDigest.String() ||
		s.Total != l.total || len(s.Have) != (len(l.streams)+7)/8 {
		return nil // nothing usable: fetch again
	}
	for i := range l.streams {
		if s.Have[i/8]&(1<<(i%8)) != 0 {
			l.have[i] = true
			l.fetched.Add(l.streamBytes(i))
		}
	}
	return nil
}

// saveState syncs the data file, then records which streams it holds.
func (l *Layer) saveState() error {
	if err := l.data.Sync(); err != nil {
		return fmt.Errorf("lazy cache: sync: %w", err)
	}
	s := cacheState{TOC: l.opts.TOCDigest.String(), Total: l.total, Have: make([]byte, (len(l.streams)+7)/8)}
	l.mu.Lock()
	for i, h := range l.have {
		if h {
			s.Have[i/8] |= 1 << (i % 8)
		}
	}
	l.mu.Unlock()
	if err := atomicfile.WriteJSON(filepath.Join(l.opts.Dir, stateFile), s); err != nil {
		return fmt.Errorf("lazy cache: %w", err)
	}
	return nil
}

func (l *Layer) streamBytes(i int) int64 {
	var n int64
	s := l.streams[i]
	for _, c := range l.chunks[s.first : s.first+s.n] {
		n += c.size
	}
	return n
}

func (l *Layer) haveStream(i int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.have[i]
}

// claim makes the caller the one fetcher of stream i: ok when it is to fetch
// it (then release must follow), else wait is closed when the fetcher that
// holds it is done (nil when the stream is already cached).
func (l *Layer) claim(i int) (ok bool, wait chan struct{}) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.have[i] {
		return false, nil
	}
	if w := l.inflight[i]; w != nil {
		return false, w
	}
	l.inflight[i] = make(chan struct{})
	return true, nil
}

// release ends a claim; done says the stream is now cached.
func (l *Layer) release(i int, done bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if done {
		l.have[i] = true
		l.fetched.Add(l.streamBytes(i))
	}
	close(l.inflight[i])
	delete(l.inflight, i)
}

// store decompresses stream i from its compressed bytes into the data file,
// checking each chunk against its TOC digest. Only a claimed stream is
// written, so no verified byte is ever overwritten.
func (l *Layer) store(i int, compressed []byte) error {
	s := l.streams[i]
	zr, err := (&estargz.GzipDecompressor{}).Reader(bytes.NewReader(compressed))
	if err != nil {
		return fmt.Errorf("%w: stream at %d: %v", ErrCorrupt, s.off, err)
	}
	defer zr.Close()
	var at int64 // uncompressed bytes of the stream consumed
	for _, c := range l.chunks[s.first : s.first+s.n] {
		if c.inner < at {
			return fmt.Errorf("%w: %q: chunks overlap in the stream at %d", ErrCorrupt, c.file.Name, s.off)
		}
		if _, err := io.CopyN(io.Discard, zr, c.inner-at); err != nil {
			return fmt.Errorf("%w: %q: stream at %d: %v", ErrCorrupt, c.file.Name, s.off, err)
		}
		v := c.dig.Verifier()
		cw := &cacheWriter{w: io.NewOffsetWriter(l.data, c.pos)}
		if _, err := io.CopyN(io.MultiWriter(v, cw), zr, c.size); err != nil {
			if cw.err != nil { // the local disk's fault (ENOSPC...), not the blob's
				return fmt.Errorf("lazy cache: %q at %d: %w", c.file.Name, c.fileOff, cw.err)
			}
			return fmt.Errorf("%w: %q at %d: %v", ErrCorrupt, c.file.Name, c.fileOff, err)
		}
		if !v.Verified() {
			return fmt.Errorf("%w: %q at %d (%d bytes, want %s)", ErrCorrupt, c.file.Name, c.fileOff, c.size, c.dig)
		}
		at = c.inner + c.size
	}
	return nil
}

// cacheWriter keeps the error of a write to the cache, to tell it from a
// bad stream's.
type cacheWriter struct {
	w   io.Writer
	err error
}

func (c *cacheWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	if err != nil {
		c.err = err
	}
	return n, err
}

package lazy

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// BlobReader reads a layer blob by ranges: the compressed bytes as the
// registry serves them. ReadAt fills p from off or fails; it returns when ctx
// is done at the latest.
type BlobReader interface {
	ReadAt(ctx context.Context, p []byte, off int64) (int, error)
	Size() int64
}

// ErrRangeRefused is a registry that answers a range request with anything
// but the range: such a layer cannot be read lazily.
var ErrRangeRefused = errors.New("range request refused")

// maxRangeError bounds the error body read from a registry.
const maxRangeError = 4 << 10

// ErrStalled is a range request given up because the registry sent no byte
// for HTTPBlob.Stall (no answer, or a body that stopped).
var ErrStalled = errors.New("registry stalled")

// HTTPBlob reads a blob at URL by HTTP range requests through Client
// (http.DefaultClient when nil), sending Header with each. A request that
// gets no byte for Stall (0: no bound) fails with ErrStalled: a registry
// that accepted it and went away (a wedged proxy, a partition) never
// answers it, and a caller without a deadline (the background fetch) would
// wait on it for ever instead of asking again.
type HTTPBlob struct {
	URL    string
	Header http.Header
	Client *http.Client
	Len    int64
	Stall  time.Duration

	mu     sync.RWMutex // URL and Header, once SetSource is used
	denied atomic.Bool  // the last answer was 401 or 403
}

// SetSource points the blob at a fresh URL and headers (a new token): the
// next requests use them.
func (b *HTTPBlob) SetSource(url string, header http.Header) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.URL, b.Header = url, header
	b.denied.Store(false)
}

// Denied says whether the registry's last answer refused the credentials
// (401, 403): an expired token, which only the daemon can renew.
func (b *HTTPBlob) Denied() bool { return b.denied.Load() }

func (b *HTTPBlob) source() (string, http.Header) {
	b.mu.RLock()
	defer b.mu.RUnlock()
	return b.URL, b.Header
}

// Size is the blob's length, as the manifest says.
func (b *HTTPBlob) Size() int64 { return b.Len }

// ReadAt fetches bytes [off, off+len(p)) with one range request.
func (b *HTTPBlob) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	if off < 0 || off >= b.Len {
		return 0, fmt.Errorf("blob read at %d of %d bytes: %w", off, b.Len, io.EOF)
	}
	want := min(int64(len(p)), b.Len-off)
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	watch := newStallTimer(b.Stall, cancel)
	defer watch.stop()
	url, header := b.source()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return 0, fmt.Errorf("blob request: %w", err)
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("Range", fmt.Sprintf("bytes=%d-%d", off, off+want-1))
	resp, err := b.client().Do(req)
	if err != nil {
		return 0, fmt.Errorf("blob range %d+%d: %w", off, want, stallCause(ctx, err))
	}
	defer resp.Body.Close()
	watch.progress()
	b.denied.Store(resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden)
	if err := checkRange(resp, off, want, b.Len); err != nil {
		return 0, err
	}
	n, err := io.ReadFull(progressReader{resp.Body, watch}, p[:want])
	if err != nil {
		return n, fmt.Errorf("blob range %d+%d: %w", off, want, stallCause(ctx, err))
	}
	if want < int64(len(p)) {
		return n, io.EOF
	}
	return n, nil
}

func (b *HTTPBlob) client() *http.Client {
	if b.Client != nil {
		return b.Client
	}
	return http.DefaultClient
}

// CloseIdle closes the client's idle connections (and their goroutines).
func (b *HTTPBlob) CloseIdle() { b.client().CloseIdleConnections() }

// checkRange accepts a 206 for exactly the range asked, or a 200 when the
// range was the whole blob.
func checkRange(resp *http.Response, off, n, size int64) error {
	switch resp.StatusCode {
	case http.StatusPartialContent:
		want := fmt.Sprintf("bytes %d-%d/", off, off+n-1)
		if cr := resp.Header.Get("Content-Range"); !strings.HasPrefix(cr, want) {
			return fmt.Errorf("%w: Content-Range %q for %s", ErrRangeRefused, cr, strings.TrimSuffix(want, "/"))
		}
		return nil
	case http.StatusOK:
		if off == 0 && n == size {
			return nil
		}
		return fmt.Errorf("%w: 200 with the whole blob for bytes %d+%d", ErrRangeRefused, off, n)
	default:
		body, _ := io.ReadAll(io.LimitReader(resp.Body, maxRangeError))
		return fmt.Errorf("blob range %d+%d: HTTP %d: %s", off, n, resp.StatusCode, strconv.Quote(string(body)))
	}
}

// FileBlob reads a blob from a local file.
type FileBlob struct{ F *os.File }

// Size is the file's length (0 when it cannot be read).
func (b FileBlob) Size() int64 {
	st, err := b.F.Stat()
	if err != nil {
		return 0
	}
	return st.Size()
}

// ReadAt reads the file; ctx is not consulted (a local read does not hang).
func (b FileBlob) ReadAt(_ context.Context, p []byte, off int64) (int, error) {
	return b.F.ReadAt(p, off)
}

// ctxReaderAt is an io.ReaderAt over a BlobReader, each read bound to ctx:
// what estargz.Open reads the footer and the TOC with.
type ctxReaderAt struct {
	ctx context.Context
	b   BlobReader
}

func (r ctxReaderAt) ReadAt(p []byte, off int64) (int, error) { return r.b.ReadAt(r.ctx, p, off) }

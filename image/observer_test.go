package image

import (
	"bytes"
	"fmt"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/minicri/minicri/test/registry/fixture"
)

type pullRecorder struct {
	mu    sync.Mutex
	bytes []int64
	errs  []error
}

func (r *pullRecorder) PullDone(n int64, _ time.Duration, err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.bytes = append(r.bytes, n)
	r.errs = append(r.errs, err)
}

type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}
func (l *lockedBuffer) String() string { l.mu.Lock(); defer l.mu.Unlock(); return l.b.String() }

// A long pull logs its progress at the interval, and the observer is told
// of the bytes each pull downloaded.
func TestPullProgressLogAndObserver(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "obs", "obs")
	push(t, srv, "slow/obs:1", ti.img)
	blob := ti.layers[1].Blob
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ti.layers[1].DigestString()) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		chunk := len(blob)/4 + 1
		for i := 0; i < len(blob); i += chunk {
			_, _ = w.Write(blob[i:min(i+chunk, len(blob))])
			w.(http.Flusher).Flush()
			time.Sleep(400 * time.Millisecond)
		}
		return true
	})
	logs := &lockedBuffer{}
	rec := &pullRecorder{}
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Observer: rec,
		Logger: slog.New(slog.NewJSONHandler(logs, nil)), ProgressInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Pull(ctxT(t), srv.Host+"/slow/obs:1", nil); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(logs.String(), `"msg":"pulling image"`) {
		t.Errorf("no progress line in the log:\n%s", logs)
	}
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if len(rec.bytes) != 1 || rec.errs[0] != nil || rec.bytes[0] < int64(len(blob)) {
		t.Fatalf("observer: bytes %v errs %v (layer %d bytes)", rec.bytes, rec.errs, len(blob))
	}
}

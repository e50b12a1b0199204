package main

import (
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/minicri/minicri/test/registry/fixture"
)

// registry is the offline fixture registry, with one fault: arm() makes the
// next blob GET send half its body and then stall until the client gives up
// (or stallFor passes), as a registry that hangs mid-layer does.
type registry struct {
	srv *fixture.Server

	mu       sync.Mutex
	armed    bool
	stallFor time.Duration
	onStall  func(path string)
}

func startRegistry() (*registry, error) {
	entries, err := fixture.BuildCatalog(fixture.CatalogOptions{})
	if err != nil {
		return nil, err
	}
	srv, err := fixture.Start("127.0.0.1:0", fixture.Options{})
	if err != nil {
		return nil, err
	}
	if err := srv.Publish(entries); err != nil {
		_ = srv.Close()
		return nil, err
	}
	r := &registry{srv: srv}
	srv.SetIntercept(r.intercept)
	return r, nil
}

func writeHosts(dir, url string) error { return fixture.WriteHostsDir(dir, url) }

// arm makes the next blob GET stall for d; onStall is told when one does.
func (r *registry) arm(d time.Duration, onStall func(path string)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.armed, r.stallFor, r.onStall = true, d, onStall
}

func (r *registry) intercept(w http.ResponseWriter, req *http.Request) bool {
	if req.Method != http.MethodGet || !strings.Contains(req.URL.Path, "/blobs/") {
		return false
	}
	r.mu.Lock()
	armed, d, tell := r.armed, r.stallFor, r.onStall
	r.armed = false
	r.mu.Unlock()
	if !armed {
		return false
	}
	rec := &bufferWriter{header: http.Header{}}
	r.srv.Handler().ServeHTTP(rec, req.Clone(req.Context()))
	if rec.code != 0 && rec.code != http.StatusOK {
		return false // e.g. a redirect: not a body to stall in
	}
	for k, v := range rec.header {
		w.Header()[k] = v
	}
	w.WriteHeader(http.StatusOK)
	_, _ = w.Write(rec.body[:len(rec.body)/2])
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if tell != nil {
		tell(req.URL.Path)
	}
	select {
	case <-req.Context().Done():
	case <-time.After(d):
	}
	return true
}

// bufferWriter records a response of the registry (blobs here are small).
type bufferWriter struct {
	header http.Header
	code   int
	body   []byte
}

func (b *bufferWriter) Header() http.Header { return b.header }
func (b *bufferWriter) WriteHeader(c int)   { b.code = c }
func (b *bufferWriter) Write(p []byte) (int, error) {
	b.body = append(b.body, p...)
	return len(p), nil
}

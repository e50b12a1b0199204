package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/minicri/minicri/lazy"
)

// LazyBlob returns a lazy.BlobReader over layer blob digest (size bytes) of
// ref's repository: HTTP range requests to the registry's blob URL through
// the transport of a normal pull, i.e. the hosts.toml endpoints with the
// pull capability in their order, the pull's credentials (basic or token
// auth, as the registry asks) and each endpoint's TLS settings. A read goes
// to the endpoint that answered the last one and moves down the list when
// that endpoint fails; it fails only when every endpoint did.
func (s *Store) LazyBlob(ctx context.Context, ref string, auth *AuthConfig, digest string, size int64) (lazy.BlobReader, error) {
	pr, err := parseReference(ref)
	if err != nil {
		return nil, err
	}
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("lazy blob of %s: digest %q: %w", pr.String(), digest, err)
	}
	eps, err := loadEndpoints(s.cfg.RegistryConfigPath, pr.Registry)
	if err != nil {
		return nil, fmt.Errorf("registry hosts for %s: %w", pr.Registry, err)
	}
	repo, err := name.NewRepository(placeholderHost+"/"+pr.Repo, name.WeakValidation)
	if err != nil {
		return nil, fmt.Errorf("%w: %q: %v", ErrInvalidReference, ref, err)
	}
	p := &puller{s: s, ref: pr, repo: repo, eps: eps, auth: auth}
	rb := &rangeBlob{
		p:    p,
		url:  "https://" + repo.RegistryStr() + "/v2/" + repo.RepositoryStr() + "/blobs/" + h.String(),
		size: size,
		eps:  p.endpointsWith(capPull),
	}
	if len(rb.eps) == 0 {
		return nil, fmt.Errorf("no registry host for layer %s of %s", digest, pr.String())
	}
	rb.clients = make([]*http.Client, len(rb.eps))
	rb.recs = make([]*recordTransport, len(rb.eps))
	return rb, nil
}

// rangeBlob is LazyBlob's reader. The authenticated client of an endpoint
// is made on its first read (a token server is asked then) and kept.
type rangeBlob struct {
	p    *puller
	url  string
	size int64
	eps  []int // endpoint indexes, in the order to try

	mu      sync.Mutex
	cur     int                // position in eps of the endpoint to try first
	clients []*http.Client     // by position in eps
	recs    []*recordTransport // the clients' innermost wrappers, by position in eps
}

// Size is the blob's length, as the manifest says.
func (b *rangeBlob) Size() int64 { return b.size }

// ReadAt reads [off, off+len(p)) with one range request per endpoint tried.
// An error wraps lazy.ErrRangeRefused when an endpoint refused the range
// (and none served it).
func (b *rangeBlob) ReadAt(ctx context.Context, p []byte, off int64) (int, error) {
	b.mu.Lock()
	first := b.cur
	b.mu.Unlock()
	var errs []error
	for k := range b.eps {
		pos := (first + k) % len(b.eps)
		c, err := b.client(ctx, pos)
		if err == nil {
			hb := &lazy.HTTPBlob{URL: b.url, Client: c, Len: b.size}
			var n int
			if n, err = hb.ReadAt(ctx, p, off); err == nil || errors.Is(err, io.EOF) {
				b.mu.Lock()
				b.cur = pos
				b.mu.Unlock()
				return n, err
			}
		}
		if cerr := contextErr(ctx); cerr != nil {
			return 0, cerr
		}
		ep := b.p.eps[b.eps[pos]]
		b.p.s.log.Debug("image: lazy blob read failed, trying next host", "image", b.p.ref.String(), "host", ep.String(), "error", err)
		errs = append(errs, fmt.Errorf("%s: %w", ep, endpointError(err, ep)))
	}
	return 0, fmt.Errorf("lazy blob of %s: %w", b.p.ref.String(), errors.Join(errs...))
}

// client returns the authenticated client of the endpoint at pos in eps.
func (b *rangeBlob) client(ctx context.Context, pos int) (*http.Client, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if c := b.clients[pos]; c != nil {
		return c, nil
	}
	ep := b.p.eps[b.eps[pos]]
	base, err := ep.httpTransport()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ep, err)
	}
	rec := &recordTransport{next: &rewriteTransport{registryHost: b.p.repo.RegistryStr(), ep: ep, base: base}}
	scopes := []string{b.p.repo.Scope(transport.PullScope)}
	at, err := transport.NewWithContext(ctx, b.p.repo.Registry, b.p.authenticator(ep), rec, scopes)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: at}
	b.clients[pos], b.recs[pos] = c, rec
	return c, nil
}

// CloseIdle closes the idle connections of every endpoint's client.
func (b *rangeBlob) CloseIdle() {
	b.mu.Lock()
	defer b.mu.Unlock()
	for _, c := range b.clients {
		if c != nil {
			c.CloseIdleConnections()
		}
	}
}

// ErrNoLazySource is an endpoint whose settings a lazy.Source cannot carry
// (client certificates, skip_verify, more than one CA file).
var ErrNoLazySource = errors.New("endpoint settings a lazyfs source cannot carry")

// LazySource is where minicri-lazyfs, a process of its own, can read the
// blob that LazyBlob reads: the first endpoint, in hosts.toml order, that
// answers a range request for the blob's last byte, as its URL and the
// headers this process sent to it (hosts.toml's and the Authorization the
// registry accepted: basic credentials, or a token as the token server
// issued it, which lazyfs cannot renew). An endpoint with settings a
// Source cannot carry is skipped (ErrNoLazySource when no other one
// answers).
func (s *Store) LazySource(ctx context.Context, ref string, auth *AuthConfig, digest string, size int64) (lazy.Source, error) {
	br, err := s.LazyBlob(ctx, ref, auth, digest, size)
	if err != nil {
		return lazy.Source{}, err
	}
	b := br.(*rangeBlob)
	defer b.CloseIdle()
	var errs []error
	for pos := range b.eps {
		ep := b.p.eps[b.eps[pos]]
		src, err := b.source(ctx, pos)
		if err == nil {
			return src, nil
		}
		if cerr := contextErr(ctx); cerr != nil {
			return lazy.Source{}, cerr
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, endpointError(err, ep)))
	}
	return lazy.Source{}, fmt.Errorf("lazy source of layer %s of %s: %w", digest, b.p.ref.String(), errors.Join(errs...))
}

// source probes the endpoint at pos in eps and returns its Source.
func (b *rangeBlob) source(ctx context.Context, pos int) (lazy.Source, error) {
	ep := b.p.eps[b.eps[pos]]
	if ep.SkipVerify || len(ep.ClientCerts) > 0 || len(ep.CAs) > 1 {
		return lazy.Source{}, ErrNoLazySource
	}
	if b.size <= 0 {
		return lazy.Source{}, fmt.Errorf("blob size %d", b.size)
	}
	c, err := b.client(ctx, pos)
	if err != nil {
		return lazy.Source{}, err
	}
	hb := &lazy.HTTPBlob{URL: b.url, Client: c, Len: b.size}
	if _, err := hb.ReadAt(ctx, make([]byte, 1), b.size-1); err != nil {
		return lazy.Source{}, err
	}
	req := b.recs[pos].lastRequest()
	if req == nil {
		return lazy.Source{}, errors.New("no request to the registry recorded")
	}
	out := b.recs[pos].next.endpointRequest(req)
	h := out.Header.Clone()
	h.Del("Range")
	h.Del("User-Agent")
	src := lazy.Source{URL: out.URL.String(), Header: h, Size: b.size}
	if len(ep.CAs) == 1 {
		src.CAFile = ep.CAs[0]
	}
	return src, nil
}

// recordTransport keeps the last request to the registry's /v2/ API that
// passes it, as the authenticating transport above it sent it.
type recordTransport struct {
	next *rewriteTransport

	mu   sync.Mutex
	last *http.Request
}

func (t *recordTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == t.next.registryHost && strings.HasPrefix(req.URL.Path, "/v2/") {
		t.mu.Lock()
		t.last = req
		t.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

func (t *recordTransport) lastRequest() *http.Request {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last
}

package image

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
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
	lc, err := s.newLazyClients(ref, auth)
	if err != nil {
		return nil, err
	}
	return lc.blob(digest, size)
}

// lazyClients are the authenticated clients of a repository's range
// requests, one per endpoint, made on its first use (a token server is
// asked then) and shared by every blob of a pull: its layers ask the
// registry for a token once, not once each.
type lazyClients struct {
	p   *puller
	eps []int // endpoint indexes, in the order to try

	mu      sync.Mutex
	clients []*http.Client     // by position in eps
	recs    []*recordTransport // the clients' innermost wrappers, by position in eps
	probes  map[string]*probe  // source's answers, by blob digest
}

// probe is source's answer for one blob, once it is done.
type probe struct {
	done chan struct{}
	src  lazy.Source
	tail []byte
	err  error
}

// newLazyClients makes the (not yet connected) clients of ref's repository.
func (s *Store) newLazyClients(ref string, auth *AuthConfig) (*lazyClients, error) {
	pr, err := parseReference(ref)
	if err != nil {
		return nil, err
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
	lc := &lazyClients{p: p, eps: p.endpointsWith(capPull)}
	if len(lc.eps) == 0 {
		return nil, fmt.Errorf("no registry host for %s", pr.String())
	}
	lc.clients = make([]*http.Client, len(lc.eps))
	lc.recs = make([]*recordTransport, len(lc.eps))
	return lc, nil
}

// blob is the reader of layer blob digest (size bytes).
func (lc *lazyClients) blob(digest string, size int64) (*rangeBlob, error) {
	h, err := v1.NewHash(digest)
	if err != nil {
		return nil, fmt.Errorf("lazy blob of %s: digest %q: %w", lc.p.ref.String(), digest, err)
	}
	repo := lc.p.repo
	return &rangeBlob{lc: lc, size: size,
		url: "https://" + repo.RegistryStr() + "/v2/" + repo.RepositoryStr() + "/blobs/" + h.String()}, nil
}

// client returns the authenticated client of the endpoint at pos in eps.
func (lc *lazyClients) client(ctx context.Context, pos int) (*http.Client, error) {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	if c := lc.clients[pos]; c != nil {
		return c, nil
	}
	ep := lc.p.eps[lc.eps[pos]]
	base, err := ep.httpTransport()
	if err != nil {
		return nil, fmt.Errorf("%s: %w", ep, err)
	}
	rec := &recordTransport{next: &rewriteTransport{registryHost: lc.p.repo.RegistryStr(), ep: ep, base: base}}
	scopes := []string{lc.p.repo.Scope(transport.PullScope)}
	at, err := transport.NewWithContext(ctx, lc.p.repo.Registry, lc.p.authenticator(ep), rec, scopes)
	if err != nil {
		return nil, err
	}
	c := &http.Client{Transport: at}
	lc.clients[pos], lc.recs[pos] = c, rec
	return c, nil
}

// CloseIdle closes the idle connections of every endpoint's client.
func (lc *lazyClients) CloseIdle() {
	lc.mu.Lock()
	defer lc.mu.Unlock()
	for _, c := range lc.clients {
		if c != nil {
			c.CloseIdleConnections()
		}
	}
}

// rangeBlob is LazyBlob's reader.
type rangeBlob struct {
	lc   *lazyClients
	url  string
	size int64

	mu  sync.Mutex
	cur int // position in lc.eps of the endpoint to try first
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
	lc := b.lc
	var errs []error
	for k := range lc.eps {
		pos := (first + k) % len(lc.eps)
		c, err := lc.client(ctx, pos)
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
		ep := lc.p.eps[lc.eps[pos]]
		lc.p.s.log.Debug("image: lazy blob read failed, trying next host", "image", lc.p.ref.String(), "host", ep.String(), "error", err)
		errs = append(errs, fmt.Errorf("%s: %w", ep, endpointError(err, ep)))
	}
	return 0, fmt.Errorf("lazy blob of %s: %w", lc.p.ref.String(), errors.Join(errs...))
}

// CloseIdle closes the idle connections of the blob's clients.
func (b *rangeBlob) CloseIdle() { b.lc.CloseIdle() }

// ErrNoLazySource is an endpoint whose settings a lazy.Source cannot carry
// (client certificates, skip_verify, more than one CA file).
var ErrNoLazySource = errors.New("endpoint settings a lazyfs source cannot carry")

// LazySource is where minicri-lazyfs, a process of its own, can read the
// blob that LazyBlob reads: see lazyClients.source.
func (s *Store) LazySource(ctx context.Context, ref string, auth *AuthConfig, digest string, size int64) (lazy.Source, error) {
	lc, err := s.newLazyClients(ref, auth)
	if err != nil {
		return lazy.Source{}, err
	}
	defer lc.CloseIdle()
	src, _, err := lc.source(ctx, digest, size)
	return src, err
}

// source is where minicri-lazyfs can read blob digest, and the blob's end
// (its footer and TOC, see readTail) as read to find it: the first
// endpoint, in hosts.toml order, that answers a range request for the
// blob's end, as its URL and the headers this process sent to it
// (hosts.toml's and the Authorization the registry accepted: basic
// credentials, or a token as the token server issued it, which lazyfs
// cannot renew). An endpoint with settings a Source cannot carry is skipped
// (ErrNoLazySource when no other one answers).
func (lc *lazyClients) source(ctx context.Context, digest string, size int64) (lazy.Source, []byte, error) {
	lc.mu.Lock()
	pr, asked := lc.probes[digest]
	if !asked {
		if lc.probes == nil {
			lc.probes = map[string]*probe{}
		}
		pr = &probe{done: make(chan struct{})}
		lc.probes[digest] = pr
	}
	lc.mu.Unlock()
	if !asked {
		pr.src, pr.tail, pr.err = lc.probeSource(ctx, digest, size)
		if pr.err != nil && contextErr(ctx) != nil { // its caller gave up: the next one asks again
			lc.mu.Lock()
			delete(lc.probes, digest)
			lc.mu.Unlock()
		}
		close(pr.done)
		return pr.src, pr.tail, pr.err
	}
	select {
	case <-pr.done:
		lc.mu.Lock()
		dropped := lc.probes[digest] != pr
		lc.mu.Unlock()
		if dropped {
			return lc.source(ctx, digest, size)
		}
		return pr.src, pr.tail, pr.err
	case <-ctx.Done():
		return lazy.Source{}, nil, ctx.Err()
	}
}

// probeSource is source's work, for one blob.
func (lc *lazyClients) probeSource(ctx context.Context, digest string, size int64) (lazy.Source, []byte, error) {
	b, err := lc.blob(digest, size)
	if err != nil {
		return lazy.Source{}, nil, err
	}
	var errs []error
	for pos := range lc.eps {
		ep := lc.p.eps[lc.eps[pos]]
		src, tail, err := b.source(ctx, pos)
		if err == nil {
			return src, tail, nil
		}
		if cerr := contextErr(ctx); cerr != nil {
			return lazy.Source{}, nil, cerr
		}
		errs = append(errs, fmt.Errorf("%s: %w", ep, endpointError(err, ep)))
	}
	return lazy.Source{}, nil, fmt.Errorf("lazy source of layer %s of %s: %w", digest, lc.p.ref.String(), errors.Join(errs...))
}

// source probes the endpoint at pos in eps, reading the blob's end, and
// returns its Source and that end.
func (b *rangeBlob) source(ctx context.Context, pos int) (lazy.Source, []byte, error) {
	lc := b.lc
	ep := lc.p.eps[lc.eps[pos]]
	if ep.SkipVerify || len(ep.ClientCerts) > 0 || len(ep.CAs) > 1 {
		return lazy.Source{}, nil, ErrNoLazySource
	}
	if b.size <= 0 {
		return lazy.Source{}, nil, fmt.Errorf("blob size %d", b.size)
	}
	c, err := lc.client(ctx, pos)
	if err != nil {
		return lazy.Source{}, nil, err
	}
	hb := &lazy.HTTPBlob{URL: b.url, Client: c, Len: b.size}
	tail, err := readTail(ctx, hb)
	if err != nil {
		return lazy.Source{}, nil, err
	}
	req := lc.recs[pos].lastRequest(b.url)
	if req == nil {
		return lazy.Source{}, nil, errors.New("no request to the registry recorded")
	}
	out := lc.recs[pos].next.endpointRequest(req)
	h := out.Header.Clone()
	h.Del("Range")
	h.Del("User-Agent")
	src := lazy.Source{URL: out.URL.String(), Header: h, Size: b.size}
	if len(ep.CAs) == 1 {
		src.CAFile = ep.CAs[0]
	}
	return src, tail, nil
}

// recordTransport keeps the last request to each path of the registry's
// /v2/ API that passes it, as the authenticating transport above it sent it.
type recordTransport struct {
	next *rewriteTransport

	mu   sync.Mutex
	last map[string]*http.Request // by URL path
}

func (t *recordTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == t.next.registryHost && strings.HasPrefix(req.URL.Path, "/v2/") {
		t.mu.Lock()
		if t.last == nil {
			t.last = map[string]*http.Request{}
		}
		t.last[req.URL.Path] = req
		t.mu.Unlock()
	}
	return t.next.RoundTrip(req)
}

// lastRequest is the last request recorded for rawURL's path.
func (t *recordTransport) lastRequest(rawURL string) *http.Request {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.last[u.Path]
}

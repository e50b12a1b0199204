package image

import (
	"fmt"
	"io"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// rewriteTransport sends the requests that go-containerregistry addresses to
// the registry (https://<registry>/v2/...) to one endpoint instead: a mirror
// or the upstream server, with its scheme, host, API root and headers.
// Requests to other hosts (token servers, redirect targets) go where they
// say, if the policy of realm.go lets them.
type rewriteTransport struct {
	registryHost string // the host go-containerregistry uses, e.g. index.docker.io
	ep           endpoint
	base         *http.Transport
	progress     *pullProgress
	reached      atomic.Int32 // 1 + addrClass of the endpoint's first address; 0 until then (see endpointClass)
}

// realmPrefix marks a token-server URL that rewriteTransport encoded into
// the placeholder host (see rewriteRealm).
const realmPrefix = "/.minicri-realm/"

// maxErrorBody bounds the error bodies read from a registry.
const maxErrorBody = 64 << 10

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var err error
	switch {
	case req.URL.Host == t.registryHost && strings.HasPrefix(req.URL.Path, realmPrefix):
		// A token request to a realm that rewriteRealm encoded, or one that
		// a redirect forged: the policy is checked again either way.
		if req, err = t.realmRequest(req); err != nil {
			return nil, err
		}
		if req, err = t.guard(req); err != nil {
			return nil, err
		}
	case req.URL.Host == t.registryHost && (req.URL.Path == "/v2" || strings.HasPrefix(req.URL.Path, "/v2/")):
		req = t.pinEndpoint(t.endpointRequest(req))
	default:
		// Elsewhere, because the registry said so: a redirect.
		if req, err = t.guard(req); err != nil {
			return nil, err
		}
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode >= 400 {
		resp.Body = limitedBody{ReadCloser: resp.Body, r: io.LimitReader(resp.Body, maxErrorBody)}
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if vals := resp.Header.Values("WWW-Authenticate"); len(vals) > 0 {
			out := make([]string, len(vals))
			for i, v := range vals {
				if out[i], err = t.rewriteRealm(v); err != nil {
					_ = resp.Body.Close()
					return nil, fmt.Errorf("registry %s: %w", t.ep.URL.Host, err)
				}
			}
			resp.Header["Www-Authenticate"] = out
		}
	}
	if t.progress != nil {
		t.progress.touch(0)
		resp.Body = &touchBody{ReadCloser: resp.Body, p: t.progress}
	}
	return resp, nil
}

// endpointRequest points a request for the placeholder's /v2 API at the
// endpoint.
func (t *rewriteTransport) endpointRequest(req *http.Request) *http.Request {
	r := req.Clone(req.Context())
	u := *req.URL
	u.Scheme = t.ep.URL.Scheme
	u.Host = t.ep.URL.Host
	u.Path = t.ep.URL.Path + strings.TrimPrefix(req.URL.Path, "/v2")
	if u.Path == "" {
		u.Path = "/"
	}
	u.RawPath = ""
	r.URL = &u
	r.Host = ""
	for k, v := range t.ep.Header {
		r.Header[k] = v
	}
	return r
}

// realmRequest decodes a request to a realm that rewriteRealm encoded.
func (t *rewriteTransport) realmRequest(req *http.Request) (*http.Request, error) {
	scheme, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, realmPrefix), "/")
	host, p, _ := strings.Cut(rest, "/")
	u := *req.URL
	u.Scheme, u.Host, u.Path, u.RawPath = scheme, host, "/"+p, ""
	if err := t.checkRealm(&u); err != nil {
		return nil, fmt.Errorf("registry %s: %w", t.ep.URL.Host, err)
	}
	r := req.Clone(req.Context())
	r.URL = &u
	r.Host = ""
	return r, nil
}

// limitedBody bounds what is read of a body.
type limitedBody struct {
	io.ReadCloser
	r io.Reader
}

func (b limitedBody) Read(p []byte) (int, error) { return b.r.Read(p) }

// touchBody marks a pull active whenever bytes arrive.
type touchBody struct {
	io.ReadCloser
	p *pullProgress
}

func (b *touchBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	if n > 0 {
		b.p.touch(0)
	}
	return n, err
}

// pullProgress tracks one pull: bytes of layers moved, and the time of the
// last activity for the no-progress timeout.
type pullProgress struct {
	bytes atomic.Int64
	total atomic.Int64
	last  atomic.Int64 // unix nanoseconds
}

func newPullProgress() *pullProgress {
	p := &pullProgress{}
	p.touch(0)
	return p
}

func (p *pullProgress) touch(n int64) {
	if n > 0 {
		p.bytes.Add(n)
	}
	p.last.Store(time.Now().UnixNano())
}

func (p *pullProgress) idle() time.Duration {
	return time.Since(time.Unix(0, p.last.Load()))
}

// progressSet is the set of pulls waiting on one shared download: every byte
// it moves counts as progress for each of them.
type progressSet struct {
	mu   sync.Mutex
	subs map[*pullProgress]int
}

func (s *progressSet) add(p *pullProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs == nil {
		s.subs = map[*pullProgress]int{}
	}
	s.subs[p]++
}

func (s *progressSet) remove(p *pullProgress) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.subs[p]--; s.subs[p] <= 0 {
		delete(s.subs, p)
	}
}

func (s *progressSet) touch(n int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for p := range s.subs {
		p.touch(n)
	}
}

// countingWriter reports bytes written to a progressSet.
type countingWriter struct{ set *progressSet }

func (w countingWriter) Write(b []byte) (int, error) {
	w.set.touch(int64(len(b)))
	return len(b), nil
}

var realmRE = regexp.MustCompile(`(?i)(realm=")([^"]*)(")`)

// rewriteRealm points a bearer challenge's token-server URL at the
// placeholder host, so that go-containerregistry accepts it (it refuses
// realms on private addresses and plain HTTP for hosts it believes are
// secure, but a registry or mirror on a private network, or on localhost,
// legitimately has its token server there too); RoundTrip sends the token
// request to the real URL. A realm the policy of realm.go refuses fails the
// request.
func (t *rewriteTransport) rewriteRealm(challenge string) (string, error) {
	if scheme, _, _ := strings.Cut(strings.TrimSpace(challenge), " "); !strings.EqualFold(scheme, "bearer") {
		return challenge, nil // Basic: the realm is a name, not a URL
	}
	var err error
	out := realmRE.ReplaceAllStringFunc(challenge, func(m string) string {
		sub := realmRE.FindStringSubmatch(m)
		u, perr := url.Parse(sub[2])
		if perr != nil {
			err = fmt.Errorf("token realm %s: unparsable", quoteRemote(sub[2]))
			return m
		}
		if cerr := t.checkRealm(u); cerr != nil {
			err = cerr
			return m
		}
		nu := url.URL{Scheme: "https", Host: t.registryHost, Path: realmPrefix + u.Scheme + "/" + u.Host + u.EscapedPath(), RawQuery: u.RawQuery}
		return sub[1] + nu.String() + sub[3]
	})
	return out, err
}

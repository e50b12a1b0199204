package image

import (
	"io"
	"net"
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
// Requests to other hosts (token servers) pass through untouched.
type rewriteTransport struct {
	registryHost string // the host go-containerregistry uses, e.g. index.docker.io
	ep           endpoint
	base         http.RoundTripper
	progress     *pullProgress
}

// realmPrefix marks a token-server URL that rewriteTransport encoded into
// the placeholder host (see rewriteRealm).
const realmPrefix = "/.minicri-realm/"

func (t *rewriteTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Host == t.registryHost && strings.HasPrefix(req.URL.Path, realmPrefix) {
		// A token request to a realm that rewriteRealm encoded.
		scheme, rest, _ := strings.Cut(strings.TrimPrefix(req.URL.Path, realmPrefix), "/")
		host, p, _ := strings.Cut(rest, "/")
		r := req.Clone(req.Context())
		u := *req.URL
		u.Scheme, u.Host, u.Path, u.RawPath = scheme, host, "/"+p, ""
		r.URL = &u
		r.Host = ""
		req = r
	} else if req.URL.Host == t.registryHost && (req.URL.Path == "/v2" || strings.HasPrefix(req.URL.Path, "/v2/")) {
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
		req = r
	}
	resp, err := t.base.RoundTrip(req)
	if err != nil {
		return nil, err
	}
	if resp.StatusCode == http.StatusUnauthorized {
		if vals := resp.Header.Values("WWW-Authenticate"); len(vals) > 0 {
			out := make([]string, len(vals))
			for i, v := range vals {
				out[i] = t.rewriteRealm(v)
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
// request to the real URL. Link-local realms (cloud metadata services) are
// left alone, and refused.
func (t *rewriteTransport) rewriteRealm(challenge string) string {
	return realmRE.ReplaceAllStringFunc(challenge, func(m string) string {
		sub := realmRE.FindStringSubmatch(m)
		u, err := url.Parse(sub[2])
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
			return m
		}
		if ip := net.ParseIP(strings.Trim(u.Hostname(), "[]")); ip != nil && (ip.IsLinkLocalUnicast() || ip.IsLinkLocalMulticast()) {
			return m
		}
		nu := url.URL{Scheme: "https", Host: t.registryHost, Path: realmPrefix + u.Scheme + "/" + u.Host + u.EscapedPath(), RawQuery: u.RawQuery}
		return sub[1] + nu.String() + sub[3]
	})
}

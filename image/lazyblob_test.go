package image

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// readAll reads a BlobReader in pieces of n bytes.
func readAll(t *testing.T, b lazy.BlobReader, n int) []byte {
	t.Helper()
	var out []byte
	for off := int64(0); off < b.Size(); off += int64(n) {
		p := make([]byte, n)
		got, err := b.ReadAt(ctxT(t), p, off)
		if err != nil && !errors.Is(err, io.EOF) {
			t.Fatalf("ReadAt %d: %v", off, err)
		}
		out = append(out, p[:got]...)
	}
	return out
}

// LazyBlob reads a layer by ranges with the pull's credentials: basic auth,
// a registry token, token auth with a password or an identity token.
func TestLazyBlobAuth(t *testing.T) {
	for name, tc := range map[string]struct {
		opts fixture.Options
		auth *AuthConfig
	}{
		"anonymous":      {fixture.Options{}, nil},
		"basic":          {fixture.Options{Username: "bob", Password: "pw"}, &AuthConfig{Username: "bob", Password: "pw"}},
		"registry token": {fixture.Options{Username: "bob", Password: "pw", Token: "tok"}, &AuthConfig{RegistryToken: "tok"}},
		"token auth":     {fixture.Options{TokenAuth: true, Username: "bob", Password: "pw"}, &AuthConfig{Username: "bob", Password: "pw"}},
		"identity token": {fixture.Options{TokenAuth: true, IdentityToken: "refresh-me"}, &AuthConfig{Username: "<token>", IdentityToken: "refresh-me"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := startRegistry(t, tc.opts)
			ti := makeImage(t, "lazy", "lazy")
			push(t, srv, "lazy/app:1", ti.img)
			s := newStore(t, "", "")
			l := ti.layers[1]
			b, err := s.LazyBlob(ctxT(t), srv.Host+"/lazy/app:1", tc.auth, l.DigestString(), int64(len(l.Blob)))
			if err != nil {
				t.Fatal(err)
			}
			if got := readAll(t, b, 100); !bytes.Equal(got, l.Blob) {
				t.Fatalf("read %d bytes, not the blob's %d", len(got), len(l.Blob))
			}
			// The tail: fewer bytes than asked, io.EOF.
			p := make([]byte, 10)
			n, err := b.ReadAt(ctxT(t), p, int64(len(l.Blob)-3))
			if n != 3 || !errors.Is(err, io.EOF) || !bytes.Equal(p[:3], l.Blob[len(l.Blob)-3:]) {
				t.Fatalf("tail: %d, %v", n, err)
			}
			if srv.BlobGets(l.DigestString()) < 2 {
				t.Fatalf("%d GETs of the blob", srv.BlobGets(l.DigestString()))
			}
		})
	}
	srv := startRegistry(t, fixture.Options{Username: "bob", Password: "pw"})
	ti := makeImage(t, "lazy", "lazy")
	push(t, srv, "lazy/app:1", ti.img)
	l := ti.layers[0]
	b, err := newStore(t, "", "").LazyBlob(ctxT(t), srv.Host+"/lazy/app:1", nil, l.DigestString(), int64(len(l.Blob)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.ReadAt(ctxT(t), make([]byte, 4), 0); err == nil || !strings.Contains(err.Error(), "401") && !strings.Contains(err.Error(), "UNAUTHORIZED") {
		t.Fatalf("anonymous read of a private blob: %v", err)
	}
}

// LazyBlob follows hosts.toml: the mirror first; a mirror that fails or
// refuses ranges gives way to the next host; lazy.ErrRangeRefused when no
// host serves the range.
func TestLazyBlobMirrors(t *testing.T) {
	mirror := startRegistry(t, fixture.Options{})
	upstream := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "lazy", "lazy")
	for _, srv := range []*fixture.Server{mirror, upstream} {
		push(t, srv, "lazy/app:1", ti.img)
	}
	hosts := t.TempDir()
	const host = "registry.example"
	writeHosts(t, hosts, host, fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		upstream.Host, mirror.Host))
	s := newStore(t, "", hosts)
	l := ti.layers[1]
	open := func() lazy.BlobReader {
		b, err := s.LazyBlob(ctxT(t), host+"/lazy/app:1", nil, l.DigestString(), int64(len(l.Blob)))
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	if got := readAll(t, open(), 64); !bytes.Equal(got, l.Blob) {
		t.Fatal("mirror: wrong bytes")
	}
	if mirror.BlobGets(l.DigestString()) == 0 || upstream.BlobGets(l.DigestString()) != 0 {
		t.Fatalf("blob GETs: mirror %d, upstream %d", mirror.BlobGets(l.DigestString()), upstream.BlobGets(l.DigestString()))
	}

	// The mirror ignores Range: the upstream serves the reads.
	ignoreRange := func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/blobs/") && r.Header.Get("Range") != "" {
			w.WriteHeader(http.StatusOK)
			_, _ = w.Write(l.Blob)
			return true
		}
		return false
	}
	mirror.SetIntercept(ignoreRange)
	upstream.ResetCounters()
	if got := readAll(t, open(), 64); !bytes.Equal(got, l.Blob) {
		t.Fatal("upstream: wrong bytes")
	}
	if upstream.BlobGets(l.DigestString()) == 0 {
		t.Fatal("the upstream was not asked")
	}

	// Nobody serves ranges.
	upstream.SetIntercept(ignoreRange)
	_, err := open().ReadAt(ctxT(t), make([]byte, 8), 8)
	if !errors.Is(err, lazy.ErrRangeRefused) {
		t.Fatalf("want ErrRangeRefused, got %v", err)
	}
}

// LazySource hands minicri-lazyfs what it needs to read the blob alone:
// the endpoint's URL and the credentials the registry accepted.
func TestLazySource(t *testing.T) {
	for name, tc := range map[string]struct {
		opts fixture.Options
		auth *AuthConfig
	}{
		"anonymous":  {fixture.Options{}, nil},
		"basic":      {fixture.Options{Username: "bob", Password: "pw"}, &AuthConfig{Username: "bob", Password: "pw"}},
		"token auth": {fixture.Options{TokenAuth: true, Username: "bob", Password: "pw"}, &AuthConfig{Username: "bob", Password: "pw"}},
	} {
		t.Run(name, func(t *testing.T) {
			srv := startRegistry(t, tc.opts)
			ti := makeImage(t, "src", "src")
			push(t, srv, "lazy/app:1", ti.img)
			hosts := t.TempDir()
			const host = "registry.example"
			writeHosts(t, hosts, host, fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n  [host.\"http://%s\".header]\n    X-Mirror = \"yes\"\n",
				srv.Host, srv.Host, srv.Host))
			s := newStore(t, "", hosts)
			l := ti.layers[1]
			src, err := s.LazySource(ctxT(t), host+"/lazy/app:1", tc.auth, l.DigestString(), int64(len(l.Blob)))
			if err != nil {
				t.Fatal(err)
			}
			if !strings.HasPrefix(src.URL, srv.URL+"/v2/lazy/app/blobs/") || src.Header.Get("X-Mirror") != "yes" || src.Size != int64(len(l.Blob)) {
				t.Fatalf("source %+v", src)
			}
			if (tc.auth != nil) != (src.Header.Get("Authorization") != "") {
				t.Fatalf("Authorization %q", src.Header.Get("Authorization"))
			}
			hb := &lazy.HTTPBlob{URL: src.URL, Header: src.Header, Len: src.Size}
			defer hb.CloseIdle()
			if got := readAll(t, hb, 100); !bytes.Equal(got, l.Blob) {
				t.Fatal("wrong bytes through the source")
			}
		})
	}
	// An endpoint whose TLS settings a source cannot carry.
	hosts := t.TempDir()
	writeHosts(t, hosts, "registry.example", "server = \"https://127.0.0.1:1\"\n[host.\"https://127.0.0.1:1\"]\n  capabilities = [\"pull\"]\n  skip_verify = true\n")
	_, err := newStore(t, "", hosts).LazySource(ctxT(t), "registry.example/lazy/app:1", nil, "sha256:"+strings.Repeat("a", 64), 10)
	if !errors.Is(err, ErrNoLazySource) {
		t.Fatalf("skip_verify: %v", err)
	}
}

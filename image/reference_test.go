package image

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// References containerd rejects (github.com/distribution/reference grammar)
// are rejected: path elements "." and "..", empty elements, a "." tag, and a
// name that is too long once normalised (found by FuzzNormalizeReference).
func TestNormalizeReferenceRejectsOutsideGrammar(t *testing.T) {
	for _, bad := range []string{
		".", "..", "../foo", "..:5000/foo", "a.b/../x", "a//b", "a/./b", "x/..", "reg.example/a/..",
		"0:.", "busybox:.", "busybox:-x", "reg.example:5000/a/", "/a", "a/", ".:5000/a",
		strings.Repeat("0", 248), "reg.example/" + strings.Repeat("a", 256),
	} {
		if got, err := NormalizeReference(bad); !errors.Is(err, ErrInvalidReference) {
			t.Errorf("NormalizeReference(%q) = %q, %v; want ErrInvalidReference", bad, got, err)
		}
	}
}

// A pull of "../app" must not take its registry configuration from the
// hosts.toml next to (outside) the certs.d directory: the reference is
// refused before any file is read.
func TestPullDotDotRegistryStaysInCertsDir(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "evil", "evil")
	push(t, srv, "app:latest", ti.img)
	parent := t.TempDir()
	certsd := filepath.Join(parent, "certs.d")
	if err := os.Mkdir(certsd, 0o755); err != nil {
		t.Fatal(err)
	}
	// <certs.d>/../hosts.toml: what registry ".." would read.
	if err := os.WriteFile(filepath.Join(parent, "hosts.toml"), []byte(`server = "http://`+srv.Host+`"`), 0o644); err != nil {
		t.Fatal(err)
	}
	s := newStore(t, "", certsd)
	for _, ref := range []string{"../app", "../app:latest"} {
		img, err := s.Pull(ctxT(t), ref, nil)
		if err == nil {
			t.Fatalf("Pull(%q) = %+v through %s/hosts.toml, want ErrInvalidReference", ref, img, parent)
		}
		if !errors.Is(err, ErrInvalidReference) {
			t.Fatalf("Pull(%q): %v, want ErrInvalidReference", ref, err)
		}
	}
}

// Whatever host string reaches it, the hosts.toml lookup stays inside the
// config directory (defence in depth behind the reference grammar).
func TestLoadEndpointsStaysInConfigDir(t *testing.T) {
	parent := t.TempDir()
	certsd := filepath.Join(parent, "certs.d")
	if err := os.Mkdir(certsd, 0o755); err != nil {
		t.Fatal(err)
	}
	evil := `server = "https://evil.example"`
	for _, dir := range []string{parent, filepath.Join(parent, "x"), filepath.Join(parent, "x_1_")} {
		writeHosts(t, dir, "", evil)
	}
	writeHosts(t, filepath.Join(certsd, "a"), "", evil)
	for _, host := range []string{
		"..", "../x", "../x:1", "a/..", "a/../..", "a/b", "/abs", ".", "", "x/../../x", "..\x00",
		"a:1/..", "_default/../..",
	} {
		eps, err := loadEndpoints(certsd, host)
		for _, e := range eps {
			if e.URL.Host == "evil.example" {
				t.Fatalf("loadEndpoints(%q) read a hosts.toml outside %s: %v", host, certsd, eps)
			}
		}
		if !errors.Is(err, ErrInvalidReference) {
			t.Errorf("loadEndpoints(%q) = %v, %v; want ErrInvalidReference", host, eps, err)
		}
	}
}

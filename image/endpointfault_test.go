package image

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// mirrorPair starts a mirror and an upstream registry, both serving
// entries, and writes hosts.toml for host: the mirror first.
func mirrorPair(t *testing.T, host string, entries []fixture.Entry) (mirror, upstream *fixture.Server, hosts string) {
	t.Helper()
	mirror = startRegistry(t, fixture.Options{})
	upstream = startRegistry(t, fixture.Options{})
	for _, srv := range []*fixture.Server{mirror, upstream} {
		if err := srv.Publish(entries); err != nil {
			t.Fatal(err)
		}
	}
	hosts = t.TempDir()
	writeHosts(t, hosts, host, fmt.Sprintf("server = \"http://%s\"\n[host.\"http://%s\"]\n  capabilities = [\"pull\", \"resolve\"]\n",
		upstream.Host, mirror.Host))
	return mirror, upstream, hosts
}

// An image whose layers download and verify fine but do not unpack (the
// hostile corpus: escapes, a decompression bomb) fails the pull at the
// first host: the layer is not downloaded again from the next one, whose
// bytes would be the same.
func TestUnpackErrorIsNotEndpointFault(t *testing.T) {
	target := t.TempDir()
	if err := os.WriteFile(filepath.Join(target, fixture.HostileVictim), []byte("victim"), 0o600); err != nil {
		t.Fatal(err)
	}
	entries, err := fixture.HostileEntries(baseLayer(t, "hostile"), target)
	if err != nil {
		t.Fatal(err)
	}
	const host = "hostile.example"
	mirror, upstream, hosts := mirrorPair(t, host, entries)
	failed := map[string]bool{}
	for _, e := range entries {
		tag := e.Ref[strings.LastIndex(e.Ref, ":")+1:]
		t.Run(tag, func(t *testing.T) {
			layers, err := e.Image.Layers()
			if err != nil {
				t.Fatal(err)
			}
			top, _ := layers[len(layers)-1].Digest()
			mirror.ResetCounters()
			upstream.ResetCounters()
			s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: hosts, Logger: testLogger(t), MaxLayerSize: 1 << 30})
			if err != nil {
				t.Fatal(err)
			}
			_, err = s.Pull(ctxT(t), host+"/minicri/hostile:"+tag, nil)
			if err == nil {
				return
			}
			failed[tag] = true
			t.Log(err)
			if !errors.Is(err, ErrBadLayer) && !errors.Is(err, ErrLayerTooLarge) {
				t.Errorf("neither ErrBadLayer nor ErrLayerTooLarge: %v", err)
			}
			if n := mirror.BlobGets(top.String()); n != 1 {
				t.Errorf("mirror: %d downloads of the top layer, want 1", n)
			}
			if n := upstream.BlobGets(top.String()); n != 0 {
				t.Errorf("upstream: %d downloads of the top layer after the mirror's failed to unpack, want 0", n)
			}
			if strings.Contains(err.Error(), upstream.Host) {
				t.Errorf("the error names the upstream host: %v", err)
			}
		})
	}
	for _, tag := range []string{fixture.HostileBomb.Tag, "dotdot", "hardlink-rel", "hardlink-abs"} {
		if !failed[tag] {
			t.Errorf("%s did not fail", tag)
		}
	}
}

// A blob whose digest is wrong IS the host's fault: the next host serves
// the layer and the pull succeeds.
func TestCorruptMirrorBlobFallsBackToUpstream(t *testing.T) {
	ti := makeImage(t, "c", "c")
	const host = "corrupt.example"
	mirror, upstream, hosts := mirrorPair(t, host, []fixture.Entry{{Ref: "app/c:1", Image: ti.img}})
	top := ti.layers[1]
	// The mirror serves the top layer's bytes with a flipped byte in the
	// compressed data: it may or may not decompress; the digest is wrong.
	corrupt := append([]byte(nil), top.Blob...)
	corrupt[len(corrupt)/2] ^= 0xff
	mirror.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+top.DigestString()) {
			w.Header().Set("Content-Length", fmt.Sprint(len(corrupt)))
			_, _ = w.Write(corrupt)
			return true
		}
		return false
	})
	s := newStore(t, "", hosts)
	img, err := s.Pull(ctxT(t), host+"/app/c:1", nil)
	if err != nil {
		t.Fatalf("pull: %v", err)
	}
	if n := upstream.BlobGets(top.DigestString()); n != 1 {
		t.Errorf("upstream: %d downloads of the layer the mirror corrupted, want 1", n)
	}
	if got := readFile(t, filepath.Join(img.Layers[1], "app", "c")); got != strings.Repeat("c", 1000) {
		t.Errorf("layer content %q", got[:min(len(got), 20)])
	}
}

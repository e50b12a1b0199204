package image

import (
	"archive/tar"
	"context"
	"encoding/base64"
	"encoding/pem"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/test/registry/fixture"
)

func TestNormalizeReference(t *testing.T) {
	for in, want := range map[string]string{
		"busybox":                                        "docker.io/library/busybox:latest",
		"busybox:1.36":                                   "docker.io/library/busybox:1.36",
		"docker.io/busybox":                              "docker.io/library/busybox:latest",
		"index.docker.io/library/busybox":                "docker.io/library/busybox:latest",
		"user/app:v1":                                    "docker.io/user/app:v1",
		"registry.k8s.io/pause:3.9":                      "registry.k8s.io/pause:3.9",
		"localhost:5000/a/b":                             "localhost:5000/a/b:latest",
		"127.0.0.1:5000/a/b:c":                           "127.0.0.1:5000/a/b:c",
		"busybox@sha256:" + strings.Repeat("a", 64):      "docker.io/library/busybox@sha256:" + strings.Repeat("a", 64),
		"busybox:1.36@sha256:" + strings.Repeat("b", 64): "docker.io/library/busybox@sha256:" + strings.Repeat("b", 64),
		"gcr.io/k8s-staging-cri-tools/test-image-latest": "gcr.io/k8s-staging-cri-tools/test-image-latest:latest",
	} {
		got, err := NormalizeReference(in)
		if err != nil || got != want {
			t.Errorf("NormalizeReference(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "Busybox", "busybox@sha256:abc", "a b", "busybox:", ":tag"} {
		if _, err := NormalizeReference(bad); !errors.Is(err, ErrInvalidReference) {
			t.Errorf("NormalizeReference(%q): err = %v, want ErrInvalidReference", bad, err)
		}
	}
}

func TestPullByTagAndDigest(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "base", "top")
	push(t, srv, "test/app:v1", ti.img)
	s := newStore(t, "", "")
	ctx := ctxT(t)
	ref := srv.Host + "/test/app:v1"
	img, err := s.Pull(ctx, ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	md := manifestDigest(t, ti.img)
	if img.ID != ti.id {
		t.Errorf("ID = %s, want %s", img.ID, ti.id)
	}
	if !slices.Equal(img.RepoTags, []string{ref}) {
		t.Errorf("RepoTags = %v", img.RepoTags)
	}
	if !slices.Equal(img.RepoDigests, []string{srv.Host + "/test/app@" + md}) {
		t.Errorf("RepoDigests = %v", img.RepoDigests)
	}
	if img.User != "1000:1000" || img.Config == nil || img.Config.Config.Cmd[0] != "/bin/tool" {
		t.Errorf("User %q, Config %+v", img.User, img.Config)
	}
	if img.Size == 0 || len(img.Layers) != 2 {
		t.Fatalf("Size %d, Layers %v", img.Size, img.Layers)
	}
	if got := readFile(t, filepath.Join(img.Layers[0], "etc/base")); got != "base" {
		t.Errorf("etc/base = %q", got)
	}
	if got := readFile(t, filepath.Join(img.Layers[1], "app/top")); got != strings.Repeat("top", 1000) {
		t.Errorf("app/top has %d bytes", len(got))
	}
	var st1, st2 unix.Stat_t
	_ = unix.Stat(filepath.Join(img.Layers[0], "bin/tool"), &st1)
	_ = unix.Stat(filepath.Join(img.Layers[0], "bin/tool-link"), &st2)
	if st1.Ino != st2.Ino || st1.Mode&0o777 != 0o755 {
		t.Errorf("hard link not kept: %d vs %d, mode %o", st1.Ino, st2.Ino, st1.Mode)
	}
	if l, _ := os.Readlink(filepath.Join(img.Layers[0], "bin/sym")); l != "/bin/tool" {
		t.Errorf("symlink = %q", l)
	}

	// By digest: same image, no new tag, digest known.
	byDigest := srv.Host + "/test/app@" + md
	img2, err := s.Pull(ctx, byDigest, nil)
	if err != nil {
		t.Fatal(err)
	}
	if img2.ID != img.ID || !slices.Equal(img2.RepoTags, []string{ref}) {
		t.Errorf("by digest: %+v", img2)
	}
	// Status by every kind of reference.
	for _, r := range []string{img.ID, strings.TrimPrefix(img.ID, "sha256:"), img.ID[:19], strings.TrimPrefix(img.ID, "sha256:")[:8], ref, byDigest} {
		got, err := s.Status(r)
		if err != nil || got.ID != img.ID {
			t.Errorf("Status(%q) = %s, %v", r, got.ID, err)
		}
	}
	if _, err := s.Status("busybox"); !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), "busybox") {
		t.Errorf("Status(busybox): %v", err)
	}
	list, err := s.List("")
	if err != nil || len(list) != 1 {
		t.Errorf("List: %v %v", list, err)
	}
	list, _ = s.List(srv.Host + "/test/app")
	if len(list) != 1 {
		t.Errorf("List by repository: %v", list)
	}
	list, _ = s.List(srv.Host + "/test/other")
	if len(list) != 0 {
		t.Errorf("List other: %v", list)
	}
	fi, err := s.FsInfo()
	if err != nil || fi.UsedBytes == 0 || fi.InodesUsed == 0 || fi.Mountpoint == "" || fi.Timestamp == 0 {
		t.Errorf("FsInfo = %+v, %v", fi, err)
	}

	// A complete image is checked with one manifest request, no blobs.
	srv.ResetCounters()
	if _, err := s.Pull(ctx, ref, nil); err != nil {
		t.Fatal(err)
	}
	for _, r := range srv.Requests() {
		if strings.Contains(r, "/blobs/") || (strings.Contains(r, "/manifests/") && !strings.HasSuffix(r, "/manifests/v1")) {
			t.Errorf("re-pull of a complete image asked for %s", r)
		}
	}

	// Records survive a restart.
	s2 := newStore(t, s.cfg.Root, "")
	got, err := s2.Status(ref)
	if err != nil || got.ID != img.ID || got.Config == nil || len(got.Layers) != 2 {
		t.Errorf("after restart: %+v %v", got, err)
	}
}

func TestPullIndexPicksPlatform(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	amd := makeImage(t, "amd", "amd")
	dummy := mustLayer(t, []fixture.File{{Name: "arm64", Body: []byte("dummy")}}, fixture.Gzip)
	arm, err := fixture.Build(fixture.ImageSpec{Arch: "arm64", Variant: "v8", Layers: []*fixture.Layer{dummy}})
	if err != nil {
		t.Fatal(err)
	}
	for _, docker := range []bool{false, true} {
		idx, err := fixture.Index(docker, amd.img, arm)
		if err != nil {
			t.Fatal(err)
		}
		tag := fmt.Sprintf("multi/arch:docker-%v", docker)
		if err := srv.PushIndex(tag, idx); err != nil {
			t.Fatal(err)
		}
		s := newStore(t, "", "")
		img, err := s.Pull(ctxT(t), srv.Host+"/"+tag, nil)
		if err != nil {
			t.Fatal(err)
		}
		if img.ID != amd.id {
			t.Errorf("docker=%v: ID %s, want the amd64 image %s", docker, img.ID, amd.id)
		}
		if want := srv.Host + "/multi/arch@" + manifestDigest(t, idx); !slices.Equal(img.RepoDigests, []string{want}) {
			t.Errorf("RepoDigests %v, want %s (the index)", img.RepoDigests, want)
		}
		// Another platform.
		s2, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), Platform: &v1.Platform{OS: "linux", Architecture: "arm64"}})
		if err != nil {
			t.Fatal(err)
		}
		img2, err := s2.Pull(ctxT(t), srv.Host+"/"+tag, nil)
		if err != nil {
			t.Fatal(err)
		}
		if img2.Config.Architecture != "arm64" || readFile(t, filepath.Join(img2.Layers[0], "arm64")) != "dummy" {
			t.Errorf("arm64 pull: %+v", img2)
		}
	}
}

func TestMirrors(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "m", "m")
	push(t, srv, "e2e/app:1", ti.img)
	// An address nothing listens on: a mirror that is down.
	down := "127.0.0.1:1"

	for name, tc := range map[string]struct {
		host, toml string
	}{
		"mirror down, next mirror answers": {"registry.example.com", fmt.Sprintf(`
server = "https://registry.invalid"
[host."http://%s"]
  capabilities = ["pull", "resolve"]
[host."http://%s"]
  capabilities = ["pull", "resolve"]
  [host."http://%s".header]
    x-test = "yes"
`, down, srv.Host, srv.Host)},
		"mirror down, upstream answers": {"upstream.example", fmt.Sprintf(`
server = "http://%s"
[host."http://%s"]
  capabilities = ["pull", "resolve"]
`, srv.Host, down)},
		"plain http server, no mirrors": {"plain.example:5000", fmt.Sprintf(`server = "http://%s"`, srv.Host)},
		"override_path": {"override.example", fmt.Sprintf(`
server = "https://registry.invalid"
[host."http://%s/v2"]
  capabilities = ["pull", "resolve"]
  override_path = true
`, srv.Host)},
		"_default": {"anything.example", ""},
	} {
		t.Run(name, func(t *testing.T) {
			hosts := t.TempDir()
			if tc.toml != "" {
				writeHosts(t, hosts, tc.host, tc.toml)
			} else {
				writeHosts(t, hosts, "_default", fmt.Sprintf("[host.\"http://%s\"]\n", srv.Host))
			}
			var sawHeader bool
			srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
				if r.Header.Get("x-test") == "yes" {
					sawHeader = true
				}
				return false
			})
			defer srv.SetIntercept(nil)
			s := newStore(t, "", hosts)
			img, err := s.Pull(ctxT(t), tc.host+"/e2e/app:1", nil)
			if err != nil {
				t.Fatal(err)
			}
			if img.ID != ti.id || !slices.Equal(img.RepoTags, []string{tc.host + "/e2e/app:1"}) {
				t.Errorf("got %+v", img)
			}
			if strings.Contains(tc.toml, "x-test") && !sawHeader {
				t.Error("mirror header not sent")
			}
		})
	}

	t.Run("pull-only mirror is not used to resolve tags", func(t *testing.T) {
		hosts := t.TempDir()
		writeHosts(t, hosts, "pullonly.example", fmt.Sprintf(`
server = "http://%s"
[host."http://%s"]
  capabilities = ["pull"]
`, srv.Host, down))
		s := newStore(t, "", hosts)
		if _, err := s.Pull(ctxT(t), "pullonly.example/e2e/app:1", nil); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPlainHTTPLocalhost(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "l", "l")
	push(t, srv, "x/y:z", ti.img)
	_, port, _ := strings.Cut(srv.Host, ":")
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), "localhost:"+port+"/x/y:z", nil)
	if err != nil || img.ID != ti.id {
		t.Fatalf("%+v %v", img, err)
	}
}

func TestAuth(t *testing.T) {
	srv := startRegistry(t, fixture.Options{Username: "alice", Password: "s3cret"})
	ti := makeImage(t, "auth", "auth")
	push(t, srv, "private/app:1", ti.img)
	ref := srv.Host + "/private/app:1"
	ctx := ctxT(t)

	s := newStore(t, "", "")
	_, err := s.Pull(ctx, ref, nil)
	if err == nil || errors.Is(err, ErrNotFound) {
		t.Fatalf("anonymous pull: %v", err)
	}
	if _, err := s.Pull(ctx, ref, &AuthConfig{Username: "alice", Password: "wrong"}); err == nil {
		t.Fatal("bad password accepted")
	}
	if _, err := s.Pull(ctx, ref, &AuthConfig{Username: "alice", Password: "s3cret", ServerAddress: "other.example"}); err == nil {
		t.Fatal("credentials for another server were used")
	}
	img, err := s.Pull(ctx, ref, &AuthConfig{Username: "alice", Password: "s3cret", ServerAddress: "http://" + srv.Host + "/v2/"})
	if err != nil || img.ID != ti.id {
		t.Fatalf("%+v %v", img, err)
	}
	s2 := newStore(t, "", "")
	if _, err := s2.Pull(ctx, ref, &AuthConfig{Auth: base64.StdEncoding.EncodeToString([]byte("alice:s3cret"))}); err != nil {
		t.Fatal(err)
	}
}

func TestRegistryToken(t *testing.T) {
	srv := startRegistry(t, fixture.Options{Username: "x", Password: "y", Token: "tok3n"})
	ti := makeImage(t, "tok", "tok")
	push(t, srv, "private/app:1", ti.img)
	s := newStore(t, "", "")
	if _, err := s.Pull(ctxT(t), srv.Host+"/private/app:1", &AuthConfig{RegistryToken: "wrong"}); err == nil {
		t.Fatal("wrong token accepted")
	}
	if _, err := s.Pull(ctxT(t), srv.Host+"/private/app:1", &AuthConfig{RegistryToken: "tok3n"}); err != nil {
		t.Fatal(err)
	}
}

func TestPinned(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "p", "p")
	push(t, srv, "pause:3.9", ti.img)
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), PinnedImages: []string{srv.Host + "/pause:3.9"}})
	if err != nil {
		t.Fatal(err)
	}
	img, err := s.Pull(ctxT(t), srv.Host+"/pause:3.9", nil)
	if err != nil || !img.Pinned {
		t.Fatalf("pinned: %v %v", img.Pinned, err)
	}
}

func TestPullMissing(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "x", "x")
	push(t, srv, "there/app:1", ti.img)
	s := newStore(t, "", "")
	for _, ref := range []string{srv.Host + "/nothere/app:1", srv.Host + "/there/app:2",
		srv.Host + "/there/app@sha256:" + strings.Repeat("0", 64)} {
		_, err := s.Pull(ctxT(t), ref, nil)
		if !errors.Is(err, ErrNotFound) || !strings.Contains(err.Error(), ref) {
			t.Errorf("Pull(%s): %v", ref, err)
		}
	}
	if _, err := s.Pull(ctxT(t), "Bad/Ref", nil); !errors.Is(err, ErrInvalidReference) {
		t.Errorf("bad ref: %v", err)
	}
}

// assertEmptyStore checks that a failed pull left nothing behind.
func assertEmptyStore(t *testing.T, s *Store, allowBlobs ...string) {
	t.Helper()
	for _, n := range listDir(t, s.layDir) {
		t.Errorf("layer dir left: %s", n)
	}
	for _, n := range listDir(t, s.tmpDir) {
		t.Errorf("temp blob left: %s", n)
	}
	for _, n := range listDir(t, s.imgDir) {
		t.Errorf("record left: %s", n)
	}
	for _, n := range listDir(t, s.blobDir) {
		if !slices.Contains(allowBlobs, "sha256:"+n) {
			t.Errorf("blob left: %s", n)
		}
	}
}

func TestCorruptBlob(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "c", "c")
	push(t, srv, "bad/app:1", ti.img)
	bad := ti.layers[1]
	// Same length, one byte flipped at the end.
	corrupt := append([]byte(nil), bad.Blob...)
	corrupt[len(corrupt)-5] ^= 0xff
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/blobs/"+bad.DigestString()) {
			w.Header().Set("Content-Length", fmt.Sprint(len(corrupt)))
			_, _ = w.Write(corrupt)
			return true
		}
		return false
	})
	s := newStore(t, "", "")
	_, err := s.Pull(ctxT(t), srv.Host+"/bad/app:1", nil)
	if err == nil {
		t.Fatal("corrupt blob accepted")
	}
	t.Log(err)
	// The good base layer may have been stored; the bad one must not.
	if exists(s.blobPath(bad.DigestString())) || exists(s.layerPath(bad.DiffIDString())) {
		t.Error("corrupt layer stored")
	}
	if len(listDir(t, s.imgDir)) != 0 || len(listDir(t, s.tmpDir)) != 0 {
		t.Error("record or temp files left")
	}
	for _, n := range listDir(t, s.layDir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("temp layer dir left: %s", n)
		}
	}
	if _, err := s.Status(srv.Host + "/bad/app:1"); !errors.Is(err, ErrNotFound) {
		t.Errorf("Status: %v", err)
	}
	// Once the registry behaves, the pull succeeds.
	srv.SetIntercept(nil)
	if _, err := s.Pull(ctxT(t), srv.Host+"/bad/app:1", nil); err != nil {
		t.Fatal(err)
	}
}

func TestMaliciousLayers(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	outside := t.TempDir()
	victim := filepath.Join(outside, "victim")
	if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
	rel := func(depth int) string { return strings.Repeat("../", depth) }
	attacks := map[string][]fixture.File{
		"dotdot":   {{Name: rel(12) + strings.TrimPrefix(outside, "/") + "/dotdot", Body: []byte("x")}},
		"absolute": {{Name: outside + "/absolute", Body: []byte("x")}},
		"symlink-dir-abs": {
			{Name: "link", Type: tar.TypeSymlink, Linkname: outside},
			{Name: "link/via-abs-symlink", Body: []byte("x")},
		},
		"symlink-dir-rel": {
			{Name: "link", Type: tar.TypeSymlink, Linkname: rel(12) + strings.TrimPrefix(outside, "/")},
			{Name: "link/via-rel-symlink", Body: []byte("x")},
		},
		"symlink-file-overwrite": {
			{Name: "victimlink", Type: tar.TypeSymlink, Linkname: victim},
			{Name: "victimlink", Body: []byte("overwritten")},
		},
		"hardlink-escape": {
			{Name: "hl", Type: tar.TypeLink, Linkname: rel(12) + strings.TrimPrefix(victim, "/")},
		},
		"hardlink-abs": {
			{Name: "hl", Type: tar.TypeLink, Linkname: victim},
		},
		"hardlink-via-symlink": {
			{Name: "ld", Type: tar.TypeSymlink, Linkname: outside},
			{Name: "hl", Type: tar.TypeLink, Linkname: "ld/victim"},
		},
	}
	s := newStore(t, "", "")
	for name, files := range attacks {
		t.Run(name, func(t *testing.T) {
			l := mustLayer(t, files, fixture.Gzip)
			img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{l}})
			if err != nil {
				t.Fatal(err)
			}
			push(t, srv, "evil/"+name+":1", img)
			pulled, err := s.Pull(ctxT(t), srv.Host+"/evil/"+name+":1", nil)
			t.Logf("pull: %v", err)
			ents := listDir(t, outside)
			if !slices.Equal(ents, []string{"victim"}) {
				t.Errorf("written outside the layer: %v", ents)
			}
			if got := readFile(t, victim); got != "precious" {
				t.Errorf("victim = %q", got)
			}
			if err == nil {
				// Where the library turns the entry into something
				// harmless (absolute names are made relative), the result
				// must be inside the layer.
				var st unix.Stat_t
				if unix.Stat(victim, &st) == nil && st.Nlink != 1 {
					t.Errorf("victim got a hard link from the layer (nlink %d)", st.Nlink)
				}
				t.Logf("accepted, layer at %s", pulled.Layers[0])
			}
		})
	}
}

func TestWhiteoutsAndOpaqueDirs(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	l1 := mustLayer(t, []fixture.File{
		{Name: "a/"}, {Name: "a/gone", Body: []byte("1")}, {Name: "a/kept", Body: []byte("1")},
		{Name: "opq/"}, {Name: "opq/old", Body: []byte("1")},
	}, fixture.Gzip)
	l2 := mustLayer(t, []fixture.File{
		{Name: "a/"}, {Name: "a/.wh.gone", Body: nil},
		{Name: "opq/"}, {Name: "opq/.wh..wh..opq"}, {Name: "opq/new", Body: []byte("2")},
	}, fixture.Uncompressed)
	img, err := fixture.Build(fixture.ImageSpec{Layers: []*fixture.Layer{l1, l2}})
	if err != nil {
		t.Fatal(err)
	}
	push(t, srv, "wh/app:1", img)
	s := newStore(t, "", "")
	got, err := s.Pull(ctxT(t), srv.Host+"/wh/app:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	top := got.Layers[1]
	var st unix.Stat_t
	if err := unix.Lstat(filepath.Join(top, "a/gone"), &st); err != nil {
		t.Fatal(err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFCHR || st.Rdev != 0 {
		t.Errorf("whiteout: mode %o rdev %d", st.Mode, st.Rdev)
	}
	if exists(filepath.Join(top, "a/.wh.gone")) || exists(filepath.Join(top, "opq/.wh..wh..opq")) {
		t.Error("AUFS whiteout files kept")
	}
	buf := make([]byte, 8)
	n, err := unix.Lgetxattr(filepath.Join(top, "opq"), "trusted.overlay.opaque", buf)
	if err != nil || string(buf[:n]) != "y" {
		t.Errorf("opaque xattr: %q %v", buf[:n], err)
	}
	if readFile(t, filepath.Join(top, "opq/new")) != "2" || !exists(filepath.Join(got.Layers[0], "a/gone")) {
		t.Error("layer content")
	}
}

func TestConcurrentPullsShareDownloads(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "cc", "cc")
	push(t, srv, "conc/app:1", ti.img)
	// Slow the blobs down so the pulls overlap.
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.Contains(r.URL.Path, "/blobs/") {
			time.Sleep(200 * time.Millisecond)
		}
		return false
	})
	s := newStore(t, "", "")
	var wg sync.WaitGroup
	errs := make([]error, 4)
	ids := make([]string, 4)
	for i := range errs {
		wg.Go(func() {
			img, err := s.Pull(ctxT(t), srv.Host+"/conc/app:1", nil)
			errs[i], ids[i] = err, img.ID
		})
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil || ids[i] != ti.id {
			t.Fatalf("pull %d: %s %v", i, ids[i], err)
		}
	}
	for _, l := range ti.layers {
		if n := srv.BlobGets(l.DigestString()); n != 1 {
			t.Errorf("layer %s fetched %d times", l.DigestString(), n)
		}
	}
}

func TestRemoveKeepsSharedLayers(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	a := makeImage(t, "shared", "a")
	b := makeImage(t, "shared", "b")
	push(t, srv, "rm/a:1", a.img)
	push(t, srv, "rm/a:2", a.img)
	push(t, srv, "rm/b:1", b.img)
	s := newStore(t, "", "")
	ctx := ctxT(t)
	ia, err := s.Pull(ctx, srv.Host+"/rm/a:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ia2, err := s.Pull(ctx, srv.Host+"/rm/a:2", nil); err != nil || ia2.ID != ia.ID || len(ia2.RepoTags) != 2 {
		t.Fatalf("second tag: %+v %v", ia2, err)
	}
	ib, err := s.Pull(ctx, srv.Host+"/rm/b:1", nil)
	if err != nil {
		t.Fatal(err)
	}
	if ia.Layers[0] != ib.Layers[0] {
		t.Fatalf("base layer not shared: %s vs %s", ia.Layers[0], ib.Layers[0])
	}
	// Remove by one tag removes the image and all its tags.
	if err := s.Remove(srv.Host + "/rm/a:2"); err != nil {
		t.Fatal(err)
	}
	for _, r := range []string{srv.Host + "/rm/a:1", srv.Host + "/rm/a:2", ia.ID} {
		if _, err := s.Status(r); !errors.Is(err, ErrNotFound) {
			t.Errorf("Status(%s) after remove: %v", r, err)
		}
	}
	if !exists(ia.Layers[0]) || exists(ia.Layers[1]) || !exists(ib.Layers[1]) {
		t.Errorf("layers after remove: base %v a %v b %v", exists(ia.Layers[0]), exists(ia.Layers[1]), exists(ib.Layers[1]))
	}
	if exists(s.blobPath(a.layers[1].DigestString())) || exists(s.blobPath(ia.ID)) || !exists(s.blobPath(ib.ID)) {
		t.Error("blobs after remove")
	}
	if got, err := s.Status(srv.Host + "/rm/b:1"); err != nil || got.ID != ib.ID {
		t.Errorf("b: %v", err)
	}
	// Idempotent.
	if err := s.Remove(srv.Host + "/rm/a:1"); err != nil {
		t.Errorf("second remove: %v", err)
	}
	// A lease keeps the layers of a removed image until released.
	if _, err := s.Acquire(ib.ID, "ctr-b"); err != nil {
		t.Fatal(err)
	}
	if err := s.Remove(ib.ID); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Status(ib.ID); !errors.Is(err, ErrNotFound) {
		t.Error("image still listed")
	}
	if !exists(ib.Layers[0]) || !exists(ib.Layers[1]) {
		t.Fatal("leased layers removed")
	}
	if err := s.Release("ctr-b"); err != nil {
		t.Fatal(err)
	}
	if exists(ib.Layers[0]) || exists(ib.Layers[1]) {
		t.Error("layers kept after release")
	}
	assertEmptyStore(t, s)
}

func TestTagMovesToNewImage(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	a := makeImage(t, "t", "a")
	b := makeImage(t, "t", "b")
	push(t, srv, "mv/app:latest", a.img)
	s := newStore(t, "", "")
	ref := srv.Host + "/mv/app:latest"
	if _, err := s.Pull(ctxT(t), ref, nil); err != nil {
		t.Fatal(err)
	}
	push(t, srv, "mv/app:latest", b.img)
	ib, err := s.Pull(ctxT(t), ref, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := s.Status(ref); got.ID != ib.ID {
		t.Errorf("tag points at %s", got.ID)
	}
	old, err := s.Status(a.id)
	if err != nil || len(old.RepoTags) != 0 || len(old.RepoDigests) != 1 {
		t.Errorf("old image: %+v %v", old, err)
	}
}

func TestRestartCleansPartialState(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "r", "r")
	push(t, srv, "restart/app:1", ti.img)
	root := t.TempDir()
	s := newStore(t, root, "")
	// Stall the top layer mid-body, then cancel: the state of a kill.
	stalled := make(chan struct{})
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, ti.layers[1].DigestString()) {
			w.Header().Set("Content-Length", fmt.Sprint(len(ti.layers[1].Blob)))
			_, _ = w.Write(ti.layers[1].Blob[:len(ti.layers[1].Blob)/2])
			w.(http.Flusher).Flush()
			close(stalled)
			<-r.Context().Done()
			return true
		}
		return false
	})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error)
	go func() {
		_, err := s.Pull(ctx, srv.Host+"/restart/app:1", nil)
		done <- err
	}()
	<-stalled
	time.Sleep(100 * time.Millisecond)
	// Fake what a kill leaves besides: a temp blob, a half-unpacked layer, a temp record.
	_ = os.WriteFile(filepath.Join(root, "blobs/tmp/deadbeef-1"), []byte("partial"), 0o600)
	_ = os.MkdirAll(filepath.Join(root, "layers/.tmp-deadbeef-2/usr/bin"), 0o755)
	_ = os.WriteFile(filepath.Join(root, "images/.x.json.tmp-3"), []byte("{"), 0o600)
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled pull: %v", err)
	}
	srv.SetIntercept(nil)

	s2 := newStore(t, root, "")
	for _, n := range listDir(t, s2.tmpDir) {
		t.Errorf("temp blob left: %s", n)
	}
	for _, n := range listDir(t, s2.layDir) {
		if strings.HasPrefix(n, ".") {
			t.Errorf("temp layer left: %s", n)
		}
	}
	if got := listDir(t, s2.imgDir); len(got) != 0 {
		t.Errorf("records: %v", got)
	}
	img, err := s2.Pull(ctxT(t), srv.Host+"/restart/app:1", nil)
	if err != nil || img.ID != ti.id {
		t.Fatalf("pull after restart: %v", err)
	}
	if readFile(t, filepath.Join(img.Layers[1], "app/r")) != strings.Repeat("r", 1000) {
		t.Error("content")
	}
}

func TestNoProgressTimeout(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "np", "np")
	push(t, srv, "slow/app:1", ti.img)
	blob := ti.layers[1].Blob
	mode := "stall"
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.Method != http.MethodGet || !strings.HasSuffix(r.URL.Path, ti.layers[1].DigestString()) {
			return false
		}
		w.Header().Set("Content-Length", fmt.Sprint(len(blob)))
		if mode == "stall" {
			_, _ = w.Write(blob[:10])
			w.(http.Flusher).Flush()
			<-r.Context().Done()
			return true
		}
		// Slow but moving: the whole pull takes longer than the timeout.
		chunk := len(blob)/8 + 1
		for i := 0; i < len(blob); i += chunk {
			_, _ = w.Write(blob[i:min(i+chunk, len(blob))])
			w.(http.Flusher).Flush()
			time.Sleep(150 * time.Millisecond)
		}
		return true
	})
	s, err := New(Config{Root: t.TempDir(), RegistryConfigPath: t.TempDir(), NoProgressTimeout: 500 * time.Millisecond,
		Logger: testLogger(t), ProgressInterval: 200 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = s.Pull(ctxT(t), srv.Host+"/slow/app:1", nil)
	if !errors.Is(err, ErrNoProgress) {
		t.Fatalf("stalled pull: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("stalled pull took %v", d)
	}
	mode = "slow"
	start = time.Now()
	if _, err := s.Pull(ctxT(t), srv.Host+"/slow/app:1", nil); err != nil {
		t.Fatalf("slow pull: %v", err)
	}
	if d := time.Since(start); d < 600*time.Millisecond {
		t.Errorf("slow pull took only %v", d)
	}
}

func TestHostsFileParsing(t *testing.T) {
	dir := t.TempDir()
	writeHosts(t, dir, "docker.io", `
server = "https://registry-1.docker.io"
[host."https://mirror-b.example"]
  capabilities = ["pull"]
  skip_verify = true
[host."https://mirror-a.example/some/path"]
  capabilities = ["pull", "resolve"]
  ca = ["ca.pem"]
  [host."https://mirror-a.example/some/path".header]
    x-a = ["1", "2"]
[host."http://mirror-c.example:8080/prefix"]
  override_path = true
`)
	eps, err := loadEndpoints(dir, "docker.io")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, e := range eps {
		got = append(got, fmt.Sprintf("%s caps=%d skip=%v ca=%v h=%v mirror=%v", e.URL, e.Caps, e.SkipVerify, e.CAs, e.Header["X-A"], e.Mirror))
	}
	want := []string{
		"https://mirror-b.example/v2 caps=1 skip=true ca=[] h=[] mirror=true",
		fmt.Sprintf("https://mirror-a.example/some/path/v2 caps=3 skip=false ca=[%s] h=[1 2] mirror=true", filepath.Join(dir, "docker.io", "ca.pem")),
		"http://mirror-c.example:8080/prefix caps=7 skip=false ca=[] h=[] mirror=true",
		"https://registry-1.docker.io/v2 caps=7 skip=false ca=[] h=[] mirror=false",
	}
	if !slices.Equal(got, want) {
		t.Errorf("endpoints:\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// host:port directories, both spellings.
	writeHosts(t, dir, "reg.example_5000_", `server = "http://reg.example:5000"`)
	eps, err = loadEndpoints(dir, "reg.example:5000")
	if err != nil || len(eps) != 1 || eps[0].URL.String() != "http://reg.example:5000/v2" {
		t.Errorf("host_port_: %v %v", eps, err)
	}
	// Defaults.
	for host, want := range map[string]string{
		"quay.io": "https://quay.io/v2", "localhost:5000": "http://localhost:5000/v2",
		"127.0.0.1:5000": "http://127.0.0.1:5000/v2", "docker.io": "https://registry-1.docker.io/v2",
	} {
		eps, err := loadEndpoints(t.TempDir(), host)
		if err != nil || len(eps) != 1 || eps[0].URL.String() != want {
			t.Errorf("%s: %v %v", host, eps, err)
		}
	}
}

func TestTLSHostWithCA(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "tls", "tls")
	push(t, srv, "sec/app:1", ti.img)
	ts := httptest.NewTLSServer(srv.Handler())
	defer ts.Close()
	hosts := t.TempDir()
	pemData := pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: ts.Certificate().Raw})
	for name, extra := range map[string]string{
		"no-ca":       "",
		"ca":          `ca = "ca.pem"`,
		"skip-verify": "skip_verify = true",
	} {
		host := name + ".example"
		writeHosts(t, hosts, host, fmt.Sprintf("server = %q\n%s\n", ts.URL, extra))
		if err := os.WriteFile(filepath.Join(hosts, host, "ca.pem"), pemData, 0o644); err != nil {
			t.Fatal(err)
		}
		s := newStore(t, "", hosts)
		_, err := s.Pull(ctxT(t), host+"/sec/app:1", nil)
		if (err == nil) != (name != "no-ca") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestTokenAuth(t *testing.T) {
	srv := startRegistry(t, fixture.Options{TokenAuth: true, Username: "bob", Password: "pw", IdentityToken: "refresh-me"})
	ti := makeImage(t, "bearer", "bearer")
	push(t, srv, "private/app:1", ti.img)
	ref := srv.Host + "/private/app:1"
	for name, tc := range map[string]struct {
		auth *AuthConfig
		ok   bool
	}{
		"anonymous":      {nil, false},
		"password":       {&AuthConfig{Username: "bob", Password: "pw"}, true},
		"wrong password": {&AuthConfig{Username: "bob", Password: "nope"}, false},
		"identity token": {&AuthConfig{Username: "<token>", IdentityToken: "refresh-me"}, true},
		"bad identity":   {&AuthConfig{Username: "<token>", IdentityToken: "stale"}, false},
	} {
		s := newStore(t, "", "")
		_, err := s.Pull(ctxT(t), ref, tc.auth)
		if (err == nil) != tc.ok {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestPullDeadline(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "dl", "dl")
	push(t, srv, "dl/app:1", ti.img)
	s := newStore(t, "", "")
	for _, d := range []time.Duration{0, time.Millisecond} {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		_, err := s.Pull(ctx, srv.Host+"/dl/app:1", nil)
		cancel()
		if !errors.Is(err, context.DeadlineExceeded) {
			t.Errorf("timeout %v: %v", d, err)
		}
	}
	// Verified blobs (the manifest) may stay, for the next pull or GC;
	// nothing partial and no record may.
	if n := listDir(t, s.tmpDir); len(n) != 0 {
		t.Errorf("temp blobs: %v", n)
	}
	if n := listDir(t, s.imgDir); len(n) != 0 {
		t.Errorf("records: %v", n)
	}
	for _, n := range listDir(t, s.layDir) {
		t.Errorf("layer: %s", n)
	}
	if err := s.GC(); err != nil {
		t.Fatal(err)
	}
	assertEmptyStore(t, s)
}

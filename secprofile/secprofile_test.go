package secprofile

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/minicri/minicri/image"
)

const goodProfile = `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_X86_64"],
 "syscalls":[{"names":["mkdir","mkdirat"],"action":"SCMP_ACT_ERRNO","errnoRet":1},
 {"names":["personality"],"action":"SCMP_ACT_ERRNO","args":[{"index":0,"value":8,"op":"SCMP_CMP_EQ"}]}]}`

func digestOf(b []byte) string {
	s := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(s[:])
}

func manifestFor(config, artifactType string, layers ...string) []byte {
	var ls []string
	for _, l := range layers {
		ls = append(ls, fmt.Sprintf(`{"mediaType":"application/json","digest":%q,"size":%d}`, digestOf([]byte(l)), len(l)))
	}
	at := ""
	if artifactType != "" {
		at = fmt.Sprintf(`"artifactType":%q,`, artifactType)
	}
	return fmt.Appendf(nil, `{"schemaVersion":2,"mediaType":%q,%s"config":{"mediaType":%q,"digest":"sha256:%s","size":2},"layers":[%s]}`,
		ManifestType, at, config, strings.Repeat("4", 64), strings.Join(ls, ","))
}

// fakeRegistry serves one manifest and its layer, counting fetches.
type fakeRegistry struct {
	manifest []byte
	layer    []byte
	fetches  atomic.Int32
	err      error
}

func (f *fakeRegistry) FetchSmallArtifact(_ context.Context, ref string, _ *image.AuthConfig, maxM, maxB int64, choose image.ChooseBlob) (image.SmallArtifact, error) {
	f.fetches.Add(1)
	if f.err != nil {
		return image.SmallArtifact{}, f.err
	}
	d, _, err := choose(ManifestType, f.manifest)
	if err != nil {
		return image.SmallArtifact{}, fmt.Errorf("fetch %s: %w", ref, err) // as image wraps it
	}
	return image.SmallArtifact{Ref: ref, Manifest: f.manifest, ManifestDigest: digestOf(f.manifest), BlobDigest: d, Blob: f.layer}, nil
}

func refOf(m []byte) string { return "registry.example/profiles/strict@" + digestOf(m) }

func TestPullCachedListRemoveReopen(t *testing.T) {
	dir := t.TempDir()
	reg := &fakeRegistry{manifest: manifestFor(ConfigType, "", goodProfile), layer: []byte(goodProfile)}
	s, err := Open(dir, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	ref := refOf(reg.manifest)
	for i, want := range []bool{false, true} {
		cached, err := s.Pull(context.Background(), ref, nil, KindSeccomp)
		if err != nil || cached != want {
			t.Fatalf("pull %d: cached %v, %v; want %v", i, cached, err, want)
		}
	}
	if reg.fetches.Load() != 1 {
		t.Errorf("%d fetches, want 1: a present profile needs no registry request", reg.fetches.Load())
	}
	other := "other.example/x@" + digestOf(reg.manifest)
	if cached, err := s.Pull(context.Background(), other, nil, KindSeccomp); err != nil || !cached {
		t.Errorf("pull by another ref of the same manifest: %v %v", cached, err)
	}
	list := s.List()
	if len(list) != 1 || list[0].Digest != digestOf([]byte(goodProfile)) || len(list[0].Refs) != 2 || list[0].Size != uint64(len(goodProfile)) {
		t.Fatalf("list %+v", list)
	}
	if d, p, err := s.Lookup(ref); err != nil || d != list[0].Digest || p.DefaultAction != "SCMP_ACT_ALLOW" {
		t.Errorf("lookup: %v %v %v", d, p, err)
	}
	s2, err := Open(dir, reg, nil)
	if err != nil || len(s2.List()) != 1 || len(s2.List()[0].Refs) != 2 {
		t.Fatalf("reopened: %+v %v", s2.List(), err)
	}
	for range 2 {
		if err := s2.Remove(list[0].Digest); err != nil {
			t.Fatal(err)
		}
	}
	if _, _, err := s2.Lookup(ref); !errors.Is(err, ErrNotPresent) {
		t.Errorf("lookup after remove: %v", err)
	}
	assertEmpty(t, dir)
}

func assertEmpty(t *testing.T, dir string) {
	t.Helper()
	for _, sub := range []string{"profiles", "records"} {
		ents, _ := os.ReadDir(filepath.Join(dir, sub))
		if len(ents) != 0 {
			t.Errorf("%s holds %d files", sub, len(ents))
		}
	}
}

func TestPullRefusals(t *testing.T) {
	big := `{"defaultAction":"SCMP_ACT_ALLOW","syscalls":[` + strings.Repeat(`{"names":["read"],"action":"SCMP_ACT_ALLOW"},`, maxEntries) +
		`{"names":["read"],"action":"SCMP_ACT_ALLOW"}]}`
	cases := map[string]struct{ manifest, layer string }{
		"not json":        {string(manifestFor(ConfigType, "", "not json")), "not json"},
		"unknown field":   {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_ALLOW","x":1}`)), `{"defaultAction":"SCMP_ACT_ALLOW","x":1}`},
		"trailing":        {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_ALLOW"} {}`)), `{"defaultAction":"SCMP_ACT_ALLOW"} {}`},
		"listener":        {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/x"}`)), `{"defaultAction":"SCMP_ACT_ALLOW","listenerPath":"/x"}`},
		"notify":          {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_NOTIFY"}`)), `{"defaultAction":"SCMP_ACT_NOTIFY"}`},
		"unknown action":  {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_NOPE"}`)), `{"defaultAction":"SCMP_ACT_NOPE"}`},
		"unknown arch":    {string(manifestFor(ConfigType, "", `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_Z80"]}`)), `{"defaultAction":"SCMP_ACT_ALLOW","architectures":["SCMP_ARCH_Z80"]}`},
		"too many":        {string(manifestFor(ConfigType, "", big)), big},
		"wrong kind":      {string(manifestFor("application/vnd.oci.image.config.v1+json", "", goodProfile)), goodProfile},
		"empty, no type":  {string(manifestFor(EmptyConfigType, "", goodProfile)), goodProfile},
		"several layers":  {string(manifestFor(ConfigType, "", goodProfile, goodProfile+" ")), goodProfile},
		"an index":        {`{"schemaVersion":2,"manifests":[]}`, goodProfile},
		"artifactType ok": {string(manifestFor(EmptyConfigType, ConfigType, goodProfile)), goodProfile},
	}
	for name, c := range cases {
		dir := t.TempDir()
		reg := &fakeRegistry{manifest: []byte(c.manifest), layer: []byte(c.layer)}
		s, err := Open(dir, reg, nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = s.Pull(context.Background(), refOf(reg.manifest), nil, KindSeccomp)
		if name == "artifactType ok" {
			if err != nil {
				t.Errorf("%s: %v", name, err)
			}
			continue
		}
		if !errors.Is(err, ErrInvalid) || !strings.HasPrefix(err.Error(), "SecurityProfileInvalid") {
			t.Errorf("%s: %v, want SecurityProfileInvalid", name, err)
		}
		assertEmpty(t, dir)
	}
}

func TestPullRequestRefusals(t *testing.T) {
	reg := &fakeRegistry{err: fmt.Errorf("dial: %w", image.ErrRegistryUnavailable)}
	s, err := Open(t.TempDir(), reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	for ref, kind := range map[string]Kind{"registry.example/p:v1": KindSeccomp, "registry.example/p@sha256:" + strings.Repeat("a", 64): 0, "UPPER/x": KindSeccomp} {
		if _, err := s.Pull(context.Background(), ref, nil, kind); !strings.HasPrefix(fmt.Sprint(err), "SecurityProfileInvalid") {
			t.Errorf("%s kind %d: %v", ref, kind, err)
		}
	}
	huge := "registry.example/" + strings.Repeat("p", 4<<20) + "@sha256:" + strings.Repeat("a", 64)
	if _, err := s.Pull(context.Background(), huge, nil, KindSeccomp); !strings.HasPrefix(fmt.Sprint(err), "SecurityProfileInvalid") || len(err.Error()) > 4096 {
		t.Errorf("a 4 MiB reference: want SecurityProfileInvalid in a bounded message, got %d bytes", len(fmt.Sprint(err)))
	}
	_, err = s.Pull(context.Background(), "registry.example/p@sha256:"+strings.Repeat("a", 64), nil, KindSeccomp)
	if !errors.Is(err, ErrRegistryUnavailable) || !strings.HasPrefix(err.Error(), "RegistryUnavailable") {
		t.Errorf("unreachable: %v", err)
	}
	if reg.fetches.Load() != 1 {
		t.Errorf("%d fetches, want 1 (refused requests need none)", reg.fetches.Load())
	}
}

func FuzzParse(f *testing.F) {
	f.Add([]byte(goodProfile))
	f.Add([]byte(`{"defaultAction":"SCMP_ACT_ERRNO","defaultErrnoRet":1}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := Parse(data)
		if err != nil {
			if !errors.Is(err, ErrInvalid) {
				t.Fatalf("refusal without SecurityProfileInvalid: %v", err)
			}
			return
		}
		if p.DefaultAction == "" || p.ListenerPath != "" {
			t.Fatalf("accepted %q", data)
		}
	})
}

// TestConcurrentCalls: pulls, lists, lookups and removes at once (run with
// -race) leave a consistent store: each profile either listed with its
// record and bytes on disk, or gone from both.
func TestConcurrentCalls(t *testing.T) {
	dir := t.TempDir()
	reg := &fakeRegistry{manifest: manifestFor(ConfigType, "", goodProfile), layer: []byte(goodProfile)}
	s, err := Open(dir, reg, nil)
	if err != nil {
		t.Fatal(err)
	}
	digest := digestOf([]byte(goodProfile))
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for n := range 50 {
				ref := fmt.Sprintf("registry.example/p%d@%s", g, digestOf(reg.manifest))
				switch (g + n) % 4 {
				case 0:
					if _, err := s.Pull(context.Background(), ref, nil, KindSeccomp); err != nil {
						t.Error(err)
					}
				case 1:
					_ = s.List()
				case 2:
					_, _, _ = s.Lookup(ref)
				default:
					if err := s.Remove(digest); err != nil {
						t.Error(err)
					}
				}
			}
		})
	}
	wg.Wait()
	listed := len(s.List()) == 1
	onDisk := exists(s.profilePath(digest)) && exists(s.recordPath(digest))
	if listed != onDisk {
		t.Errorf("listed %v, on disk %v", listed, onDisk)
	}
	if again, err := Open(dir, reg, nil); err != nil || len(again.List()) != len(s.List()) {
		t.Errorf("reopened: %v, %v", again.List(), err)
	}
}

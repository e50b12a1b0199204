package image

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// FuzzUnpack unpacks arbitrary layer streams (plain tar, or gzip or zstd
// of one) and checks that nothing is ever written outside the store: a
// sibling directory with a victim file, reachable by "../" from the layer
// directory, stays exactly as it was, and so does the directory around
// both. A failed unpack leaves no temporary directory. Seeds are in
// testdata/fuzz/FuzzUnpack (escapes by ../, absolute names, symlinks,
// hardlinks, whiteouts, devices, a bomb).
func FuzzUnpack(f *testing.F) {
	if os.Geteuid() != 0 {
		f.Skip("unpacking layers (devices, ownership, trusted xattrs) needs root")
	}
	base := f.TempDir()
	f.Fuzz(func(t *testing.T, data []byte) {
		box, err := os.MkdirTemp(base, "box-")
		if err != nil {
			t.Fatal(err)
		}
		defer os.RemoveAll(box)
		outside := filepath.Join(box, "outside")
		victim := filepath.Join(outside, "victim")
		if err := os.Mkdir(outside, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(victim, []byte("precious"), 0o644); err != nil {
			t.Fatal(err)
		}
		s, err := New(Config{Root: filepath.Join(box, "store"), RegistryConfigPath: box,
			MaxLayerSize: 16 << 20, MaxLayerRatio: 10, Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
		if err != nil {
			t.Fatal(err)
		}
		s.ratioAllowance = 1 << 20
		sum := sha256.Sum256(data)
		var dir string
		done := make(chan struct{})
		go func() {
			defer close(done)
			dir, _, err = s.unpackLayer(context.Background(), bytes.NewReader(data), "sha256:"+hex.EncodeToString(sum[:]), s.newPullLimits(), nil)
		}()
		select {
		case <-done:
		case <-time.After(20 * time.Second):
			t.Fatal("unpack hangs")
		}
		if err == nil {
			defer os.RemoveAll(dir)
		} else if ents, _ := os.ReadDir(s.layDir); len(ents) != 0 {
			t.Errorf("failed unpack (%v) left %d entries in the layers dir", err, len(ents))
		}
		assertOnly(t, box, "outside", "store")
		assertOnly(t, outside, "victim")
		var st unix.Stat_t
		if err := unix.Lstat(victim, &st); err != nil {
			t.Fatalf("victim: %v", err)
		}
		if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 || st.Mode&0o7777 != 0o644 || st.Uid != 0 {
			t.Errorf("victim changed: mode %o, %d links, uid %d", st.Mode, st.Nlink, st.Uid)
		}
		if b, _ := os.ReadFile(victim); string(b) != "precious" {
			t.Errorf("victim = %q", b)
		}
		if dir != "" && !strings.HasPrefix(dir, s.layDir+"/") {
			t.Errorf("layer unpacked to %s, outside %s", dir, s.layDir)
		}
	})
}

// assertOnly checks that dir holds exactly names.
func assertOnly(t *testing.T, dir string, names ...string) {
	t.Helper()
	var got []string
	ents, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range ents {
		got = append(got, e.Name())
	}
	if !slices.Equal(got, names) {
		t.Errorf("written outside the layer, in %s: %q", dir, got)
	}
}

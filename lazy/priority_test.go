package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestStartPrefetchClaims: a prioritized file read while the prefetch
// started at mount is under way waits for that fetch: the registry gets
// the prefetch's one range request, not a second one from the read.
func TestStartPrefetchClaims(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	r.latency = 300 * time.Millisecond
	m := mountFixture(t, r, toc, Options{SpanBytes: 1 << 20})
	before := r.requests.Load()
	m.Layer.StartPrefetch()
	for _, name := range prioritized {
		got, err := os.ReadFile(filepath.Join(m.Mountpoint, name))
		if err != nil || !bytes.Equal(got, entryData(entries, name)) {
			t.Errorf("%s: %d bytes, %v", name, len(got), err)
		}
	}
	if n := r.requests.Load() - before; n != 1 {
		t.Errorf("prefetch and reads of its files took %d range requests, want 1", n)
	}
}

// TestBackgroundWaitsForSilence: the background fetch asks the registry
// nothing until the prefetch has been over for the silence, then completes
// the layer.
func TestBackgroundWaitsForSilence(t *testing.T) {
	entries := fixtureEntries()
	blob, toc := buildBlob(t, buildTar(t, entries), gzip.BestSpeed)
	r := newRegistry(t, blob)
	const silence = 400 * time.Millisecond
	m := mountFixture(t, r, toc, Options{SpanBytes: 64 << 10, Silence: silence})
	if err := m.Layer.Prefetch(context.Background()); err != nil {
		t.Fatal(err)
	}
	prio.mu.Lock()
	ended, busy := prio.last, prio.busy
	prio.mu.Unlock()
	if busy != 0 {
		t.Fatalf("%d prioritized fetches in flight after the prefetch", busy)
	}
	seen := len(r.arrivals())
	m.Layer.Background()
	waitFor(t, 10*time.Second, m.Layer.Complete)
	later := r.arrivals()[seen:]
	if len(later) == 0 {
		t.Fatal("the background fetch asked the registry nothing, yet the layer is complete")
	}
	for _, at := range later {
		if gap := at.Sub(ended); gap < silence {
			t.Errorf("a background request %v after the prefetch ended, want at least %v", gap, silence)
		}
	}
	t.Logf("%d background requests, the first %v after the prefetch", len(later), later[0].Sub(ended).Round(time.Millisecond))
}

// TestOpenWithTail: a layer opened with the blob's end as the daemon read
// it asks the registry nothing for its TOC; an end that is not this blob's
// (garbage, or another layer's) is read again from the registry.
func TestOpenWithTail(t *testing.T) {
	blob, toc := buildBlob(t, buildTar(t, fixtureEntries()), gzip.BestSpeed)
	changed := fixtureEntries()
	changed = append(changed, fileEntry("etc/more", 0o644, []byte("another layer\n")))
	other, _ := buildBlob(t, buildTar(t, changed), gzip.BestSpeed)
	tail := func(b []byte) []byte { return b[max(len(b)-(64<<10), 1):] }
	for _, tc := range []struct {
		name     string
		tail     []byte
		requests bool
	}{
		{"its own end", tail(blob), false},
		{"garbage", bytes.Repeat([]byte{0x1f}, 4096), true},
		{"another layer's end", tail(other), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := newRegistry(t, blob)
			l, err := Open(context.Background(), r.blobReader(), Options{Dir: t.TempDir(), TOCDigest: toc, Tail: tc.tail})
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close()
			if n := r.requests.Load(); (n > 0) != tc.requests {
				t.Errorf("%d requests to the registry to open the layer, want them: %v", n, tc.requests)
			}
			if _, ok := l.r.Lookup("bin/app"); !ok {
				t.Error("bin/app not in the TOC")
			}
		})
	}
}

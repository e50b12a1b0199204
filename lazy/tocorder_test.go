package lazy

import (
	"bytes"
	"compress/gzip"
	"context"
	"io"
	"strings"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
)

// rewriteTOC gives blob a TOC edited by edit, and the new TOC's digest,
// through estargz's own footer, TOC parser and TOC writer.
func rewriteTOC(t *testing.T, blob []byte, edit func(*estargz.JTOC)) ([]byte, digest.Digest) {
	t.Helper()
	off, footer, err := estargz.OpenFooter(io.NewSectionReader(bytes.NewReader(blob), 0, int64(len(blob))))
	if err != nil {
		t.Fatal(err)
	}
	toc, _, err := new(estargz.GzipDecompressor).ParseTOC(bytes.NewReader(blob[off : int64(len(blob))-footer]))
	if err != nil {
		t.Fatal(err)
	}
	edit(toc)
	out := bytes.NewBuffer(append([]byte(nil), blob[:off]...))
	d, err := estargz.NewGzipCompressor().WriteTOCAndFooter(out, off, toc, nil)
	if err != nil {
		t.Fatal(err)
	}
	return out.Bytes(), d
}

// TestTOCOffsetsOutOfOrderRefused: a TOC whose offsets go back (an entry
// between two files naming an offset far past both) gives the first file a
// stream that overlaps the next one's. Such a layer is refused at Open; before,
// it opened and the first prefetch or background fetch of the span sliced its
// buffer past its end and lazyfs died of the panic (and again at each remount).
func TestTOCOffsetsOutOfOrderRefused(t *testing.T) {
	blob, _ := buildBlob(t, buildTar(t, fixtureEntries()), gzip.BestSpeed)
	hostile, toc := rewriteTOC(t, blob, func(j *estargz.JTOC) {
		var far int64
		for _, e := range j.Entries {
			far = max(far, e.Offset)
		}
		for i, e := range j.Entries {
			if e.Type == "reg" && e.Size > 0 {
				dir := &estargz.TOCEntry{Name: "zz-far/", Type: "dir", Mode: 0o755, Offset: far - 1}
				j.Entries = append(j.Entries[:i+1], append([]*estargz.TOCEntry{dir}, j.Entries[i+1:]...)...)
				return
			}
		}
		t.Fatal("no regular file in the fixture's TOC")
	})
	r := newRegistry(t, hostile)
	l, err := Open(context.Background(), r.blobReader(), Options{Dir: t.TempDir(), TOCDigest: toc})
	if err == nil {
		defer l.Close()
		fetchErr := l.Prefetch(context.Background()) // the whole layer's span: where it panicked
		t.Fatalf("a TOC whose offsets go back opened (its fetch: %v)", fetchErr)
	}
	if !strings.Contains(err.Error(), "out of order") {
		t.Fatalf("Open: %v, want the TOC's offsets refused", err)
	}
}

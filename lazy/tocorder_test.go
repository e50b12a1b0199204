package lazy

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"strconv"
	"strings"
	"testing"

	"github.com/containerd/stargz-snapshotter/estargz"
	digest "github.com/opencontainers/go-digest"
)

// rewriteTOC gives blob a TOC edited by edit, and the new TOC's digest.
func rewriteTOC(t *testing.T, blob []byte, edit func(*estargz.JTOC)) ([]byte, digest.Digest) {
	t.Helper()
	foot := blob[len(blob)-estargz.FooterSize:]
	i := bytes.Index(foot, []byte("STARGZ"))
	if i < 16 {
		t.Fatal("no eStargz footer")
	}
	off, err := strconv.ParseInt(string(foot[i-16:i]), 16, 64)
	if err != nil {
		t.Fatal(err)
	}
	zr, err := gzip.NewReader(bytes.NewReader(blob[off : len(blob)-estargz.FooterSize]))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	if _, err := tr.Next(); err != nil {
		t.Fatal(err)
	}
	var toc estargz.JTOC
	if err := json.NewDecoder(tr).Decode(&toc); err != nil {
		t.Fatal(err)
	}
	edit(&toc)
	js, err := json.Marshal(&toc)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	out.Write(blob[:off])
	zw := gzip.NewWriter(&out)
	tw := tar.NewWriter(zw)
	_ = tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: estargz.TOCTarName, Size: int64(len(js)), Mode: 0o644})
	_, _ = io.Copy(tw, bytes.NewReader(js))
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	out.Write(stargzFooter(t, off))
	return out.Bytes(), digest.FromBytes(js)
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

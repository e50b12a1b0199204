package image

import (
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"net/http"
	"strconv"
	"testing"

	"github.com/minicri/minicri/test/registry/fixture"
)

// A manifest from a hostile registry may give a layer a negative size: the
// download's size check is skipped for it and the size is subtracted
// (wrapping through uint64) from the image's size that ImageStatus and
// ImageFsInfo report (the kubelet's image GC input). The pull is refused.
func TestPullRefusesNegativeLayerSize(t *testing.T) {
	srv := startRegistry(t, fixture.Options{})
	ti := makeImage(t, "neg", "neg")
	push(t, srv, "neg/app:1", ti.img)
	raw, err := ti.img.RawManifest()
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(raw, &m); err != nil {
		t.Fatal(err)
	}
	m["layers"].([]any)[0].(map[string]any)["size"] = -1
	bad, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	mt, err := ti.img.MediaType()
	if err != nil {
		t.Fatal(err)
	}
	srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if r.URL.Path != "/v2/neg/app/manifests/1" {
			return false
		}
		w.Header().Set("Content-Type", string(mt))
		w.Header().Set("Content-Length", strconv.Itoa(len(bad)))
		w.Header().Set("Docker-Content-Digest", fmt.Sprintf("sha256:%x", sha256.Sum256(bad)))
		if r.Method != http.MethodHead {
			_, _ = w.Write(bad)
		}
		return true
	})
	s := newStore(t, "", "")
	img, err := s.Pull(ctxT(t), srv.Host+"/neg/app:1", nil)
	if err == nil {
		t.Fatalf("pulled an image with a negative layer size: size %d", img.Size)
	}
}

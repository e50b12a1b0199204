package image

import (
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/minicri/minicri/test/registry/fixture"
)

// A blob in the store is linked into an artifact volume only if this
// pull's registry serves it (artifact_verify.go).
func TestArtifactStoredBlobNeedsItsRegistry(t *testing.T) {
	private := startRegistry(t, fixture.Options{Username: "u", Password: "p"})
	public := startRegistry(t, fixture.Options{})
	body := []byte("private bytes")
	layer := static.NewLayer(body, "application/octet-stream")
	img, err := mutate.Append(mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), fixture.ArtifactConfigType),
		mutate.Addendum{Layer: layer, Annotations: map[string]string{annotationTitle: "f"}})
	if err != nil {
		t.Fatal(err)
	}
	push(t, private, "a/secret:1", img)
	push(t, public, "b/thief:1", img)
	d, _ := layer.Digest()
	public.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/blobs/"+d.String()) {
			http.Error(w, "unknown blob", http.StatusNotFound)
			return true
		}
		return false
	})
	hosts := t.TempDir()
	for host, srv := range map[string]*fixture.Server{"private.test": private, "public.test": public} {
		writeHosts(t, hosts, host, fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", srv.URL, srv.URL))
	}
	s := newStore(t, "", hosts)
	auth := &AuthConfig{Username: "u", Password: "p"}
	if _, err := s.Pull(ctxT(t), "private.test/a/secret:1", auth); err != nil {
		t.Fatalf("private pull: %v", err)
	}
	if _, err := s.Pull(ctxT(t), "public.test/b/thief:1", nil); err == nil || !strings.Contains(err.Error(), d.String()) {
		t.Errorf("pull naming a stored blob its registry lacks: %v, want an error naming %s", err, d)
	}
	private.ResetCounters()
	if _, err := s.Pull(ctxT(t), "private.test/a/secret:1", auth); err != nil {
		t.Errorf("re-pull with the credentials: %v", err)
	}
	if n := private.BlobGets(d.String()); n != 0 {
		t.Errorf("the re-pull downloaded the stored blob %d times (a HEAD verifies it)", n)
	}
}

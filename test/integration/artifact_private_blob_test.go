package integration

import (
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// TestArtifactAttackPrivateBlobByDigest: an artifact volume's files are
// blobs linked from the node's store. A victim pulls a private artifact
// with credentials; an attacker publishes, on a registry of its own, an
// artifact naming the victim's blob digest (which that registry does not
// have: it knows only the digest). Before, the blob in the store was
// linked into the attacker's volume without a request: the attacker read
// the private file. As the kubelet does for images pulled with
// credentials (KEP-2535: present on the node is not authorized), a blob
// in the store is linked only once this pull's registry, with this pull's
// credentials, serves it (HEAD): the attacker's pull fails; the victim's
// own re-pull works.
func TestArtifactAttackPrivateBlobByDigest(t *testing.T) {
	const secret = "the victim's private weights\n"
	private := startRegistry(t, fixture.Options{Username: "victim", Password: "s3cret"})
	public := startRegistry(t, fixture.Options{})
	pushArtifact(t, private, "minicri/secret:v1", "weights.bin", secret)
	pushArtifact(t, public, "minicri/thief:v1", "loot.bin", secret)
	digest := blobDigest(t, secret)
	// The attacker's registry has no such blob.
	public.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if strings.HasSuffix(r.URL.Path, "/blobs/"+digest) {
			http.Error(w, `{"errors":[{"code":"BLOB_UNKNOWN"}]}`, http.StatusNotFound)
			return true
		}
		return false
	})
	i := newInstance(t, withRegistry())
	hostsFor(t, i, "private.example", private.URL)
	hostsFor(t, i, "public.example", public.URL)
	auth := &runtimeapi.AuthConfig{Username: "victim", Password: "s3cret"}
	pull := func(ref string, auth *runtimeapi.AuthConfig) (string, error) {
		resp, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}, Auth: auth})
		return resp.GetImageRef(), err
	}
	if _, err := pull("private.example/minicri/secret:v1", auth); err != nil {
		t.Fatalf("the victim's pull: %v", err)
	}
	id, err := pull("public.example/minicri/thief:v1", nil)
	if err == nil {
		data, _ := os.ReadFile(filepath.Join(i.dir, "root", "images", "layers", strings.TrimPrefix(id, "sha256:"), "loot.bin"))
		t.Errorf("the attacker's artifact was pulled without its registry serving the blob; its volume holds %q", data)
	} else if !strings.Contains(err.Error(), digest) {
		t.Errorf("the attacker's pull: %v, want an error naming blob %s", err, digest)
	}
	if n := public.BlobGets(digest); n != 0 {
		t.Errorf("the attacker's registry served the blob %d times", n)
	}
	if _, err := pull("private.example/minicri/secret:v1", auth); err != nil {
		t.Errorf("the victim's re-pull: %v", err)
	}
}

func startRegistry(t *testing.T, opts fixture.Options) *fixture.Server {
	t.Helper()
	srv, err := fixture.Start("127.0.0.1:0", opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return srv
}

// pushArtifact pushes an artifact of one file, title with body, as ref.
func pushArtifact(t *testing.T, srv *fixture.Server, ref, title, body string) {
	t.Helper()
	img := mutate.ConfigMediaType(mutate.MediaType(empty.Image, types.OCIManifestSchema1), fixture.ArtifactConfigType)
	img, err := mutate.Append(img, mutate.Addendum{
		Layer:       static.NewLayer([]byte(body), "application/octet-stream"),
		Annotations: map[string]string{"org.opencontainers.image.title": title},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Push(ref, img); err != nil {
		t.Fatal(err)
	}
}

func blobDigest(t *testing.T, body string) string {
	t.Helper()
	d, err := static.NewLayer([]byte(body), "application/octet-stream").Digest()
	if err != nil {
		t.Fatal(err)
	}
	return d.String()
}

// hostsFor has the instance reach host at url (http).
func hostsFor(t *testing.T, i *instance, host, url string) {
	t.Helper()
	dir := filepath.Join(i.dir, "certs.d", host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", url, url)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil { //nolint:gosec // test config
		t.Fatal(err)
	}
}

package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// An image whose top layer holds only a hard link to a file of the layer
// below (fixture.HardlinkLowerRef) pulls and runs: the link is the lower
// file, under both names; removing the image leaves no layer behind.
func TestHardlinkToLowerLayerImageRuns(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, fixture.HardlinkLowerRef)
	podID, pod := i.podWithLogs(t, "hardlink")
	_, info := i.status(t, podID)
	cfg := ctrConfig("hardlink", "sleep 1000")
	cfg.Image.Image = fixture.HardlinkLowerRef
	id := i.run(t, podID, pod, cfg)
	if out, code := i.exec(t, id, "/"+fixture.HardlinkLowerName, "echo", "linked"); code != 0 || out != "linked\n" {
		t.Fatalf("%s echo: %q (exit %d)", fixture.HardlinkLowerName, out, code)
	}
	if out, code := i.exec(t, id, "sh", "-c", "test /"+fixture.HardlinkLowerName+" -ef /bin/busybox && echo same"); code != 0 || out != "same\n" {
		t.Fatalf("the link and its target are not one file: %q (exit %d)", out, code)
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: fixture.HardlinkLowerRef}}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); len(got) != 0 {
		t.Errorf("layers left after RemoveImage: %v", got)
	}
}

// A layer that downloads and verifies fine but does not unpack (the
// hostile corpus's decompression bomb and escapes) fails PullImage with its
// own error (ResourceExhausted, InvalidArgument) at the first host of a mirror pair: the next host is not asked
// for the same bytes, nor named in the error.
func TestUnpackErrorDoesNotFallBackToNextHost(t *testing.T) {
	target, mirror := hostileRegistry(t)
	upstream, err := fixture.Start("127.0.0.1:0", fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { upstream.Close() })
	entries, err := fixture.BuildCatalog(fixture.CatalogOptions{HostileTarget: target})
	if err != nil {
		t.Fatal(err)
	}
	var hostile []fixture.Entry
	for _, e := range entries {
		if strings.HasPrefix(e.Ref, fixture.HostileRepo+":") {
			hostile = append(hostile, e)
		}
	}
	if err := upstream.Publish(hostile); err != nil {
		t.Fatal(err)
	}
	i := newInstance(t, withRegistry())
	const host = "hostile-pair.example"
	dir := filepath.Join(i.dir, "certs.d", host)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	toml := fmt.Sprintf("server = %q\n[host.%q]\n  capabilities = [\"pull\", \"resolve\"]\n", upstream.URL, mirror.URL)
	if err := os.WriteFile(filepath.Join(dir, "hosts.toml"), []byte(toml), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tag  string
		code codes.Code
	}{{fixture.HostileBomb.Tag, codes.ResourceExhausted}, {"dotdot", codes.InvalidArgument}, {"hardlink-abs", codes.InvalidArgument}} {
		t.Run(c.tag, func(t *testing.T) {
			defer assertTargetUntouched(t, target)
			mirror.ResetCounters()
			upstream.ResetCounters()
			_, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: host + "/minicri/hostile:" + c.tag}})
			t.Logf("pull: %v", err)
			if err == nil {
				t.Fatal("pulled")
			}
			if st, _ := status.FromError(err); st.Code() != c.code {
				t.Errorf("code %v, want %v", st.Code(), c.code)
			}
			blobs := func(reqs []string) (n int) {
				for _, r := range reqs {
					if strings.HasPrefix(r, "GET ") && strings.Contains(r, "/blobs/") {
						n++
					}
				}
				return n
			}
			if n := blobs(mirror.Requests()); n == 0 {
				t.Error("no blob fetched from the mirror")
			}
			if n := blobs(upstream.Requests()); n != 0 {
				t.Errorf("%d blobs fetched again from the next host: %v", n, upstream.Requests())
			}
			if strings.Contains(err.Error(), upstream.URL) || strings.Contains(err.Error(), strings.TrimPrefix(upstream.URL, "http://")) {
				t.Errorf("the error names the next host: %v", err)
			}
			if tmp := i.storeTemps(t); len(tmp) > 0 {
				t.Errorf("left in the store: %v", tmp)
			}
		})
	}
}

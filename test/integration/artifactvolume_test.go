package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// An OCI artifact (KEP-4639) as an image volume is a read-only directory
// of its titled files, each as the registry served it (a gzip blob is not
// unpacked); a non-root container user reads them; the artifact cannot be
// a container's image; removing the container and the artifact leaves
// nothing.
func TestArtifactImageVolumeMountsItsFiles(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	imageLayers := i.layerDirs(t)
	artID := i.pull(t, fixture.ArtifactRef)
	st, err := i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: fixture.ArtifactRef}})
	if err != nil || st.Image == nil || st.Image.Id != artID || !slices.Contains(st.Image.RepoTags, fixture.ArtifactRef) {
		t.Fatalf("ImageStatus of the artifact: %v, %v (pulled as %s)", st, err, artID)
	}
	podID, pod := i.podWithLogs(t, "artifact")

	// Not a container image.
	asRoot := ctrConfig("asroot", "sleep 60")
	asRoot.Image.Image = fixture.ArtifactRef
	if _, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: asRoot, SandboxConfig: pod}); status.Code(err) != codes.InvalidArgument ||
		!strings.Contains(err.Error(), "OCI artifact") {
		t.Fatalf("an artifact as a container image: %v, want InvalidArgument", err)
	}
	if ls := i.leases(artID); len(ls) != 0 {
		t.Fatalf("the refused create kept leases %v", ls)
	}

	cfg := ctrConfig("reader", "sleep 60")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}}
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/art", fixture.ArtifactRef, ""), imageMount("/models", fixture.ArtifactRef, "models")}
	id := i.run(t, podID, pod, cfg)
	for p, body := range fixture.ArtifactFiles {
		if out, code := i.exec(t, id, "cat", "/art/"+p); code != 0 || out != body {
			t.Errorf("/art/%s as uid 1000: %q (exit %d), want %q", p, out, code, body)
		}
	}
	if out, _ := i.exec(t, id, "sh", "-c", "cd /art && find . | sort | tr '\\n' ' '"); out != ". ./data.tar.gz ./hello.txt ./models ./models/weights.bin " {
		t.Errorf("the volume holds %q: want the three titled files only", out)
	}
	if out, code := i.exec(t, id, "cat", "/models/weights.bin"); code != 0 || out != fixture.ArtifactFiles["models/weights.bin"] {
		t.Errorf("sub path models: %q (exit %d)", out, code)
	}
	if out, code := i.exec(t, id, "sh", "-c", "echo x >> /art/hello.txt"); code == 0 {
		t.Errorf("write as uid 1000 succeeded: %q", out)
	}
	// Not even root in the container can write it: the mount is read-only.
	rootCfg := ctrConfig("root", "sleep 60")
	rootCfg.Mounts = cfg.Mounts
	rid := i.run(t, podID, pod, rootCfg)
	for _, p := range []string{"/art/new", "/art/hello.txt", "/models/weights.bin"} {
		if out, code := i.exec(t, rid, "sh", "-c", "echo x >> "+p); code == 0 || !strings.Contains(out, "Read-only") {
			t.Errorf("root writes to %s: exit %d, %q", p, code, out)
		}
	}
	if out, code := i.exec(t, rid, "cat", "/art/hello.txt"); code != 0 || out != fixture.ArtifactFiles["hello.txt"] {
		t.Errorf("root reads %q (exit %d): a write got through?", out, code)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: rid}); err != nil {
		t.Fatal(err)
	}

	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	i.assertCtrGone(t, id)
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: fixture.ArtifactRef}}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); !slices.Equal(got, imageLayers) {
		t.Errorf("layer dirs after removing the artifact: %v, want busybox's %v", got, imageLayers)
	}
	i.stopRemove(t, podID)
}

// A hostile artifact: titles that climb out with "../" or start at "/"
// land inside the volume; a title naming nothing, two files at one path, a
// file under a file, an overlong name, a NUL, too many files, a blob
// larger than declared: the pull fails and leaves nothing behind.
func TestArtifactHostileTitlesContainedOrRefused(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "artifact-hostile")
	for _, h := range fixture.ArtifactHostile {
		before := i.layerDirs(t)
		ref := fixture.ArtifactRepo + ":" + h.Tag
		_, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if h.Lands == "" {
			want := codes.InvalidArgument
			if h.Tag == "many" {
				want = codes.ResourceExhausted
			}
			if h.Tag == "bigsize" {
				want = codes.Unknown
			}
			if status.Code(err) != want {
				t.Errorf("%s: pull gave %v, want %v", h.Tag, err, want)
			}
			t.Logf("%s: %v", h.Tag, err)
			if got := i.layerDirs(t); len(got) != len(before) {
				t.Errorf("%s: the failed pull left layer dirs %v", h.Tag, got)
			}
			if tmp, _ := filepath.Glob(filepath.Join(i.dir, "root", "images", "layers", ".tmp-*")); len(tmp) != 0 {
				t.Errorf("%s: the failed pull left %v", h.Tag, tmp)
			}
			continue
		}
		if err != nil {
			t.Errorf("%s: pull: %v", h.Tag, err)
			continue
		}
		cfg := ctrConfig("h-"+h.Tag, "sleep 60")
		cfg.Mounts = []*runtimeapi.Mount{imageMount("/art", ref, "")}
		id := i.run(t, podID, pod, cfg)
		if out, code := i.exec(t, id, "sh", "-c", "cd /art && find . -type f"); code != 0 || out != "./"+h.Lands+"\n" {
			t.Errorf("%s: the volume holds %q, want ./%s only", h.Tag, out, h.Lands)
		}
		i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	}
	// Nothing landed outside the volumes: the host's /etc/evil and the
	// store's directories next to the layers.
	if _, err := os.Stat("/etc/evil"); err == nil {
		t.Fatal("/etc/evil exists on the host")
	}
	for _, d := range []string{filepath.Join(i.dir, "root", "images", "etc"), filepath.Join(i.dir, "root", "etc"), filepath.Join(i.dir, "etc")} {
		if _, err := os.Stat(d); err == nil {
			t.Errorf("%s exists: a title escaped", d)
		}
	}
	i.stopRemove(t, podID)
}

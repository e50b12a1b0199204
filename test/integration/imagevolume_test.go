package integration

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nginx is a two-layer fixture image with usr/share/nginx/html/index.html.
const nginx = "registry.k8s.io/e2e-test-images/nginx:1.14-2"

func imageMount(path, ref, sub string) *runtimeapi.Mount {
	return &runtimeapi.Mount{ContainerPath: path, Readonly: true, Image: &runtimeapi.ImageSpec{Image: ref}, ImageSubPath: sub}
}

func (i *instance) exec(t *testing.T, id string, cmd ...string) (string, int32) {
	t.Helper()
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 10})
	if err != nil {
		t.Fatalf("exec %v: %v", cmd, err)
	}
	return string(res.Stdout) + string(res.Stderr), res.ExitCode
}

func (i *instance) layerDirs(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir(filepath.Join(i.dir, "root", "images", "layers"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range ents {
		if !strings.HasPrefix(e.Name(), ".") {
			out = append(out, e.Name())
		}
	}
	return out
}

func TestImageVolumeReadOnlyWithAndWithoutSubPathOutlivesRemoveImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	volID := i.pull(t, nginx)
	podID, pod := i.podWithLogs(t, "imgvol")
	cfg := ctrConfig("imgvol", "sleep 1000")
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/vol", nginx, ""), imageMount("/html", nginx, "usr/share/nginx/html")}
	id := i.run(t, podID, pod, cfg)

	if out, code := i.exec(t, id, "cat", "/vol/usr/share/nginx/html/index.html"); code != 0 || !strings.Contains(out, "nginx") {
		t.Fatalf("whole image: %q (exit %d)", out, code)
	}
	if out, code := i.exec(t, id, "cat", "/html/index.html"); code != 0 || !strings.Contains(out, "nginx") {
		t.Fatalf("sub path: %q (exit %d)", out, code)
	}
	if _, code := i.exec(t, id, "ls", "/html/usr"); code == 0 {
		t.Fatal("the sub path mount shows the image root")
	}
	for _, p := range []string{"/vol/new", "/html/new", "/html/index.html"} {
		if out, code := i.exec(t, id, "sh", "-c", "echo x >> "+p); code == 0 || !strings.Contains(out, "Read-only") {
			t.Fatalf("write to %s: exit %d, %q", p, code, out)
		}
	}

	st := i.ctrStatus(t, id)
	var seen int
	for _, m := range st.Mounts {
		if m.Image == nil {
			continue
		}
		seen++
		if m.Image.Image != nginx || m.Image.ImageRef != volID || !m.Readonly {
			t.Errorf("mount %s reported as %v", m.ContainerPath, m)
		}
		if m.ContainerPath == "/html" && m.ImageSubPath != "usr/share/nginx/html" {
			t.Errorf("sub path reported as %q", m.ImageSubPath)
		}
	}
	if seen != 2 {
		t.Fatalf("status reports %d image mounts: %v", seen, st.Mounts)
	}

	// The image can be removed; its layers stay until the container goes.
	layers := i.layerDirs(t)
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: nginx}}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); len(got) != len(layers) {
		t.Fatalf("layers after RemoveImage: %v, before: %v", got, layers)
	}
	if out, code := i.exec(t, id, "cat", "/html/50x.html"); code != 0 || !strings.Contains(out, "error") {
		t.Fatalf("volume after RemoveImage: %q (exit %d)", out, code)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	i.assertCtrGone(t, id)
	if got := i.layerDirs(t); len(got) >= len(layers) {
		t.Fatalf("the volume image's layers outlived the container: %v", got)
	}
}

func TestImageVolumeBadRequestsFailCleanly(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, nginx)
	podID, pod := i.podWithLogs(t, "imgvolbad")
	stateDir := filepath.Join(i.dir, "state", "containers")
	for _, tc := range []struct {
		name  string
		mount *runtimeapi.Mount
		code  codes.Code
	}{
		{"missing-sub-path", imageMount("/vol", nginx, "not-existing"), codes.InvalidArgument},
		{"escaping-sub-path", imageMount("/vol", nginx, "usr/../../etc"), codes.InvalidArgument},
		{"read-write", &runtimeapi.Mount{ContainerPath: "/vol", Image: &runtimeapi.ImageSpec{Image: nginx}}, codes.InvalidArgument},
		{"unknown-image", imageMount("/vol", "registry.k8s.io/e2e-test-images/nope:1", ""), codes.NotFound},
	} {
		cfg := ctrConfig(tc.name, "sleep 1000")
		cfg.Mounts = []*runtimeapi.Mount{imageMount("/ok", nginx, "usr"), tc.mount}
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if status.Code(err) != tc.code {
			t.Fatalf("%s: got %v, want %v", tc.name, err, tc.code)
		}
		if ents, _ := os.ReadDir(stateDir); len(ents) != 0 {
			t.Fatalf("%s: left %v in %s", tc.name, ents, stateDir)
		}
		if m := mountsUnder(i.dir); len(m) > 0 {
			for _, p := range m {
				if strings.Contains(p, "imagevols") {
					t.Fatalf("%s: left mount %s", tc.name, p)
				}
			}
		}
	}
	// Nothing pins nginx any more: removing it frees its own layers.
	before := i.layerDirs(t)
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: nginx}}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); len(got) >= len(before) {
		t.Fatalf("a failed create kept nginx pinned: layers %v", got)
	}
	// The name is free again.
	cfg := ctrConfig("missing-sub-path", "sleep 1000")
	i.create(t, podID, pod, cfg)
}

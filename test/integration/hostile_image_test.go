package integration

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// storeTemps lists what a pull in progress or a failed one could leave in
// the image store: half-unpacked layers, temporary blobs.
func (i *instance) storeTemps(t *testing.T) []string {
	t.Helper()
	var out []string
	ents, _ := os.ReadDir(filepath.Join(i.dir, "root", "images", "layers"))
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			out = append(out, "layers/"+e.Name())
		}
	}
	ents, _ = os.ReadDir(filepath.Join(i.dir, "root", "images", "blobs", "tmp"))
	for _, e := range ents {
		out = append(out, "blobs/tmp/"+e.Name())
	}
	return out
}

// Issue 11 item 5: `crictl rmi` of an image a running container uses, then
// a daemon crash and restart. The layers under the container's overlay
// must survive the image GC that follows recovery, and go when the
// container does.
func TestRemovedImageLayersSurviveRestart(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "rmi-restart")
	id := i.run(t, podID, pod, ctrConfig("c", "sleep 3600"))
	layers := i.layerDirs(t)
	if len(layers) == 0 {
		t.Fatal("no layers after the pull")
	}
	// CRI (as containerd) lets an image in use be removed; its layers stay.
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: busybox}}); err != nil {
		t.Fatalf("RemoveImage of an image in use: %v", err)
	}
	i.kill9()
	i.start()
	if got := i.layerDirs(t); !slices.Equal(got, layers) {
		t.Errorf("layers after restart: %v, want %v", got, layers)
	}
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after restart: %v", st.State)
	}
	if out, code := i.exec(t, id, "cat", "/etc/passwd"); code != 0 || !strings.Contains(out, "root:") {
		t.Fatalf("reading a file of the image after restart: exit %d, %q", code, out)
	}
	if resp, err := i.images().ListImages(ctx(t), &runtimeapi.ListImagesRequest{}); err != nil || len(resp.Images) != 0 {
		t.Errorf("ListImages after restart (the image was removed): %v %v", resp.GetImages(), err)
	}
	// The container goes: its layers follow.
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if got := i.layerDirs(t); len(got) != 0 {
		t.Errorf("layers left after the last user went: %v", got)
	}
	// A second restart finds nothing to bring back.
	i.kill9()
	i.start()
	if got := i.layerDirs(t); len(got) != 0 {
		t.Errorf("layers after the second restart: %v", got)
	}
	i.stopRemove(t, podID)
}

// The hostile image corpus (test/registry/fixture/hostile.go): every image
// pulls and runs safely, or fails cleanly; nothing lands outside the store.
func TestHostileImageCorpus(t *testing.T) {
	target, srv := hostileRegistry(t)
	i := newInstance(t)
	podID, pod := i.podWithLogs(t, "hostile")
	_, info := i.status(t, podID)
	for _, h := range fixture.HostileImages() {
		t.Run(h.Tag, func(t *testing.T) {
			defer assertTargetUntouched(t, target)
			i.pullHostile(t, srv, h, podID, pod)
		})
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
	if got := i.layerDirs(t); len(got) != 0 {
		t.Errorf("layers left: %v", got)
	}
}

// hostileRegistry serves the hostile corpus, whose entries aim at the
// directory target (it holds the victim file, fixture.HostileVictim).
func hostileRegistry(t *testing.T) (target string, srv *fixture.Server) {
	t.Helper()
	target, err := os.MkdirTemp("", "minicri-hostile-target-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(target) })
	if err := os.WriteFile(filepath.Join(target, fixture.HostileVictim), []byte("precious"), 0o644); err != nil {
		t.Fatal(err)
	}
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
	srv, err = fixture.Start("127.0.0.1:0", fixture.Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	if err := srv.Publish(hostile); err != nil {
		t.Fatal(err)
	}
	return target, srv
}

// assertTargetUntouched checks that nothing was written in target and that
// its victim file is as it was.
func assertTargetUntouched(t *testing.T, target string) {
	t.Helper()
	victim := filepath.Join(target, fixture.HostileVictim)
	ents, _ := os.ReadDir(target)
	var names []string
	for _, e := range ents {
		names = append(names, e.Name())
	}
	if !slices.Equal(names, []string{fixture.HostileVictim}) {
		t.Errorf("written outside the store, in %s: %q", target, names)
	}
	var st unix.Stat_t
	if err := unix.Lstat(victim, &st); err != nil {
		t.Fatalf("victim: %v", err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFREG || st.Nlink != 1 {
		t.Errorf("victim changed: mode %o, %d links", st.Mode, st.Nlink)
	}
	if b, _ := os.ReadFile(victim); string(b) != "precious" {
		t.Errorf("victim = %q", b)
	}
}

// pullHostile pulls the hostile image h: a refused one must leave nothing,
// an accepted one must hold its content and run, then be removed.
func (i *instance) pullHostile(t *testing.T, srv *fixture.Server, h fixture.HostileImage, podID string, pod *runtimeapi.PodSandboxConfig) {
	t.Helper()
	ref := srv.Ref(h.Ref())
	start := time.Now()
	_, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
	t.Logf("pull (%v): %v", time.Since(start).Round(time.Millisecond), err)
	if tmp := i.storeTemps(t); len(tmp) > 0 {
		t.Errorf("left in the store: %v", tmp)
	}
	if err != nil {
		if h.Outcome == fixture.HostileRuns {
			t.Fatalf("legitimate content refused: %v", err)
		}
		if st, _ := status.FromError(err); h.Tag == fixture.HostileBomb.Tag && st.Code() != codes.ResourceExhausted {
			t.Errorf("bomb: code %v, want ResourceExhausted", st.Code())
		}
		if resp, serr := i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); serr != nil || resp.Image != nil {
			t.Errorf("image after a failed pull: %v %v", resp.GetImage(), serr)
		}
		return
	}
	if h.Outcome == fixture.HostileFails {
		t.Fatal("pull succeeded")
	}
	for _, p := range h.Inside {
		if !inSomeLayer(i, p) {
			t.Errorf("%q not found in the store's layers", p)
		}
	}
	cfg := ctrConfig("h-"+h.Tag, "ls -la / >/dev/null && cat /etc/passwd >/dev/null")
	cfg.Image = &runtimeapi.ImageSpec{Image: ref}
	id := i.run(t, podID, pod, cfg)
	if st := i.waitExited(t, id, 20*time.Second); st.ExitCode != 0 {
		t.Errorf("container exited %d", st.ExitCode)
	}
	if _, err := i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id}); err != nil {
		t.Fatal(err)
	}
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
}

// inSomeLayer reports whether one of the store's unpacked layers holds p.
func inSomeLayer(i *instance, p string) bool {
	ents, _ := os.ReadDir(filepath.Join(i.dir, "root", "images", "layers"))
	for _, e := range ents {
		if _, err := os.Lstat(filepath.Join(i.dir, "root", "images", "layers", e.Name(), p)); err == nil {
			return true
		}
	}
	return false
}

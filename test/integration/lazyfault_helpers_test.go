package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/containerd/stargz-snapshotter/estargz"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// lazyHost is the registry host of lazyImage's copy of the eStargz image.
const lazyHost = "lazy.example"

// lazyImage is the eStargz fixture image (fixture.EStargzRef) on a registry
// of the test's own, whose hooks the test sets (the shared registry's stay
// untouched), and where in its top layer's blob each file's chunks lie.
type lazyImage struct {
	srv   *fixture.Server
	ref   string // under lazyHost
	layer string // the top layer's blob digest
	blob  []byte
	toc   *estargz.Reader
}

func newLazyImage(t *testing.T) *lazyImage {
	t.Helper()
	registryURL(t)
	src, err := name.ParseReference(registry.srv.Ref(fixture.EStargzRef), name.Insecure)
	if err != nil {
		t.Fatal(err)
	}
	img, err := remote.Image(src) // its raw manifest: the TOC annotations kept
	if err != nil {
		t.Fatal(err)
	}
	li := &lazyImage{srv: startRegistry(t, fixture.Options{}), ref: lazyHost + "/minicri/estargz:small"}
	if err := li.srv.Push("minicri/estargz:small", img); err != nil {
		t.Fatal(err)
	}
	layers, err := img.Layers()
	if err != nil || len(layers) != 2 {
		t.Fatalf("%s: %d layers (%v)", fixture.EStargzRef, len(layers), err)
	}
	d, err := layers[1].Digest()
	if err != nil {
		t.Fatal(err)
	}
	rc, err := layers[1].Compressed()
	if err != nil {
		t.Fatal(err)
	}
	defer rc.Close()
	if li.blob, err = io.ReadAll(rc); err != nil {
		t.Fatal(err)
	}
	li.layer = d.String()
	if li.toc, err = estargz.Open(io.NewSectionReader(bytes.NewReader(li.blob), 0, int64(len(li.blob)))); err != nil {
		t.Fatal(err)
	}
	return li
}

// streams is where in the blob the chunks of file p lie, [off, end) each,
// in file order; it fails the test when one is before the landmark (a
// prioritized file: the pull prefetches it).
func (li *lazyImage) streams(t *testing.T, p string) [][2]int64 {
	t.Helper()
	lm, ok := li.toc.Lookup(estargz.PrefetchLandmark)
	e, ok2 := li.toc.Lookup(p)
	if !ok || !ok2 {
		t.Fatalf("no landmark (%v) or no %s (%v) in the TOC", ok, p, ok2)
	}
	var out [][2]int64
	for off := int64(0); off < e.Size; {
		ce, ok := li.toc.ChunkEntryForOffset(p, off)
		if !ok {
			t.Fatalf("%s: no chunk at %d", p, off)
		}
		if ce.Offset < lm.Offset {
			t.Fatalf("%s: its chunk at %d is before the landmark: prefetched", p, off)
		}
		out = append(out, [2]int64{ce.Offset, ce.NextOffset()})
		off += ce.ChunkSize
	}
	return out
}

// refuseFile makes the registry answer 503 to each ranged GET of the
// layer's blob that asks for a byte of file p (but for a read of the TOC),
// while on holds (true until the test says otherwise), counting them in
// refused: the file stays unfetched (the background fetch retries).
func (li *lazyImage) refuseFile(t *testing.T, p string) (on *atomic.Bool, refused *atomic.Int32) {
	ss := li.streams(t, p)
	on, refused = new(atomic.Bool), new(atomic.Int32)
	on.Store(true)
	li.srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		br, ok := fixture.ParseBlobRange(r)
		// A range to the blob's end is the read of its TOC (the daemon's
		// probe reads the last 64 KiB, bytes of the last files with it):
		// what it holds of the file is never served from it, only the TOC.
		if !ok || br.Digest != li.layer || !on.Load() || br.End == int64(len(li.blob)) {
			return false
		}
		for _, s := range ss {
			if br.Overlaps(s[0], s[1]) {
				refused.Add(1)
				http.Error(w, "not now", http.StatusServiceUnavailable)
				return true
			}
		}
		return false
	})
	return on, refused
}

// fileSum is the sha256 (hex) of EStargzFiles' file p (without "/").
func fileSum(t *testing.T, p string) string {
	t.Helper()
	for _, f := range fixture.EStargzFiles() {
		if f.Name == p {
			return sha256Hex(f.Body)
		}
	}
	t.Fatalf("%s is not in the eStargz layer", p)
	return ""
}

// execLazy runs cmd in container id, waiting up to timeout.
func (i *instance) execLazy(t *testing.T, id string, timeout time.Duration, cmd ...string) (stdout, stderr string, code int32) {
	t.Helper()
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: int64(timeout / time.Second)})
	if err != nil {
		t.Fatalf("ExecSync %v: %v", cmd, err)
	}
	return string(res.Stdout), string(res.Stderr), res.ExitCode
}

// lazyRun pulls the image lazily and runs a container of it with script in
// a pod of its own; it returns the pod, the container and its log's path.
func (i *instance) lazyRun(t *testing.T, li *lazyImage, script string) (podID, id, logPath string) {
	t.Helper()
	hostsFor(t, i, lazyHost, li.srv.URL)
	i.pull(t, li.ref)
	podID, pod := i.podWithLogs(t, "lazy")
	cfg := ctrConfig("lazy", script)
	cfg.Image.Image = li.ref
	id = i.run(t, podID, pod, cfg)
	return podID, id, filepath.Join(pod.LogDirectory, cfg.LogPath)
}

// topLayer is lazyfs's status of the image's top layer.
func (li *lazyImage) topLayer(t *testing.T, c lazy.Client) lazy.MountStatus {
	t.Helper()
	_, served, err := c.List(ctx(t))
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range served {
		if strings.Contains(m.Mountpoint, strings.TrimPrefix(li.layer, "sha256:")) {
			return m
		}
	}
	t.Fatalf("lazyfs does not serve %s: %+v", li.layer, served)
	return lazy.MountStatus{}
}

// lazyTeardown removes the pod and the image, stops the daemon, then
// lazyfs, and fails the test when anything of them is left: the pod's
// netns pin, processes, cgroups or mounts, a FUSE mount or a FUSE
// connection not there before (fuseBefore), the lazyfs process, any
// process naming the instance's directory.
func (i *instance) lazyTeardown(t *testing.T, lazyfs lazy.Client, podID, ref string, fuseBefore []string) {
	t.Helper()
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	if _, err := i.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatalf("RemoveImage: %v", err)
	}
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
	pid, _, err := lazyfs.List(ctx(t))
	if err != nil {
		t.Fatalf("lazyfs: %v", err)
	}
	i.stop()
	if err := syscall.Kill(pid, syscall.SIGTERM); err != nil {
		t.Fatalf("lazyfs %d: %v", pid, err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		var left []string
		if alive(pid) {
			left = append(left, "lazyfs process")
		}
		left = append(left, fuseMountsUnder(t, i.dir)...)
		left = append(left, newOnes(fuseBefore, fuseConnections(t))...)
		left = append(left, processesMentioning(i.dir)...)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("left after the teardown: %v", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// neverAnswer is an intercept under which the registry answers nothing:
// each request waits, its connection open, until its client gives up, also
// once the registry is back (as behind a wedged proxy or a partition: the
// requests of the outage never get an answer; new ones do).
func neverAnswer(_ http.ResponseWriter, r *http.Request) bool {
	<-r.Context().Done()
	return true
}

// waitCtx is a context of d for one CRI call that must not block.
func waitCtx(d time.Duration) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), d)
}

// sha256Hex is the sha256 of b, in hex.
func sha256Hex(b []byte) string {
	s := sha256.Sum256(b)
	return hex.EncodeToString(s[:])
}

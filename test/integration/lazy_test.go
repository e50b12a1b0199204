package integration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// withLazyPulls turns [image] lazy on.
func withLazyPulls() option {
	return func(i *instance) { i.lazyPulls = true }
}

// killLazyfsAtEnd kills, at the test's end, the lazyfs server the instance
// started (its socket under the state dir): it outlives the daemon by design.
func killLazyfsAtEnd(t *testing.T, i *instance) lazy.Client {
	t.Helper()
	c := lazy.Client{Socket: filepath.Join(i.dir, "state", "lazyfs", "lazyfs.sock")}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		if pid, _, err := c.List(ctx); err == nil && pid > 1 {
			_ = syscall.Kill(pid, syscall.SIGTERM)
		}
	})
	return c
}

// fuseConnections is the FUSE connections the kernel has now.
func fuseConnections(t *testing.T) []string {
	t.Helper()
	ents, err := os.ReadDir("/sys/fs/fuse/connections")
	if err != nil {
		t.Skipf("no FUSE connections dir: %v", err)
	}
	var out []string
	for _, e := range ents {
		out = append(out, e.Name())
	}
	return out
}

// fuseMountsUnder is the FUSE mounts below dir in this mount namespace.
func fuseMountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	b, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if sep := slices.Index(f, "-"); sep > 4 && sep+1 < len(f) &&
			strings.HasPrefix(f[sep+1], "fuse") && strings.HasPrefix(f[4], dir+"/") {
			out = append(out, f[4])
		}
	}
	return out
}

// rootfsTree runs a container of the eStargz image in the instance and
// describes every file of its rootfs (through the overlay the daemon
// mounted): type, mode, owner, size, content digest, symlink target.
func rootfsTree(t *testing.T, i *instance, name string) map[string]string {
	t.Helper()
	podID, pod := i.podWithLogs(t, name)
	cfg := ctrConfig("tree", "sleep 1000")
	cfg.Image.Image = fixture.EStargzRef
	id := i.run(t, podID, pod, cfg)
	root := filepath.Join(i.dir, "state", "containers", id, "rootfs")
	if mounts := mountsUnder(filepath.Dir(root)); !slices.Contains(mounts, root) {
		root = findRootfs(t, i, id)
	}
	tree := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		tree[rel] = describe(t, p)
		return nil
	})
	if err != nil {
		t.Fatalf("walk %s: %v", root, err)
	}
	i.stopRemove(t, podID)
	return tree
}

// findRootfs is the overlay mount of container id under the instance.
func findRootfs(t *testing.T, i *instance, id string) string {
	t.Helper()
	for _, m := range mountsUnder(i.dir) {
		if strings.Contains(m, id) && filepath.Base(m) == "rootfs" {
			return m
		}
	}
	t.Fatalf("no rootfs mount of %s under %s: %v", id, i.dir, mountsUnder(i.dir))
	return ""
}

func describe(t *testing.T, p string) string {
	t.Helper()
	var st syscall.Stat_t
	if err := syscall.Lstat(p, &st); err != nil {
		t.Fatal(err)
	}
	s := fmt.Sprintf("mode %o uid %d gid %d", st.Mode, st.Uid, st.Gid)
	switch st.Mode & syscall.S_IFMT {
	case syscall.S_IFLNK:
		target, err := os.Readlink(p)
		if err != nil {
			t.Fatal(err)
		}
		s += " -> " + target
	case syscall.S_IFREG:
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatalf("read %s: %v", p, err)
		}
		sum := sha256.Sum256(b)
		s += fmt.Sprintf(" size %d sha256 %s", len(b), hex.EncodeToString(sum[:]))
	case syscall.S_IFCHR, syscall.S_IFBLK:
		s += fmt.Sprintf(" rdev %d", st.Rdev)
	}
	return s
}

// TestLazyPullSameTree: with lazy pulls on, the eStargz image is served by
// lazyfs (FUSE mounts under the image store), and a container of it sees
// the very tree a container of the same image pulled whole sees: every
// file's content, mode, owner, symlink target. ImageStatus reports the
// same size; RemoveImage leaves no FUSE mount, no new FUSE connection and
// no lazy layer directory.
func TestLazyPullSameTree(t *testing.T) {
	full := newInstance(t, withRegistry())
	full.pull(t, fixture.EStargzRef)
	want := rootfsTree(t, full, "full")

	before := fuseConnections(t)
	li := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, li)
	ref := li.pull(t, fixture.EStargzRef)
	if _, served, err := lazyfs.List(ctx(t)); err != nil || len(served) != 2 {
		t.Fatalf("lazyfs serves %v (%v), want the image's 2 eStargz layers", served, err)
	}
	lazyDir := filepath.Join(li.dir, "root", "images", "lazy")
	if m := fuseMountsUnder(t, lazyDir); len(m) != 2 {
		t.Fatalf("FUSE mounts under %s: %v, want the image's 2 eStargz layers", lazyDir, m)
	}
	got := rootfsTree(t, li, "lazy")
	// An eStargz blob's own files: a full pull unpacks them (as containerd
	// does without stargz-snapshotter), lazyfs shows neither (as
	// stargz-snapshotter): the landmark it hides, the TOC is no TOC entry.
	for _, p := range []string{".prefetch.landmark", "stargz.index.json"} {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: not in the fully pulled tree", p)
		}
		delete(want, p)
	}
	for p, w := range want {
		if g, ok := got[p]; !ok {
			t.Errorf("%s: missing from the lazily pulled tree", p)
		} else if g != w {
			t.Errorf("%s: lazy %s, full %s", p, g, w)
		}
	}
	for p := range got {
		if _, ok := want[p]; !ok {
			t.Errorf("%s: only in the lazily pulled tree", p)
		}
	}
	t.Logf("%d paths compared", len(want))

	checkLazyAccounting(t, li, full, ref)
	if _, err := li.images().RemoveImage(ctx(t), &runtimeapi.RemoveImageRequest{Image: &runtimeapi.ImageSpec{Image: ref}}); err != nil {
		t.Fatal(err)
	}
	if m := fuseMountsUnder(t, li.dir); len(m) > 0 {
		t.Errorf("FUSE mounts left after RemoveImage: %v", m)
	}
	if ents, err := os.ReadDir(lazyDir); err != nil || len(ents) > 0 {
		t.Errorf("lazy layer dirs left after RemoveImage: %v (%v)", ents, err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for extra := newOnes(before, fuseConnections(t)); len(extra) > 0; extra = newOnes(before, fuseConnections(t)) {
		if time.Now().After(deadline) {
			t.Errorf("FUSE connections left after RemoveImage: %v", extra)
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// checkLazyAccounting: ImageStatus of the lazy image reports the size the
// full pull's does (the manifest's), ImageFsInfo answers and counts bytes.
func checkLazyAccounting(t *testing.T, li, full *instance, ref string) {
	t.Helper()
	sizeOf := func(i *instance) uint64 {
		st, err := i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: ref}})
		if err != nil || st.Image == nil {
			t.Fatalf("ImageStatus: %v, %v", st, err)
		}
		return st.Image.Size
	}
	if l, f := sizeOf(li), sizeOf(full); l != f || l == 0 {
		t.Errorf("ImageStatus size: lazy %d, full %d", l, f)
	}
	fsi, err := li.images().ImageFsInfo(ctx(t), &runtimeapi.ImageFsInfoRequest{})
	if err != nil || len(fsi.ImageFilesystems) == 0 || fsi.ImageFilesystems[0].UsedBytes.GetValue() == 0 {
		t.Errorf("ImageFsInfo: %v, %v", fsi, err)
	}
}

func newOnes(before, now []string) []string {
	var out []string
	for _, c := range now {
		if !slices.Contains(before, c) {
			out = append(out, c)
		}
	}
	return out
}

// lazyPulled starts an instance with lazy pulls, pulls the eStargz image
// and returns the instance, its lazyfs, the tree a container of the image
// sees, and lazyfs's pid (serving the image's two layers).
func lazyPulled(t *testing.T) (*instance, lazy.Client, map[string]string, int) {
	t.Helper()
	li := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, li)
	li.pull(t, fixture.EStargzRef)
	want := rootfsTree(t, li, "before")
	pid, served, err := lazyfs.List(ctx(t))
	if err != nil || len(served) != 2 {
		t.Fatalf("lazyfs serves %v (%v)", served, err)
	}
	return li, lazyfs, want, pid
}

// TestLazyRestart: the daemon killed -9 leaves lazyfs serving, and the new
// daemon uses its mounts as they are; lazyfs killed -9 too, the new daemon
// starts another and mounts the recorded layers again (each from a fresh
// source): a new container sees the same tree as before.
func TestLazyRestart(t *testing.T) {
	li, lazyfs, want, pid := lazyPulled(t)
	li.kill9()
	li.start()
	if p, again, err := lazyfs.List(ctx(t)); err != nil || p != pid || len(again) != 2 {
		t.Fatalf("after the daemon's kill -9: pid %d (was %d), %d mounts, %v", p, pid, len(again), err)
	}
	compareTrees(t, "daemon restarted", want, rootfsTree(t, li, "daemon-restarted"))

	li.kill9()
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	li.start()
	p, again, err := lazyfs.List(ctx(t))
	if err != nil || p == pid || len(again) != 2 {
		t.Fatalf("after lazyfs's kill -9: pid %d (was %d), %d mounts, %v", p, pid, len(again), err)
	}
	compareTrees(t, "lazyfs restarted", want, rootfsTree(t, li, "lazyfs-restarted"))
}

// TestLazyfsKilledWhileDaemonRuns: lazyfs killed -9 under a running
// daemon is started again by the daemon within a few watch periods, which
// mounts the recorded layers again: the image is still there, and a new
// container of it sees the same tree as before.
func TestLazyfsKilledWhileDaemonRuns(t *testing.T) {
	li, lazyfs, want, pid := lazyPulled(t)
	if err := syscall.Kill(pid, syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	var p int
	var again []lazy.MountStatus
	var err error
	if !waitFor(t, 10*image.LazyWatchPeriod, func() bool {
		p, again, err = lazyfs.List(ctx(t))
		return err == nil && p != pid && len(again) == 2
	}) {
		t.Fatalf("%v after lazyfs's kill -9: pid %d (was %d), mounts %v, %v", 10*image.LazyWatchPeriod, p, pid, again, err)
	}
	st, err := li.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: fixture.EStargzRef}})
	if err != nil || st.Image == nil {
		t.Fatalf("ImageStatus after lazyfs came back: %v, %v", st, err)
	}
	compareTrees(t, "lazyfs restarted by the daemon", want, rootfsTree(t, li, "lazyfs-back"))
}

func compareTrees(t *testing.T, what string, want, got map[string]string) {
	t.Helper()
	for p, w := range want {
		if g := got[p]; g != w {
			t.Errorf("%s: %s: now %q, was %q", what, p, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("%s: %d paths, were %d", what, len(got), len(want))
	}
}

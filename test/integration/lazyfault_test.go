package integration

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/lazy"
	"github.com/minicri/minicri/test/registry/fixture"
)

// TestLazyTamperedChunk: the registry serves the eStargz layer's ranges
// with one chunk of /lazy/big.bin (not a prioritized file: neither the
// pull's prefetch nor anything before the container asks for it) altered:
// valid gzip, as long, one byte of content changed, the TOC unchanged.
// Inside the container, reading that chunk is an I/O error, every time,
// never the altered bytes; the chunks of the file before it, and the
// other files, read with their right bytes; the layer never counts as
// complete. Nothing is left afterwards.
func TestLazyTamperedChunk(t *testing.T) {
	li := newLazyImage(t)
	const chunk = 16 << 10 // the layer's chunk size (fixture.addEStargz)
	target := li.streams(t, "lazy/big.bin")[5]
	bad, err := fixture.TamperGzipMember(li.blob, target[0], target[1])
	if err != nil {
		t.Fatal(err)
	}
	var tampered atomic.Int32
	serveBad := fixture.ServeRangesFrom(li.layer, bad)
	li.srv.SetIntercept(func(w http.ResponseWriter, r *http.Request) bool {
		if br, ok := fixture.ParseBlobRange(r); ok && br.Digest == li.layer && br.Overlaps(target[0], target[1]) {
			tampered.Add(1)
		}
		return serveBad(w, r)
	})
	fuseBefore := fuseConnections(t)
	i := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, i)
	podID, id, _ := i.lazyRun(t, li, "sleep 1000")

	for range 2 {
		out, errOut, code := i.execLazy(t, id, 30*time.Second, "sha256sum", "/lazy/big.bin")
		if code == 0 || !strings.Contains(errOut, "Input/output error") {
			t.Errorf("sha256sum of the tampered file: exit %d, %q %q; want an I/O error", code, out, errOut)
		}
	}
	out, errOut, code := i.execLazy(t, id, 30*time.Second, "sh", "-c",
		fmt.Sprintf("dd if=/lazy/big.bin bs=%d skip=5 count=1 | wc -c", chunk))
	if !strings.Contains(errOut, "Input/output error") || strings.TrimSpace(out) != "0" {
		t.Errorf("dd of the tampered chunk: exit %d, %q bytes out, %q; want an I/O error and no byte", code, out, errOut)
	}
	big := bigBin(t)
	out, _, code = i.execLazy(t, id, 30*time.Second, "sh", "-c",
		fmt.Sprintf("dd if=/lazy/big.bin bs=%d count=5 2>/dev/null | sha256sum", chunk))
	if want := sha256Hex(big[:5*chunk]); code != 0 || !strings.HasPrefix(out, want) {
		t.Errorf("the chunks before the tampered one: exit %d, %q, want %s", code, out, want)
	}
	for _, p := range []string{"lazy/hello.txt", "lazy/sub/note", "lazy/run.sh"} {
		out, errOut, code := i.execLazy(t, id, 30*time.Second, "sha256sum", "/"+p)
		if want := fileSum(t, p); code != 0 || !strings.HasPrefix(out, want) {
			t.Errorf("%s: exit %d, %q %q, want %s", p, code, out, errOut, want)
		}
	}
	if tampered.Load() == 0 {
		t.Error("no range request asked for the tampered chunk: the test tested nothing")
	}
	if st := li.topLayer(t, lazyfs); st.Complete || st.Fetched >= st.Total {
		t.Errorf("the layer with a tampered chunk: %+v; want it incomplete", st)
	}
	i.lazyTeardown(t, lazyfs, podID, li.ref, fuseBefore)
}

// bigBin is the content of the layer's lazy/big.bin.
func bigBin(t *testing.T) []byte {
	t.Helper()
	for _, f := range fixture.EStargzFiles() {
		if f.Name == "lazy/big.bin" {
			return f.Body
		}
	}
	t.Fatal("no lazy/big.bin")
	return nil
}

// TestLazyRegistryGoneAndBack: a container of the lazily pulled image
// runs, /lazy/big.bin not fetched yet (the registry refuses its ranges
// until then); the registry stops answering (every request hangs, its
// connection open, until the client gives up: neverAnswer). A read of the
// file in the container fails with an I/O error within the fetch timeout
// (lazy.DefaultFetchTimeout: the daemon sets none) plus 10 s, while CRI
// calls (ListContainers, ContainerStatus, ListImages, ImageStatus,
// ImageFsInfo, ContainerStats) keep answering, each within criBound. Once
// the registry is back, the same read returns the right bytes, and the
// background fetch completes the layer within twice the fetch timeout and
// 15 s (the requests made while the registry was gone are never answered:
// before, the background fetch waited on one for ever). Nothing is left
// afterwards.
func TestLazyRegistryGoneAndBack(t *testing.T) {
	li := newLazyImage(t)
	_, refused := li.refuseFile(t, "lazy/big.bin")
	fuseBefore := fuseConnections(t)
	i := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, i)
	podID, id, _ := i.lazyRun(t, li, "sleep 1000")
	// The background fetch starts a silence after the prefetch (lazy.DefaultSilence).
	waitFor(t, 10*time.Second, func() bool { return refused.Load() > 0 })
	if st := li.topLayer(t, lazyfs); st.Complete || refused.Load() == 0 {
		t.Fatalf("big.bin's ranges refused %d times, layer %+v: want it not fetched yet", refused.Load(), st)
	}

	li.srv.SetIntercept(neverAnswer)
	var res struct {
		out, errOut string
		code        int32
		took        time.Duration
	}
	finished := make(chan struct{})
	start := time.Now()
	go func() {
		defer close(finished)
		r, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: []string{"sha256sum", "/lazy/big.bin"}, Timeout: 120})
		res.took = time.Since(start)
		if err != nil {
			res.errOut, res.code = err.Error(), -1
			return
		}
		res.out, res.errOut, res.code = string(r.Stdout), string(r.Stderr), r.ExitCode
	}()
	calls := i.criMeanwhile(t, id, li.ref, finished)
	<-finished
	bound := lazy.DefaultFetchTimeout + 10*time.Second
	if res.code == 0 || !strings.Contains(res.errOut, "Input/output error") || res.took > bound {
		t.Fatalf("read with the registry gone: exit %d after %v, %q %q; want an I/O error within %v",
			res.code, res.took.Round(time.Millisecond), res.out, res.errOut, bound)
	}
	t.Logf("I/O error after %v (bound %v); %d CRI calls answered meanwhile", res.took.Round(time.Millisecond), bound, calls)

	li.srv.SetIntercept(nil)
	backAt := time.Now()
	time.Sleep(1500 * time.Millisecond) // lazyfs fails reads at once for 1 s after a timeout
	out, errOut, code := i.execLazy(t, id, 60*time.Second, "sha256sum", "/lazy/big.bin")
	if want := fileSum(t, "lazy/big.bin"); code != 0 || !strings.HasPrefix(out, want) {
		t.Fatalf("read with the registry back: exit %d, %q %q, want %s", code, out, errOut, want)
	}
	// The background fetch resumes too: a request the registry left
	// unanswered is given up after the fetch timeout, retried after at most
	// the background's longest pause (as long).
	within := 2*lazy.DefaultFetchTimeout + 15*time.Second
	for st := li.topLayer(t, lazyfs); !st.Complete; st = li.topLayer(t, lazyfs) {
		if time.Since(backAt) > within {
			t.Fatalf("the layer not complete %v after the registry came back: %+v", within, st)
		}
		time.Sleep(200 * time.Millisecond)
	}
	t.Logf("layer complete %v after the registry came back", time.Since(backAt).Round(time.Millisecond))
	i.lazyTeardown(t, lazyfs, podID, li.ref, fuseBefore)
}

// criBound bounds each CRI call while a read waits for the registry: far
// below the fetch timeout (a call that waited on the read would take it),
// above what a loaded machine's scheduling costs (2 s was once exceeded by
// ContainerStats under a CPU soak).
const criBound = 5 * time.Second

// criMeanwhile calls the daemon over and over until finished is closed,
// failing the test when a call errs or takes more than criBound; it
// returns how many calls answered.
func (i *instance) criMeanwhile(t *testing.T, id, ref string, finished <-chan struct{}) int {
	t.Helper()
	img := &runtimeapi.ImageSpec{Image: ref}
	calls := []struct {
		name string
		call func(context.Context) error
	}{
		{"ListContainers", func(c context.Context) error {
			_, err := i.rt.ListContainers(c, &runtimeapi.ListContainersRequest{})
			return err
		}},
		{"ContainerStatus", func(c context.Context) error {
			_, err := i.rt.ContainerStatus(c, &runtimeapi.ContainerStatusRequest{ContainerId: id, Verbose: true})
			return err
		}},
		{"ContainerStats", func(c context.Context) error {
			_, err := i.rt.ContainerStats(c, &runtimeapi.ContainerStatsRequest{ContainerId: id})
			return err
		}},
		{"ListImages", func(c context.Context) error {
			_, err := i.images().ListImages(c, &runtimeapi.ListImagesRequest{})
			return err
		}},
		{"ImageStatus", func(c context.Context) error {
			_, err := i.images().ImageStatus(c, &runtimeapi.ImageStatusRequest{Image: img})
			return err
		}},
		{"ImageFsInfo", func(c context.Context) error {
			_, err := i.images().ImageFsInfo(c, &runtimeapi.ImageFsInfoRequest{})
			return err
		}},
	}
	n := 0
	for {
		for _, c := range calls {
			cctx, cancel := waitCtx(criBound)
			t0 := time.Now()
			err := c.call(cctx)
			cancel()
			if err != nil {
				t.Errorf("%s while a read waits for the registry: %v after %v", c.name, err, time.Since(t0).Round(time.Millisecond))
			}
			n++
		}
		select {
		case <-finished:
			return n
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// readLoop is a container's script that reads files over and over, each
// read logged as "N PATH SHA256" ("N PATH ERR" when it fails).
func readLoop(files []string) string {
	return fmt.Sprintf(`n=0; while :; do for f in %s; do if s=$(sha256sum "$f"); then echo "$n $f ${s%%%% *}"; else echo "$n $f ERR"; fi; done; n=$((n+1)); sleep 0.1; done`,
		strings.Join(files, " "))
}

// readResults checks each read the log holds against want (path to sha256)
// and returns how many there are and the last round that completed.
func readResults(t *testing.T, logPath string, want map[string]string) (reads, round int) {
	t.Helper()
	round = -1
	for _, l := range readLog(t, logPath) {
		var n int
		var p, got string
		if _, err := fmt.Sscanf(l.content, "%d %s %s", &n, &p, &got); err != nil || want[p] == "" {
			t.Fatalf("log line %q", l.content)
		}
		if got != want[p] {
			t.Fatalf("round %d: %s read %s, want %s", n, p, got, want[p])
		}
		reads++
		if p == "/lazy/big.bin" { // the last of a round
			round = n
		}
	}
	return reads, round
}

// waitRound waits until the log shows round n done, every read right, and
// returns the last round done.
func waitRound(t *testing.T, logPath string, want map[string]string, n int, within time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(within)
	for {
		reads, round := readResults(t, logPath, want)
		if round >= n {
			return round
		}
		if time.Now().After(deadline) {
			t.Fatalf("round %d not done after %v (last %d, %d reads)", n, within, round, reads)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// TestLazyKill9WhileReading: a container of the lazily pulled image reads
// and checksums four files in a loop, logging each result; the last,
// /lazy/big.bin, is not fetched yet (the registry refuses its ranges) when
// the daemon is killed -9. With the daemon down, the registry serves again:
// the waiting read gets the right bytes from lazyfs alone and the log
// keeps growing, every checksum right, for rounds. The new daemon takes
// the mounts back: the same lazyfs serves the same two layers, no second
// FUSE mount of a layer, no new FUSE connection; the container is still
// running and its log keeps growing right. Nothing is left afterwards.
func TestLazyKill9WhileReading(t *testing.T) {
	li := newLazyImage(t)
	refusing, refused := li.refuseFile(t, "lazy/big.bin")
	files := []string{"/lazy/hello.txt", "/lazy/sub/note", "/lazy/run.sh", "/lazy/big.bin"}
	want := map[string]string{}
	for _, f := range files {
		want[f] = fileSum(t, f[1:])
	}
	fuseBefore := fuseConnections(t)
	i := newInstance(t, withRegistry(), withLazyPulls())
	lazyfs := killLazyfsAtEnd(t, i)
	podID, id, logPath := i.lazyRun(t, li, readLoop(files))
	waitLogContains(t, logPath, "0 /lazy/run.sh ", 30*time.Second)
	if _, round := readResults(t, logPath, want); round >= 0 || refused.Load() == 0 {
		t.Fatalf("big.bin read (round %d) before the kill, its ranges refused %d times: want it waiting", round, refused.Load())
	}
	pid, served, err := lazyfs.List(ctx(t))
	lazyDir := filepath.Join(i.dir, "root", "images", "lazy")
	mounts, conns := fuseMountsUnder(t, lazyDir), fuseConnections(t)
	if err != nil || len(served) != 2 || len(mounts) != 2 {
		t.Fatalf("lazyfs serves %d layers (%v), FUSE mounts %v; want the image's 2", len(served), err, mounts)
	}

	i.kill9()
	refusing.Store(false)
	round := waitRound(t, logPath, want, 2, 40*time.Second) // the daemon down all along
	t.Logf("with the daemon down: round %d read right", round)

	i.start()
	p, again, err := lazyfs.List(ctx(t))
	if err != nil || p != pid || len(again) != 2 {
		t.Fatalf("after the restart: lazyfs %d (was %d) serves %d layers (%v)", p, pid, len(again), err)
	}
	if m := fuseMountsUnder(t, lazyDir); !slices.Equal(m, mounts) {
		t.Errorf("FUSE mounts after the restart: %v, were %v", m, mounts)
	}
	if extra := newOnes(conns, fuseConnections(t)); len(extra) > 0 {
		t.Errorf("new FUSE connections after the restart: %v", extra)
	}
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("container after the restart: %v", st.State)
	}
	if st, err := i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: li.ref}}); err != nil || st.Image == nil {
		t.Errorf("ImageStatus after the restart: %v, %v", st, err)
	}
	waitRound(t, logPath, want, round+3, 30*time.Second)
	i.lazyTeardown(t, lazyfs, podID, li.ref, fuseBefore)
}

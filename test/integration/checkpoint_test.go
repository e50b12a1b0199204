package integration

import (
	"archive/tar"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// tarEntries reads a tar stream: entry name -> content of regular files ("" for others).
func tarEntries(t *testing.T, r io.Reader) map[string]string {
	t.Helper()
	tr := tar.NewReader(r)
	out := map[string]string{}
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("read tar: %v", err)
		}
		content := ""
		if hdr.Typeflag == tar.TypeReg {
			b, err := io.ReadAll(tr)
			if err != nil {
				t.Fatal(err)
			}
			content = string(b)
		}
		out[hdr.Name] = content
	}
}

// lastCount is the highest number the counter logged.
func lastCount(t *testing.T, path string) int {
	t.Helper()
	n := -1
	for _, l := range readLog(t, path) {
		if v, err := strconv.Atoi(l.content); err == nil && v > n {
			n = v
		}
	}
	return n
}

func TestCheckpointContainerKeepsItRunning(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "ckpt")
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, ctrConfig("counter",
		`echo data > /written; rm /etc/group; i=0; while true; do echo $i; i=$((i+1)); sleep 0.05; done`))
	path := i.ctrStatus(t, id).LogPath
	waitLog(t, path, "5", 10*time.Second)

	dir := t.TempDir()
	location := filepath.Join(dir, "counter.tar")
	start := time.Now()
	if _, err := i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{
		ContainerId: id, Location: location, Timeout: 60,
	}); err != nil {
		t.Fatalf("CheckpointContainer: %v\n%s", err, i.logTail())
	}
	t.Logf("checkpoint took %s", time.Since(start).Round(time.Millisecond))
	after := lastCount(t, path)

	f, err := os.Open(location)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	entries := tarEntries(t, f)
	if _, ok := entries["checkpoint/pstree.img"]; !ok {
		if _, ok := entries["checkpoint/inventory.img"]; !ok {
			t.Errorf("no checkpoint/pstree.img or inventory.img in %v", keys(entries))
		}
	}
	for _, name := range []string{"spec.dump", "config.dump", "rootfs-diff.tar", "deleted.files"} {
		if _, ok := entries[name]; !ok {
			t.Errorf("archive has no %s: %v", name, keys(entries))
		}
	}
	var spec struct {
		Process struct{ Args []string } `json:"process"`
	}
	if err := json.Unmarshal([]byte(entries["spec.dump"]), &spec); err != nil || len(spec.Process.Args) == 0 {
		t.Errorf("spec.dump: %v %q", err, entries["spec.dump"])
	}
	var cfg struct {
		ID   string `json:"id"`
		Name string `json:"name"`
	}
	if err := json.Unmarshal([]byte(entries["config.dump"]), &cfg); err != nil || cfg.ID != id || cfg.Name != "counter" {
		t.Errorf("config.dump: %v %q", err, entries["config.dump"])
	}
	diff := tarEntries(t, strings.NewReader(entries["rootfs-diff.tar"]))
	if diff["written"] != "data\n" {
		t.Errorf("rootfs-diff.tar: /written is %q (entries %v)", diff["written"], keys(diff))
	}
	var deleted []string
	if err := json.Unmarshal([]byte(entries["deleted.files"]), &deleted); err != nil || !slices.Contains(deleted, "/etc/group") {
		t.Errorf("deleted.files: %v %q", err, entries["deleted.files"])
	}
	if _, ok := diff["etc/group"]; ok {
		t.Errorf("rootfs-diff.tar holds the whiteout of /etc/group")
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("temporary files left next to the archive: %v", ents)
	}

	// The container was left running (not frozen) and keeps counting.
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after checkpoint: %v", st.State)
	}
	waitLog(t, path, strconv.Itoa(after+10), 10*time.Second)
	wantThawed := "THAWED"
	if hostUnified() {
		wantThawed = "0"
	}
	if s := i.ctrCgroupFile(t, id, "freezer", "freezer.state", "cgroup.freeze"); s != wantThawed {
		t.Errorf("container cgroup frozen (%q) after checkpoint", s)
	}
	if p := processesMentioning("criu\x00swrk"); len(p) > 0 {
		t.Errorf("criu processes left: %v", p)
	}

	// A stopped container cannot be checkpointed; nothing is written.
	if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 1}); err != nil {
		t.Fatal(err)
	}
	stopped := filepath.Join(dir, "stopped.tar")
	_, err = i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: stopped})
	if status.Code(err) != codes.FailedPrecondition {
		t.Errorf("checkpoint of a stopped container: %v, want FailedPrecondition", err)
	}
	if _, err := os.Stat(stopped); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("checkpoint of a stopped container wrote %s: %v", stopped, err)
	}
	_, err = i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: "0123456789abcdef", Location: stopped})
	if status.Code(err) != codes.NotFound {
		t.Errorf("checkpoint of an unknown container: %v, want NotFound", err)
	}
	_, err = i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: "relative.tar"})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("checkpoint to a relative location: %v, want InvalidArgument", err)
	}
	if ents, _ := os.ReadDir(dir); len(ents) != 1 {
		t.Errorf("files left after failed checkpoints: %v", ents)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func keys(m map[string]string) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

package integration

import (
	"archive/tar"
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/checkpoint-restore/go-criu/v8/crit"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/mnt"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The steps the checkpoint/restore and migration tests share: a container
// or pod checkpointed in a pod that is removed after, the restore side's
// requests, and checkpoint archives tampered with as an attacker would.

// ckptSource is a container checkpointed into archive, from a pod removed
// since (pod and inf are kept for assertNothingLeft).
type ckptSource struct {
	archive string
	pod     string
	inf     podInfo
	// before and after are the last numbers a counter had logged before the
	// checkpoint and when it returned: it was frozen in between (-1 for a
	// container that logs no numbers).
	before, after int
}

// checkpointSource runs cfg in a new pod named podName, waits until it has
// logged the line upTo ("" for a container that logs nothing: it is given
// 300 ms to start), checkpoints it into an archive and removes the pod.
func (i *instance) checkpointSource(t *testing.T, podName string, cfg *runtimeapi.ContainerConfig, upTo string) ckptSource {
	t.Helper()
	pod, cfgPod := i.podWithLogs(t, podName)
	_, inf := i.status(t, pod)
	id := i.run(t, pod, cfgPod, cfg)
	src := ckptSource{pod: pod, inf: inf, before: -1, after: -1}
	log := ""
	if upTo == "" {
		time.Sleep(300 * time.Millisecond)
	} else {
		log = i.ctrStatus(t, id).LogPath
		waitLog(t, log, upTo, 10*time.Second)
		src.before = lastCount(t, log)
	}
	src.archive = filepath.Join(t.TempDir(), cfg.Metadata.Name+".tar")
	start := time.Now()
	if _, err := i.rt.CheckpointContainer(ctx(t), &runtimeapi.CheckpointContainerRequest{ContainerId: id, Location: src.archive}); err != nil {
		t.Fatalf("CheckpointContainer: %v", err)
	}
	t.Logf("checkpoint took %s", time.Since(start).Round(time.Millisecond))
	if log != "" {
		src.after = lastCount(t, log)
	}
	i.stopRemove(t, pod)
	return src
}

// runCounters runs a counter (counterScript) of each name in the pod and
// waits until each has logged upTo; it returns their IDs and configs.
func (i *instance) runCounters(t *testing.T, podID string, pod *runtimeapi.PodSandboxConfig, upTo string, names ...string) ([]string, []*runtimeapi.ContainerConfig) {
	t.Helper()
	var ids []string
	var ccs []*runtimeapi.ContainerConfig
	for _, name := range names {
		ccs = append(ccs, ctrConfig(name, counterScript))
		ids = append(ids, i.run(t, podID, pod, ccs[len(ccs)-1]))
	}
	for _, id := range ids {
		waitLog(t, i.ctrStatus(t, id).LogPath, upTo, 10*time.Second)
	}
	return ids, ccs
}

// restoring makes cfg restore from archive (a checkpoint archive's path or
// a checkpoint image's reference, in the image field).
func restoring(cfg *runtimeapi.ContainerConfig, archive string) *runtimeapi.ContainerConfig {
	cfg.Image.Image = archive
	return cfg
}

// tryCreate is a CreateContainer that may be refused: the container's ID
// ("" if none) and the error. A refused one must leave nothing behind: no
// container record, directory, runtime state or mount the call made.
func (i *instance) tryCreate(t *testing.T, c context.Context, podID string, pod *runtimeapi.PodSandboxConfig, cfg *runtimeapi.ContainerConfig) (string, error) {
	t.Helper()
	before := i.ctrTraces(t)
	resp, err := i.rt.CreateContainer(c, &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
	if err != nil {
		i.assertNoNewTraces(t, before, err)
	}
	return resp.GetContainerId(), err
}

// ctrTraces is every trace containers leave on the instance: records the
// daemon lists, their directories, runtime state and mounts.
func (i *instance) ctrTraces(t *testing.T) map[string]bool {
	t.Helper()
	traces := map[string]bool{}
	resp, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range resp.Containers {
		traces["container "+c.Id] = true
	}
	for _, pattern := range []string{"root/containers/*", "state/containers/*", "state/runc/*", "state/runtimes/*/*"} {
		matches, _ := filepath.Glob(filepath.Join(i.dir, pattern))
		for _, m := range matches {
			traces["path "+m] = true
		}
	}
	for _, m := range mountsUnder(i.dir) {
		traces["mount "+m] = true
	}
	return traces
}

// assertNoNewTraces wants no trace that was not there before a refused call
// (a cleanup may take a moment).
func (i *instance) assertNoNewTraces(t *testing.T, before map[string]bool, refusal error) {
	t.Helper()
	deadline := time.Now().Add(3 * time.Second)
	for {
		var added []string
		for tr := range i.ctrTraces(t) {
			if !before[tr] {
				added = append(added, tr)
			}
		}
		if len(added) == 0 {
			return
		}
		if time.Now().After(deadline) {
			sort.Strings(added)
			t.Errorf("refused (%v) but left behind:\n  %s", refusal, strings.Join(added, "\n  "))
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// twoNodes starts the two instances of a migration, a (the source node)
// and b (the destination), each with busybox pulled.
func twoNodes(t *testing.T) (a, b *instance) {
	t.Helper()
	a, b = newInstance(t, withRegistry()), newInstance(t, withRegistry())
	a.pull(t, busybox)
	b.pull(t, busybox)
	return a, b
}

// logPodConfig is podConfig(name) with its log directory under the
// instance, as podWithLogs's, for a pod that RestorePod makes.
func (i *instance) logPodConfig(name string) *runtimeapi.PodSandboxConfig {
	cfg := podConfig(name)
	cfg.LogDirectory = filepath.Join(i.dir, "logs", cfg.Metadata.Name)
	return cfg
}

// checkpointPod runs CheckpointPod of the containers ids into a new directory.
func (i *instance) checkpointPod(t *testing.T, podID string, ids ...string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "pod-ckpt")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	if _, err := i.rt.CheckpointPod(ctx(t), &runtimeapi.CheckpointPodRequest{
		PodSandboxId: podID, OutputPath: dir, ContainerIds: ids,
	}); err != nil {
		t.Fatalf("CheckpointPod: %v", err)
	}
	return dir
}

// restorePod restores the checkpoint in dir as a new pod with the given
// container configs and starts every container; it returns the pod and
// the container IDs by name.
func (i *instance) restorePod(t *testing.T, dir string, pod *runtimeapi.PodSandboxConfig, ccs ...*runtimeapi.ContainerConfig) (string, map[string]string) {
	t.Helper()
	resp, err := i.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: pod, ContainerConfigs: ccs})
	if err != nil {
		t.Fatalf("RestorePod: %v", err)
	}
	ids := map[string]string{}
	for _, c := range resp.RestoredContainers {
		if st := i.ctrStatus(t, c.ContainerId); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
			t.Fatalf("restored container %s is %v before StartContainer", c.Name, st.State)
		}
		i.startCtr(t, c.ContainerId)
		ids[c.Name] = c.ContainerId
	}
	return resp.PodSandboxId, ids
}

// tamperArchive copies the archive at path, passing the content of each
// regular file whose name starts with prefix through edit.
func tamperArchive(t *testing.T, path, prefix string, edit func([]byte) []byte) string {
	t.Helper()
	in, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out := filepath.Join(t.TempDir(), "tampered.tar")
	f, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	tr, tw := tar.NewReader(in), tar.NewWriter(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg && strings.HasPrefix(strings.TrimPrefix(hdr.Name, "./"), prefix) {
			data = edit(data)
			hdr.Size = int64(len(data))
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return out
}

// recodeImage decodes a CRIU image whose entries are of type typ, passes
// the entries through edit and encodes what it returns.
func recodeImage(t *testing.T, data []byte, typ proto.Message, edit func([]*crit.CriuEntry) []*crit.CriuEntry) []byte {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.img"), filepath.Join(dir, "out.img")
	if err := os.WriteFile(in, data, 0o600); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Open(in)
	if err != nil {
		t.Fatal(err)
	}
	defer fi.Close()
	img, err := crit.New(fi, nil, "", false, false).Decode(typ)
	if err != nil {
		t.Fatalf("decode %T: %v", typ, err)
	}
	img.Entries = edit(img.Entries)
	fo, err := os.Create(out)
	if err != nil {
		t.Fatal(err)
	}
	defer fo.Close()
	if err := crit.New(nil, fo, "", false, false).Encode(img); err != nil {
		t.Fatalf("encode %T: %v", typ, err)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// editImage edits each entry of a CRIU image of type typ.
func editImage(t *testing.T, data []byte, typ proto.Message, edit func(proto.Message)) []byte {
	t.Helper()
	return recodeImage(t, data, typ, func(es []*crit.CriuEntry) []*crit.CriuEntry {
		for _, e := range es {
			edit(e.Message)
		}
		return es
	})
}

// editMounts edits the list of entries of a mountpoints image.
func editMounts(t *testing.T, data []byte, edit func([]*mnt.MntEntry) []*mnt.MntEntry) []byte {
	t.Helper()
	return recodeImage(t, data, &mnt.MntEntry{}, func(es []*crit.CriuEntry) []*crit.CriuEntry {
		var ms []*mnt.MntEntry
		for _, e := range es {
			ms = append(ms, e.Message.(*mnt.MntEntry))
		}
		es = es[:0]
		for _, m := range edit(ms) {
			es = append(es, &crit.CriuEntry{Message: m})
		}
		return es
	})
}

package integration

import (
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// tcpScript keeps one loopback TCP connection open inside the container
// and logs every number it carries ("got N"); if the connection breaks,
// the sender's nc exits and the numbers stop.
const tcpScript = `sleep 1000000 | nc -l -p 9000 | while read l; do echo "got $l"; done & sleep 0.5; i=0; while true; do echo $i; i=$((i+1)); sleep 0.1; done | nc 127.0.0.1 9000`

// lastGot is the highest N of the "got N" lines of the log.
func lastGot(t *testing.T, path string) (first, last int) {
	t.Helper()
	first, last = -1, -1
	for _, l := range readLog(t, path) {
		if v, err := strconv.Atoi(strings.TrimPrefix(l.content, "got ")); err == nil && strings.HasPrefix(l.content, "got ") {
			if first < 0 {
				first = v
			}
			last = max(last, v)
		}
	}
	return first, last
}

// TestMigratePodBetweenInstances moves a running pod from one minicri to
// another (own root, state, socket, bridge, subnet): its counter goes on
// from where it was frozen, its file moves with it, its log continues in
// the new instance's log file.
func TestMigratePodBetweenInstances(t *testing.T) {
	a, b := twoNodes(t)
	podA, cfgA := a.podWithLogs(t, "migrate")
	_, infA := a.status(t, podA)
	ccs := []*runtimeapi.ContainerConfig{ctrConfig("counter", counterScript)}
	counter := a.run(t, podA, cfgA, ccs[0])
	counterLog := a.ctrStatus(t, counter).LogPath
	waitLog(t, counterLog, "10", 10*time.Second)

	// Downtime: from the freeze to the restored processes running on B.
	before := lastCount(t, counterLog)
	start := time.Now()
	dir := a.checkpointPod(t, podA, counter)
	frozenAt := lastCount(t, counterLog)
	a.stopRemove(t, podA) // the source stops: the pod now lives on B only
	// "Transfer" the checkpoint to B's node.
	moved := filepath.Join(b.dir, "incoming")
	if out, err := exec.Command("cp", "-a", dir, moved).CombinedOutput(); err != nil {
		t.Fatalf("copy checkpoint: %v %s", err, out)
	}
	cfgB := b.logPodConfig("migrate")
	cfgB.Metadata = cfgA.Metadata // the same pod, on another node
	podB, ids := b.restorePod(t, moved, cfgB, ccs...)
	downtime := time.Since(start)
	t.Logf("migration: checkpoint+stop+copy+restore+start took %s", downtime.Round(time.Millisecond))
	_, infB := b.status(t, podB)

	newLog := b.ctrStatus(t, ids["counter"]).LogPath
	if !strings.HasPrefix(newLog, b.dir) {
		t.Fatalf("restored log %s is not in B's log directory", newLog)
	}
	waitLog(t, newLog, strconv.Itoa(frozenAt+10), 15*time.Second)
	first := firstCount(t, newLog)
	if first < before || first > frozenAt+1 {
		t.Errorf("counter restored at %d; it was frozen between %d and %d (no reset, no gap)", first, before, frozenAt)
	}
	if n, err := strconv.Atoi(b.execOut(t, ids["counter"], "cat", "/count")); err != nil || n < first {
		t.Errorf("/count on B: %d %v (first restored count %d)", n, err, first)
	}
	if got := b.execOut(t, ids["counter"], "cat", "/written"); got != "data" {
		t.Errorf("/written on B: %q", got)
	}
	b.stopRemove(t, podB)
	a.assertNothingLeft(t, map[string]podInfo{podA: infA})
	b.assertNothingLeft(t, map[string]podInfo{podB: infB})
}

// TestMigrateKeepsLoopbackTCPConnection: an established TCP connection
// whose addresses exist in the new pod (loopback) survives the move
// (CRIU --tcp-established): the numbers keep coming on it, in order.
func TestMigrateKeepsLoopbackTCPConnection(t *testing.T) {
	a, b := twoNodes(t)
	podA, cfgA := a.podWithLogs(t, "migrate-tcp")
	_, infA := a.status(t, podA)
	cc := ctrConfig("tcp", tcpScript)
	tcp := a.run(t, podA, cfgA, cc)
	tcpLog := a.ctrStatus(t, tcp).LogPath
	waitLog(t, tcpLog, "got 5", 10*time.Second)
	dir := a.checkpointPod(t, podA, tcp)
	_, lastA := lastGot(t, tcpLog)
	a.stopRemove(t, podA)
	podB, ids := b.restorePod(t, dir, b.logPodConfig("migrate-tcp"), cc)
	_, infB := b.status(t, podB)
	newTCP := b.ctrStatus(t, ids["tcp"]).LogPath
	deadline := time.Now().Add(15 * time.Second)
	for {
		f, l := lastGot(t, newTCP)
		if f >= 0 && l >= lastA+10 {
			if f > lastA+1 {
				t.Errorf("TCP stream on B starts at %d; A had received up to %d", f, lastA)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the TCP connection did not carry on after the migration (A got up to %d; B: first %d, last %d)", lastA, f, l)
		}
		time.Sleep(100 * time.Millisecond)
	}
	b.stopRemove(t, podB)
	a.assertNothingLeft(t, map[string]podInfo{podA: infA})
	b.assertNothingLeft(t, map[string]podInfo{podB: infB})
}

// TestMigrateWithPodIPConnectionFailsCleanly: a TCP connection on the pod's
// own IP cannot be restored in a pod with another IP (minicri gives the
// restored pod a new one): StartContainer fails with FailedPrecondition
// naming CRIU's complaint, and the pod is removed without leftovers.
func TestMigrateWithPodIPConnectionFailsCleanly(t *testing.T) {
	a, b := twoNodes(t)
	podA, cfgA := a.podWithLogs(t, "migrate-ip")
	stA, infA := a.status(t, podA)
	cc := ctrConfig("tcp", strings.ReplaceAll(tcpScript, "127.0.0.1", "$POD_IP"))
	cc.Envs = []*runtimeapi.KeyValue{{Key: "POD_IP", Value: []byte(stA.GetNetwork().GetIp())}}
	tcp := a.run(t, podA, cfgA, cc)
	waitLog(t, a.ctrStatus(t, tcp).LogPath, "got 5", 10*time.Second)
	dir := a.checkpointPod(t, podA, tcp)
	a.stopRemove(t, podA)
	cfgB := podConfig("migrate-ip")
	resp, err := b.rt.RestorePod(ctx(t), &runtimeapi.RestorePodRequest{CheckpointPath: dir, Config: cfgB, ContainerConfigs: []*runtimeapi.ContainerConfig{cc}})
	if err != nil {
		t.Fatalf("RestorePod: %v", err)
	}
	_, infB := b.status(t, resp.PodSandboxId)
	id := resp.RestoredContainers[0].ContainerId
	_, err = b.rt.StartContainer(ctx(t), &runtimeapi.StartContainerRequest{ContainerId: id})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "criu") {
		t.Errorf("StartContainer of a container holding a connection on the old pod IP: %v, want FailedPrecondition from CRIU", err)
	}
	if st := b.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_CREATED {
		t.Errorf("after the failed restore: %v, want CREATED", st.State)
	}
	if p := processesMentioning("criu\x00"); len(p) > 0 {
		t.Errorf("criu processes left: %v", p)
	}
	b.stopRemove(t, resp.PodSandboxId)
	b.assertCtrGone(t, id)
	a.assertNothingLeft(t, map[string]podInfo{podA: infA})
	b.assertNothingLeft(t, map[string]podInfo{resp.PodSandboxId: infB})
}

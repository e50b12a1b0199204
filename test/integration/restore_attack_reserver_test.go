package integration

import (
	"context"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// reserverAttack is a container's shell (builtins only: it forks nothing
// its own kill -1 would stop) that stops every other process of the pod's
// PID namespace, again and again, and reads marker through each one's
// /proc/<pid>/root: a process that enters the namespace from the host (the
// restore's pid reserver, internal/pidns) is stopped at once and its root,
// the host's, read at leisure.
func reserverAttack(marker string) string {
	return `echo armed
while :; do
  kill -STOP -1 2>/dev/null
  for p in /proc/[0-9]*; do
    if read -r l < $p/root` + marker + `; then echo "read $l through $p"; fi
  done 2>/dev/null
done`
}

// TestRestoreAttackPidReserverLockedIn: a restore into a pod's shared PID
// namespace raises the namespace's ns_last_pid (internal/pidns) from a
// process that joins the namespace. It was host root with every
// capability, in the host's mount namespace: a container of the pod saw
// it appear, stopped it (root's kill needs no capability for another root
// process), which held CreateContainer for ever, and with CAP_SYS_PTRACE
// (kubectl debug --profile=general) read the host's files through its
// /proc/<pid>/root. The process in the pod's namespace must have an empty
// root of its own, and a stopped one must not hold CreateContainer.
func TestRestoreAttackPidReserverLockedIn(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	marker := hostMarker(t)
	src := i.checkpointSource(t, "reserver-src", sleeper(), "")

	podB, cfgB := i.podWithLogs(t, "reserver-dst")
	_, infB := i.status(t, podB)
	att := ctrConfig("attacker", reserverAttack(marker))
	att.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"SYS_PTRACE"}},
		Apparmor:     &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
	}
	attID := i.run(t, podB, cfgB, att)
	log := i.ctrStatus(t, attID).LogPath
	waitLog(t, log, "armed", 10*time.Second)

	// The writer lives for a few system calls: the container may miss it.
	// Each restore that the container did not catch is removed and tried
	// again, until one is caught (the attack reached the writer).
	caught := false
	for try := 1; try <= 20 && !caught; try++ {
		c, cancel := context.WithTimeout(context.Background(), 45*time.Second)
		start := time.Now()
		id, err := i.tryCreate(t, c, podB, cfgB, restoring(sleeper(), src.archive))
		cancel()
		took := time.Since(start).Round(time.Millisecond)
		t.Logf("try %d: CreateContainer returned after %s: %v", try, took, err)
		switch {
		case took > 30*time.Second:
			t.Fatalf("CreateContainer held for %s by a container that stopped the pid reserver", took)
		case err == nil:
			i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
		case strings.Contains(err.Error(), "did not finish"):
			caught = true
		default:
			t.Fatalf("restore: %v, want success or a writer that did not finish", err)
		}
	}
	if !caught {
		t.Error("the container never caught the pid reserver in 20 restores: the attack was not tried")
	}
	for _, l := range readLog(t, log) {
		if strings.HasPrefix(l.content, "read ") {
			t.Errorf("the pod's container read the host's %s through the pid reserver: %q", marker, l.content)
			break
		}
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

package integration

import (
	"os"
	"strconv"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/pstree"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestRestoreAttackPidRange: a restore raises the allocation cursor of
// the PID namespace the container joins above pstree.img's highest pid
// (restore_pids.go), and the cursor never moves back. A pid at or beyond
// pid_max is InvalidArgument. A container of a hostPID pod that asks for
// the pod's PID namespace (the CRI default mode) joins the pause's, the
// host's: its archive's pids moved the host's cursor (a pid near pid_max
// makes every host fork wrap around). That restore is FailedPrecondition.
// (This test restores a genuine archive of low pids there: the host's
// cursor is already above them.)
func TestRestoreAttackPidRange(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "pids-src", sleeper(), "")
	data, err := os.ReadFile("/proc/sys/kernel/pid_max")
	if err != nil {
		t.Fatal(err)
	}
	pidMax, err := strconv.ParseUint(strings.TrimSpace(string(data)), 10, 32)
	if err != nil {
		t.Fatal(err)
	}
	huge := tamperArchive(t, src.archive, "checkpoint/pstree.img", func(data []byte) []byte {
		return editImage(t, data, &pstree.PstreeEntry{}, func(m proto.Message) { m.(*pstree.PstreeEntry).Sid = proto.Uint32(uint32(pidMax)) })
	})
	podB, cfgB := i.podWithLogs(t, "pids-dst")
	_, infB := i.status(t, podB)
	if _, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(sleeper(), huge)); status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), "pid_max") {
		t.Errorf("a session id of pid_max: %v, want InvalidArgument naming pid_max", err)
	}
	hostPod := i.logPodConfig("pids-hostpid")
	hostPod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_NODE}}
	podH := i.runPod(t, hostPod)
	_, infH := i.status(t, podH)
	id, err := i.tryCreate(t, ctx(t), podH, hostPod, restoring(sleeper(), src.archive))
	if err == nil {
		t.Errorf("a restore reserving pids in the host's PID namespace was created")
		i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	} else if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "host's PID namespace") {
		t.Errorf("restore into the pod PID namespace of a hostPID pod: %v, want FailedPrecondition naming the host's PID namespace", err)
	}
	i.stopRemove(t, podB)
	i.stopRemove(t, podH)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB, podH: infH})
}

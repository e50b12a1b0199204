package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The attack: in a shared-PID or host-PID pod, a container's init leaves a
// background process behind and exits; the process must not outlive the
// reported exit (it would keep ports and write logs until RemoveContainer).
func TestLeftoverProcessesDieWithTheirContainer(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	for n, mode := range []runtimeapi.NamespaceMode{runtimeapi.NamespaceMode_POD, runtimeapi.NamespaceMode_NODE} {
		t.Run(mode.String(), func(t *testing.T) {
			pod := podConfig("leftover")
			pod.LogDirectory = filepath.Join(i.dir, "logs", pod.Metadata.Name)
			pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: mode}}
			podID := i.runPod(t, pod)
			marker := fmt.Sprintf("%d", 700000+os.Getpid()%10000*10+n)
			cfg := ctrConfig("leftover", "sleep "+marker+" & sleep 0.2; exit 0")
			cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Pid: mode}}
			id := i.run(t, podID, pod, cfg)
			i.waitExited(t, id, 10*time.Second)
			// The exit is reported once the leftovers are killed; give the
			// kernel a moment to finish them.
			deadline := time.Now().Add(2 * time.Second)
			for p := processesMentioning(marker); len(p) > 0; p = processesMentioning(marker) {
				if time.Now().After(deadline) {
					t.Fatalf("the container exited but its background process lives on:\n  %s", strings.Join(p, "\n  "))
				}
				time.Sleep(50 * time.Millisecond)
			}
			i.stopRemove(t, podID)
		})
	}
}

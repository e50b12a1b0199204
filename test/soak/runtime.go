package main

import (
	"fmt"
	"os/exec"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// runtimeUnderTest is what differs between the runtimes the soak drives
// (SOAK_RUNTIME): minicri (minicri.go) and containerd 2.4 (containerd.go).
// The instance does what both share: its directory, the root on the
// loop-mounted ext4 that the ENOSPC fault fills, the socket, bridge, subnet,
// cgroup parent, registry mirrors and CNI wrapper, and the daemon's process
// (start, kill -9, restart on the same state), started from command.
type runtimeUnderTest interface {
	// name is the daemon's name in the soak's lines, its log and socket;
	// describe says which build of it runs, for the report.
	name() string
	describe() string
	// images are pulled before the churn (containerd's sandbox image).
	images() []string
	// configure writes the daemon's configuration; binDirs are the CNI
	// plugins' directories (nil: minicri's built-in network).
	configure(i *instance, subnet string, binDirs []string) error
	// command is the daemon on the instance's socket, root and state.
	command(i *instance) (*exec.Cmd, error)
	// metricsURL serves go_goroutines and process_resident_memory_bytes.
	metricsURL(i *instance) string
	// podInfo reads a pod's pause pid, netns, cgroup and the pid of its
	// per-pod process (monitor()) from its verbose PodSandboxStatus.
	podInfo(i *instance, id string, verbose map[string]string) (podInfo, error)
	// monitor names the per-pod process a monitor-kill fault kills.
	monitor() string
	// adjustPod adds what the runtime needs to a pod's config.
	adjustPod(i *instance, cfg *runtimeapi.PodSandboxConfig)
	// leftovers are the leak checks of the runtime's own: of one pod after
	// its removal, or of the node at the end (p nil).
	leftovers(s *soak, p *pod) []string
	// skips names the faults (by kind) and the checks that do not apply,
	// with why; a skipped fault is drawn, counted and not injected.
	skips() map[string]string
	// release ends what the runtime left on the host once the daemon is
	// stopped (only what the soak started), before the instance's cleanup.
	release(i *instance)
}

// newRuntime is SOAK_RUNTIME's runtime.
func newRuntime(cfg config) (runtimeUnderTest, error) {
	switch cfg.runtime {
	case "minicri":
		return &minicri{bin: cfg.bin}, nil
	case "containerd":
		return newContainerd()
	}
	return nil, fmt.Errorf("SOAK_RUNTIME=%q: minicri or containerd", cfg.runtime)
}

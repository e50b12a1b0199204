package network

import (
	"bytes"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// reapOrphanPlugins kills the process groups of CNI plugins that an earlier
// minicri on the same CNI cache dir (owner) started and did not live to
// wait for: a daemon killed during a plugin that hangs leaves it running
// for ever otherwise. Each plugin leads a process group of its own
// (pluginExec), so what it forked dies with it. It returns how many it
// killed; called before this Manager runs any plugin, it cannot kill one
// of its own.
func reapOrphanPlugins(owner string) int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return 0
	}
	mark := []byte(ownerEnv + "=" + owner)
	n := 0
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		env, err := os.ReadFile(filepath.Join("/proc", e.Name(), "environ"))
		if err != nil || !hasEnvEntry(env, mark) {
			continue
		}
		pgid, err := syscall.Getpgid(pid)
		if err != nil || pgid != pid { // a plugin leads its group; what it forked goes with it
			continue
		}
		if syscall.Kill(-pgid, syscall.SIGKILL) == nil {
			logger().Warn("killed a CNI plugin left running by an earlier minicri", "pid", pid)
			n++
		}
	}
	return n
}

// hasEnvEntry reports whether the NUL-separated environ holds entry exactly.
func hasEnvEntry(environ, entry []byte) bool {
	for _, kv := range bytes.Split(environ, []byte{0}) {
		if bytes.Equal(kv, entry) {
			return true
		}
	}
	return false
}

package integration

import (
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/fdinfo"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// lockedDown is cfg without CAP_NET_BIND_SERVICE (CRIU here cannot
// dump a container of another uid than 0: it fails to read its rlimits;
// the file checks for other users are container/restore_files_test.go's).
func lockedDown(cfg *runtimeapi.ContainerConfig) *runtimeapi.ContainerConfig {
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Capabilities: &runtimeapi.Capability{DropCapabilities: []string{"NET_BIND_SERVICE"}},
	}
	return cfg
}

// TestRestoreAttackFileImages: CRIU opens the files of files.img and
// binds its sockets as root before it drops privileges. A locked-down
// container's archive (no CAP_NET_BIND_SERVICE, a listener on port 8080)
// whose listener is moved to port 80 is refused for the same request
// (FailedPrecondition, naming the socket);
// the genuine archive restores.
func TestRestoreAttackFileImages(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "fd-src", lockedDown(inNamespace(ctrConfig("sleeper",
		`nc -l -p 8080 & while true; do sleep 1; done`), "it")), "")
	files := func(edit func(*fdinfo.FileEntry)) string {
		return tamperArchive(t, src.archive, "checkpoint/files.img", func(data []byte) []byte {
			return editImage(t, data, &fdinfo.FileEntry{}, func(m proto.Message) { edit(m.(*fdinfo.FileEntry)) })
		})
	}
	attacks := map[string]string{
		"port 80": files(func(e *fdinfo.FileEntry) {
			if s := e.GetIsk(); s != nil && s.GetSrcPort() == 8080 {
				s.SrcPort = proto.Uint32(80)
			}
		}),
	}
	podB, cfgB := i.podWithLogs(t, "fd-dst")
	_, infB := i.status(t, podB)
	cfg := func() *runtimeapi.ContainerConfig { return lockedDown(inNamespace(ctrConfig("sleeper", "true"), "it")) }
	i.refusedAll(t, podB, cfgB, cfg, attacks, "checkpoint file")
	id, err := i.tryCreate(t, ctx(t), podB, cfgB, restoring(cfg(), src.archive))
	if err != nil {
		t.Fatalf("the genuine archive: %v", err)
	}
	i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

package integration

import (
	"encoding/binary"
	"strings"
	"testing"

	"github.com/checkpoint-restore/go-criu/v8/crit/images/creds"
	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"github.com/checkpoint-restore/go-criu/v8/crit/images/seccomp"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The archive's own seccomp filters, LSM labels and credentials: CRIU
// restores them as root before any credential drop, whatever the spec
// says. Each attack is refused at CreateContainer (FailedPrecondition,
// naming the reason) and leaves nothing. See docs/DESIGN.md, "Restore:
// threat model".

// refusedAll creates a container restoring each archive of attacks into
// pod with cfg() and wants each refused with FailedPrecondition whose
// message holds reason; an accepted one is removed.
func (i *instance) refusedAll(t *testing.T, pod string, cfgPod *runtimeapi.PodSandboxConfig,
	cfg func() *runtimeapi.ContainerConfig, attacks map[string]string, reason string) {
	t.Helper()
	for name, archive := range attacks {
		id, err := i.tryCreate(t, ctx(t), pod, cfgPod, restoring(cfg(), archive))
		switch {
		case err == nil:
			t.Errorf("%s: the archive was accepted", name)
			i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
		case status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), reason):
			t.Errorf("%s: %v, want FailedPrecondition: ...%s...", name, err, reason)
		default:
			t.Logf("%s: refused: %v", name, err)
		}
	}
}

// withSeccomp gives cfg the seccomp profile typ.
func withSeccomp(cfg *runtimeapi.ContainerConfig, typ runtimeapi.SecurityProfile_ProfileType) *runtimeapi.ContainerConfig {
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: typ}}
	return cfg
}

// allowAll is the BPF program "return SECCOMP_RET_ALLOW".
func allowAll() []byte {
	b := make([]byte, 8)
	binary.LittleEndian.PutUint16(b, 0x06) // BPF_RET|BPF_K
	binary.LittleEndian.PutUint32(b[4:], 0x7fff0000)
	return b
}

// TestRestoreAttackSeccompFilter: CRIU installs the filters of the
// archive's seccomp.img; only the seccomp mode was compared. A
// RuntimeDefault container's archive whose filter is "allow everything",
// whose task core's legacy field (which CRIU prefers) says no seccomp, or
// whose task has a second filter stacked on RuntimeDefault's is refused for
// a RuntimeDefault request, as is the genuine archive for an Unconfined
// one (not the filter the request gives). The genuine archive restores
// for RuntimeDefault.
func TestRestoreAttackSeccompFilter(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	def := func() *runtimeapi.ContainerConfig {
		return withSeccomp(inNamespace(ctrConfig("sleeper", "true"), "it"), runtimeapi.SecurityProfile_RuntimeDefault)
	}
	src := i.checkpointSource(t, "sc-src", withSeccomp(sleeper(), runtimeapi.SecurityProfile_RuntimeDefault), "")
	filters := func(edit func(*seccomp.SeccompEntry)) string {
		return tamperArchive(t, src.archive, "checkpoint/seccomp.img", func(data []byte) []byte {
			return editImage(t, data, &seccomp.SeccompEntry{}, func(m proto.Message) { edit(m.(*seccomp.SeccompEntry)) })
		})
	}
	attacks := map[string]string{
		"allow-all filter": filters(func(e *seccomp.SeccompEntry) {
			for _, f := range e.GetSeccompFilters() {
				f.Filter = allowAll()
			}
		}),
		// A filter stacked on the genuine one, the task's chain pointing at it.
		"a second filter": tamperArchive(t, filters(func(e *seccomp.SeccompEntry) {
			n := uint32(len(e.SeccompFilters))
			e.SeccompFilters = append(e.SeccompFilters, &seccomp.SeccompFilter{Filter: allowAll(), Prev: proto.Uint32(n - 1)})
		}), "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				th := m.(*criucore.CoreEntry).GetThreadCore()
				th.SeccompFilter = proto.Uint32(th.GetSeccompFilter() + 1)
			})
		}),
		"legacy seccomp mode disabled": tamperArchive(t, src.archive, "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				m.(*criucore.CoreEntry).GetTc().OldSeccompMode = criucore.SeccompMode_disabled.Enum()
			})
		}),
	}
	podB, cfgB := i.podWithLogs(t, "sc-dst")
	_, infB := i.status(t, podB)
	i.refusedAll(t, podB, cfgB, def, attacks, "seccomp")
	unconfined := func() *runtimeapi.ContainerConfig {
		return withSeccomp(inNamespace(ctrConfig("sleeper", "true"), "it"), runtimeapi.SecurityProfile_Unconfined)
	}
	i.refusedAll(t, podB, cfgB, unconfined, map[string]string{"genuine, Unconfined request": src.archive}, "seccomp")
	id := i.run(t, podB, cfgB, restoring(def(), src.archive))
	if got := i.execOut(t, id, "grep", "^Seccomp:", "/proc/2/status"); !strings.HasSuffix(got, "2") {
		t.Errorf("restored task: %q, want seccomp mode 2 (filter)", got)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// TestRestoreAttackLSMLabel: CRIU gives each task the AppArmor profile (or
// SELinux context) of its core image's creds, writing it as root; nothing
// compared it with the request's. Here, with no LSM on the host, the
// request gives none: an archive whose task carries a profile, or a socket
// label, is refused. (That the request's own profile is what CRIU applies
// on an AppArmor host is for the VM phase.)
func TestRestoreAttackLSMLabel(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "lsm-src", sleeper(), "")
	label := func(edit func(*creds.CredsEntry)) string {
		return tamperArchive(t, src.archive, "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				edit(m.(*criucore.CoreEntry).GetThreadCore().GetCreds())
			})
		})
	}
	attacks := map[string]string{
		"apparmor profile": label(func(c *creds.CredsEntry) { c.LsmProfile = proto.String("attacker-profile") }),
		"sockcreate label": label(func(c *creds.CredsEntry) { c.LsmSockcreate = proto.String("system_u:system_r:spc_t:s0") }),
		"apparmor data":    label(func(c *creds.CredsEntry) { c.ApparmorData = []byte("attacker") }),
	}
	podB, cfgB := i.podWithLogs(t, "lsm-dst")
	_, infB := i.status(t, podB)
	cfg := func() *runtimeapi.ContainerConfig { return inNamespace(ctrConfig("sleeper", "true"), "it") }
	i.refusedAll(t, podB, cfgB, cfg, attacks, "LSM")
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

// TestRestoreAttackCredsRootInNonRootPod: a runAsUser 1000 container
// without no_new_privs (allowPrivilegeEscalation's default) has the
// default capabilities in its bounding set, CAP_SETUID among them, so the
// uid check was skipped: an archive whose task is uid 0 (with or without
// capabilities), or uid 1000 with the bounding set permitted and effective
// (a uid 1000 process has none after its execve), restored into it. Each
// is refused.
func TestRestoreAttackCredsRootInNonRootPod(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	src := i.checkpointSource(t, "nr-src", sleeper(), "")
	edit := func(uid uint32, caps bool) string {
		return tamperArchive(t, src.archive, "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				c := m.(*criucore.CoreEntry).GetThreadCore().GetCreds()
				c.Uid, c.Euid, c.Suid, c.Fsuid = proto.Uint32(uid), proto.Uint32(uid), proto.Uint32(uid), proto.Uint32(uid)
				c.Gid, c.Egid, c.Sgid, c.Fsgid = proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000), proto.Uint32(1000)
				c.Groups = []uint32{1000}
				c.CapPrm, c.CapEff, c.CapInh, c.CapAmb = []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}, []uint32{0, 0}
				if caps {
					c.CapPrm, c.CapEff = c.GetCapBnd(), c.GetCapBnd()
				}
			})
		})
	}
	attacks := map[string]string{"uid 0": edit(0, false), "uid 0 with capabilities": edit(0, true), "uid 1000 with capabilities": edit(1000, true)}
	podB, cfgB := i.podWithLogs(t, "nr-dst")
	_, infB := i.status(t, podB)
	nonRoot := func() *runtimeapi.ContainerConfig {
		cfg := inNamespace(ctrConfig("sleeper", "true"), "it")
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			RunAsUser: &runtimeapi.Int64Value{Value: 1000}, RunAsGroup: &runtimeapi.Int64Value{Value: 1000},
		}
		return cfg
	}
	i.refusedAll(t, podB, cfgB, nonRoot, attacks, "checkpointed task")
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, podB: infB})
}

package integration

import (
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	criucore "github.com/checkpoint-restore/go-criu/v8/crit/images/criu-core"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestAppArmorRestoredTasksGetTheRequestsProfile is the AppArmor side of
// TestRestoreAttackLSMLabel (issue 24, finding 2), for a kernel that
// enforces AppArmor (the VM lab; elsewhere it skips): CRIU writes each
// restored task's label itself, as root, so the restored init must run
// under the profile the request asks for (CRIU's --lsm-profile), not
// whatever the archive says. A container checkpointed under RuntimeDefault,
// a Localhost profile or Unconfined and restored with the same request runs
// under minicri-default (enforce), that profile (enforce) or unconfined,
// its init as the host sees it, the children it forks after the restore
// and a process exec'd into it. An archive
// whose task carries another label than the request's (tampered to another
// loaded profile or to unconfined, or a genuine RuntimeDefault archive for
// a Localhost request) is refused with FailedPrecondition naming the LSM
// label, and leaves nothing.
//
// The refusal and CRIU's --lsm-profile each suffice (measured in the guest
// with a throwaway build: with the refusal disabled, archives relabelled
// to unconfined and to another loaded profile restored under
// minicri-default (enforce); with --lsm-profile also dropped, under
// unconfined and that profile (enforce)). This test cannot tell which of
// the two gave a genuine archive its label: they agree by construction.
func TestAppArmorRestoredTasksGetTheRequestsProfile(t *testing.T) {
	requireAppArmor(t)
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	testProfile := "minicri-it-restore-" + strconv.Itoa(os.Getpid())
	loadTestProfile(t, i.dir, testProfile)
	runtimeDefault := profileOf(runtimeapi.SecurityProfile_RuntimeDefault, "")
	localhost := profileOf(runtimeapi.SecurityProfile_Localhost, testProfile)
	unconfined := profileOf(runtimeapi.SecurityProfile_Unconfined, "")
	cfg := func(p *runtimeapi.SecurityProfile) func() *runtimeapi.ContainerConfig {
		return func() *runtimeapi.ContainerConfig { return withAppArmor(sleeper(), p, "") }
	}

	srcs := map[string]ckptSource{}
	for _, c := range []struct {
		name string
		p    *runtimeapi.SecurityProfile
		want string
	}{
		{"RuntimeDefault", runtimeDefault, defaultProfile + " (enforce)"},
		{"Localhost", localhost, testProfile + " (enforce)"},
		{"Unconfined", unconfined, "unconfined"},
	} {
		src := i.checkpointSource(t, "aa-src-"+c.name, cfg(c.p)(), "")
		srcs[c.name] = src
		pod, podCfg := i.podWithLogs(t, "aa-dst-"+c.name)
		_, inf := i.status(t, pod)
		id := i.run(t, pod, podCfg, restoring(cfg(c.p)(), src.archive))
		if got := label(t, i.ctrPID(t, id)); got != c.want {
			t.Errorf("%s: the restored init runs under %q, want %q", c.name, got, c.want)
		} else {
			t.Logf("%s: the restored init runs under %q", c.name, got)
		}
		if code, got := i.execIn(t, id, "cat", "/proc/self/attr/current"); code != 0 || got != c.want {
			t.Errorf("%s: a process exec'd into the restored container runs under %q (exit %d), want %q", c.name, got, code, c.want)
		}
		if got := childLabel(t, i.ctrPID(t, id)); got != c.want {
			t.Errorf("%s: a child the restored init forked after the restore runs under %q, want %q", c.name, got, c.want)
		}
		i.stopRemove(t, pod)
		i.assertNothingLeft(t, map[string]podInfo{src.pod: src.inf, pod: inf})
	}

	def := srcs["RuntimeDefault"].archive
	relabel := func(profile string) string {
		return tamperArchive(t, def, "checkpoint/core-", func(data []byte) []byte {
			return editImage(t, data, &criucore.CoreEntry{}, func(m proto.Message) {
				c := m.(*criucore.CoreEntry).GetThreadCore().GetCreds()
				if c.GetLsmProfile() != defaultProfile {
					t.Errorf("the genuine RuntimeDefault archive's task has LSM label %q, want %q", c.GetLsmProfile(), defaultProfile)
				}
				c.LsmProfile = proto.String(profile)
			})
		})
	}
	podB, cfgB := i.podWithLogs(t, "aa-refused")
	_, infB := i.status(t, podB)
	i.refusedAll(t, podB, cfgB, cfg(runtimeDefault), map[string]string{
		"another loaded profile": relabel(testProfile),
		"unconfined":             relabel("unconfined"),
	}, "LSM")
	i.refusedAll(t, podB, cfgB, cfg(localhost), map[string]string{"genuine RuntimeDefault archive, Localhost request": def}, "LSM")
	if ids := i.containersOf(t, podB); len(ids) != 0 {
		t.Errorf("refused restores left containers: %v", ids)
	}
	i.stopRemove(t, podB)
	i.assertNothingLeft(t, map[string]podInfo{podB: infB})
}

// childLabel is the AppArmor label of a child of pid (the sleeper's
// short-lived "sleep 1"), as the host sees it; it fails after 10 s without one.
func childLabel(t *testing.T, pid int) string {
	t.Helper()
	p := strconv.Itoa(pid)
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		b, _ := os.ReadFile(filepath.Join("/proc", p, "task", p, "children"))
		for _, c := range strings.Fields(string(b)) {
			if l, err := os.ReadFile(filepath.Join("/proc", c, "attr/current")); err == nil {
				return strings.TrimRight(string(l), "\n\x00")
			}
		}
	}
	t.Fatalf("no child of %d to read the label of", pid)
	return ""
}

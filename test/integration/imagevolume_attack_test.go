package integration

import (
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestImageVolumeAttackSetuidAndMountOptions: an image volume is data an
// image (a model, a config bundle, often a third party's) brings into a
// container; its layers may carry setuid-root programs, file capabilities
// and device nodes. The volume was mounted with neither nosuid nor nodev,
// so a uid 1000 container (without allowPrivilegeEscalation: false) became
// root by running the volume's setuid program. And the request's own
// mount_options (noexec, nodev, nosuid: KEP-5855, which the CRI says the
// runtime must apply) were dropped for image mounts, unchecked: a noexec
// image volume ran programs, an unsupported option was accepted.
func TestImageVolumeAttackSetuidAndMountOptions(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, nonewprivs)
	podID, pod := i.podWithLogs(t, "imgvol-suid")
	_, podInf := i.status(t, podID)
	noexec := imageMount("/nnpx", nonewprivs, "")
	noexec.MountOptions = []string{"noexec"}
	cfg := ctrConfig("user", "sleep 1000")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 1000}}
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/nnp", nonewprivs, ""), noexec}
	id := i.run(t, podID, pod, cfg)

	if out, _ := i.exec(t, id, "sh", "-c", "/nnp/usr/local/bin/nnp"); !strings.Contains(out, "Effective uid: 1000") {
		t.Errorf("the image volume's setuid-root program: %q, want it run as uid 1000 (nosuid)", out)
	}
	if out, code := i.exec(t, id, "sh", "-c", "/nnpx/usr/local/bin/nnp"); code == 0 || !strings.Contains(out, "Permission denied") {
		t.Errorf("a program of a noexec image volume ran: %q", out)
	}
	opts := func(mp string) []string { return strings.Split(strings.Fields(i.mountLine(t, id, mp))[5], ",") }
	for mp, want := range map[string][]string{"/nnp": {"ro", "nosuid", "nodev"}, "/nnpx": {"ro", "nosuid", "nodev", "noexec"}} {
		got := opts(mp)
		for _, w := range want {
			if !contains(got, w) {
				t.Errorf("image volume %s mounted %v, without %s", mp, got, w)
			}
		}
	}

	bad := ctrConfig("bad-option", "sleep 1000")
	suid := imageMount("/vol", nonewprivs, "")
	suid.MountOptions = []string{"suid"}
	bad.Mounts = []*runtimeapi.Mount{suid}
	if badID, err := i.tryCreate(t, ctx(t), podID, pod, bad); status.Code(err) != codes.InvalidArgument {
		t.Errorf("an image mount with mount option suid: %v, want InvalidArgument", err)
		if badID != "" {
			i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: badID})
		}
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func contains(list []string, s string) bool {
	for _, e := range list {
		if e == s {
			return true
		}
	}
	return false
}

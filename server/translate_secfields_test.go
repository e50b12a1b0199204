package server

import (
	"slices"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/internal/idmap"
	"github.com/minicri/minicri/sandbox"
)

// TestSecurityFieldsAreTranslated: userns_options, mount ID mappings and
// the pod's security context reach the domain, and mappings come back in
// the status.
func TestSecurityFieldsAreTranslated(t *testing.T) {
	cri := []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 1 << 20, Length: 1 << 16}}
	want := []idmap.Mapping{{ContainerID: 0, HostID: 1 << 20, Length: 1 << 16}}
	cfg := containerConfig(&runtimeapi.ContainerConfig{
		Mounts: []*runtimeapi.Mount{{ContainerPath: "/d", HostPath: "/h", UidMappings: cri, GidMappings: cri}, {ContainerPath: "/e", HostPath: "/i"}},
		Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: cri, Gids: cri}},
		}},
	})
	if u := cfg.Security.UserNS; u == nil || u.Mode != container.ModePod || !slices.Equal(u.UIDs, want) || !slices.Equal(u.GIDs, want) {
		t.Fatalf("userns_options: %+v", u)
	}
	if m := cfg.Mounts; !slices.Equal(m[0].UIDMappings, want) || !slices.Equal(m[0].GIDMappings, want) || m[1].UIDMappings != nil {
		t.Fatalf("mount mappings: %+v", m)
	}
	if back := mountsToCRI(cfg.Mounts, nil); len(back[0].UidMappings) != 1 || back[0].GidMappings[0].HostId != 1<<20 || back[1].UidMappings != nil {
		t.Fatalf("mounts reported: %+v", back)
	}
	if c := containerConfig(&runtimeapi.ContainerConfig{}); c.Security.UserNS != nil {
		t.Fatalf("no userns_options must stay nil: %+v", c.Security.UserNS)
	}

	pod := sandboxConfig(&runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: 0}, RunAsGroup: &runtimeapi.Int64Value{Value: 5}, SupplementalGroups: []int64{6},
		ReadonlyRootfs: true, Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/p.json"},
	}}}, "")
	sec := pod.Security
	if sec.RunAsUser == nil || *sec.RunAsUser != 0 || sec.RunAsGroup == nil || *sec.RunAsGroup != 5 || !slices.Equal(sec.SupplementalGroups, []int64{6}) ||
		!sec.ReadonlyRootfs || sec.Seccomp != (sandbox.SeccompProfile{Type: sandbox.SeccompLocalhost, Path: "/p.json"}) {
		t.Fatalf("pod security: %+v", sec)
	}
	legacy := sandboxConfig(&runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
		SeccompProfilePath: "runtime/default", //nolint:staticcheck // the deprecated field is still honoured
	}}}, "")
	if legacy.Security.Seccomp.Type != sandbox.SeccompRuntimeDefault || legacy.Security.RunAsUser != nil {
		t.Fatalf("legacy pod seccomp: %+v", legacy.Security)
	}
	if none := sandboxConfig(&runtimeapi.PodSandboxConfig{}, ""); none.Security.Seccomp.Type != sandbox.SeccompUnconfined {
		t.Fatalf("no pod seccomp: %+v", none.Security)
	}
}

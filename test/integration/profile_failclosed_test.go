package integration

import (
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// profileTypeOCI is the 1.38 CRI's SecurityProfile type OCI (3), written
// as its number: a CRI older than 1.38 has no name for it, and a runtime on
// one read it as unconfined (issue 32).
const profileTypeOCI = runtimeapi.SecurityProfile_ProfileType(3)

// TestUnknownSecurityProfileIsRefused performs the fail-open: a client asks
// for a profile type the runtime may not know (OCI, from a registry; a type
// no CRI defines) for a container's seccomp or AppArmor, or for a pod's
// seccomp. Before the fix each ran unconfined (no seccomp filter at all).
// Now each is refused with a clear status and nothing is created.
func TestUnknownSecurityProfileIsRefused(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := podConfig("unknown-profile")
	pod.LogDirectory = filepath.Join(i.dir, "logs", "unknown-profile")
	podID := i.runPod(t, pod)

	seccomp := func(p *runtimeapi.SecurityProfile) *runtimeapi.LinuxContainerSecurityContext {
		return &runtimeapi.LinuxContainerSecurityContext{Seccomp: p}
	}
	ctrCases := map[string]struct {
		sc   *runtimeapi.LinuxContainerSecurityContext
		code codes.Code
	}{
		"seccomp type 99":         {seccomp(&runtimeapi.SecurityProfile{ProfileType: 99}), codes.InvalidArgument},
		"seccomp OCI, no oci_ref": {seccomp(&runtimeapi.SecurityProfile{ProfileType: profileTypeOCI}), codes.InvalidArgument},
		"seccomp OCI, not pulled": {seccomp(&runtimeapi.SecurityProfile{ProfileType: profileTypeOCI,
			OciRef: "127.0.0.1:1/profiles/strict@sha256:" + strings.Repeat("a", 64)}), codes.FailedPrecondition},
		"oci_ref on Localhost": {seccomp(&runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: "/etc/hostname", OciRef: "x@sha256:" + strings.Repeat("a", 64)}), codes.InvalidArgument},
		"base_profile on RuntimeDefault": {seccomp(&runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault,
			BaseProfile: &runtimeapi.SecurityProfileBase{}}), codes.InvalidArgument},
		"apparmor OCI": {&runtimeapi.LinuxContainerSecurityContext{
			Apparmor: &runtimeapi.SecurityProfile{ProfileType: profileTypeOCI, OciRef: "x@sha256:" + strings.Repeat("a", 64)}}, codes.InvalidArgument},
		"apparmor type 7": {&runtimeapi.LinuxContainerSecurityContext{Apparmor: &runtimeapi.SecurityProfile{ProfileType: 7}}, codes.InvalidArgument},
	}
	for name, tc := range ctrCases {
		cfg := ctrConfig(strings.ReplaceAll(name, " ", "-"), "sleep 1000")
		cfg.Linux.SecurityContext = tc.sc
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if status.Code(err) != tc.code {
			t.Errorf("%s: want %v, got %v", name, tc.code, err)
		}
	}
	ctrs, err := i.rt.ListContainers(ctx(t), &runtimeapi.ListContainersRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(ctrs.GetContainers()) != 0 {
		t.Errorf("refused creates left containers: %v", ctrs.GetContainers())
	}

	for name, p := range map[string]*runtimeapi.SecurityProfile{
		"pod seccomp type 42":         {ProfileType: 42},
		"pod seccomp OCI, no oci_ref": {ProfileType: profileTypeOCI},
	} {
		cfg := podConfig("bad-pod-profile")
		cfg.Linux = &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{Seccomp: p}}
		if _, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg}); status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	pods, err := i.rt.ListPodSandbox(ctx(t), &runtimeapi.ListPodSandboxRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if len(pods.GetItems()) != 1 {
		t.Errorf("refused pods left sandboxes: %d pods, want 1", len(pods.GetItems()))
	}
}

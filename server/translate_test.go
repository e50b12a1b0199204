package server

import (
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// Every translation tolerates absent sub-messages: a request may leave out
// any of them, at any depth.
func TestTranslationToleratesNilSubMessages(t *testing.T) {
	pods := []*runtimeapi.PodSandboxConfig{
		nil, {},
		{Linux: &runtimeapi.LinuxPodSandboxConfig{}},
		{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{}}},
		{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{Uids: []*runtimeapi.IDMapping{nil}}}}}},
		{PortMappings: []*runtimeapi.PortMapping{nil}, DnsConfig: &runtimeapi.DNSConfig{}},
	}
	for _, p := range pods {
		_ = sandboxConfig(p, "")
	}
	ctrs := []*runtimeapi.ContainerConfig{
		nil, {},
		{Linux: &runtimeapi.LinuxContainerConfig{}},
		{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{}}},
		{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: &runtimeapi.NamespaceOption{}, Capabilities: &runtimeapi.Capability{}}}},
		{Envs: []*runtimeapi.KeyValue{nil}, Mounts: []*runtimeapi.Mount{nil}, Devices: []*runtimeapi.Device{nil}},
	}
	for _, c := range ctrs {
		_ = containerConfig(c)
	}
}

func TestContainerNamespaceOptionsAreTranslated(t *testing.T) {
	cfg := containerConfig(&runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE,
			Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "t"}}}})
	sec := cfg.Security
	if sec.Network != container.ModeNode || sec.IPC != container.ModeNode || sec.PID != container.ModeTarget || sec.TargetID != "t" {
		t.Fatalf("namespace options: %+v", sec)
	}
	pod := sandboxConfig(&runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}}}, "")
	if !pod.Privileged || pod.Namespaces.Network != sandbox.ModePod {
		t.Fatalf("pod: %+v", pod)
	}
}

// AppArmor: nothing set is the runtime's choice (its default profile);
// the deprecated string and the SecurityProfile both map.
func TestAppArmorFromCRI(t *testing.T) {
	sp := func(ty runtimeapi.SecurityProfile_ProfileType, ref string) *runtimeapi.SecurityProfile {
		return &runtimeapi.SecurityProfile{ProfileType: ty, LocalhostRef: ref}
	}
	for _, tc := range []struct {
		p      *runtimeapi.SecurityProfile
		legacy string
		want   container.Profile
	}{
		{nil, "", container.Profile{Type: container.ProfileUnspecified}},
		{nil, "runtime/default", container.Profile{Type: container.ProfileRuntimeDefault}},
		{nil, "unconfined", container.Profile{Type: container.ProfileUnconfined}},
		{nil, "localhost/p1", container.Profile{Type: container.ProfileLocalhost, Path: "p1"}},
		{sp(runtimeapi.SecurityProfile_RuntimeDefault, ""), "", container.Profile{Type: container.ProfileRuntimeDefault}},
		{sp(runtimeapi.SecurityProfile_Unconfined, ""), "localhost/p1", container.Profile{Type: container.ProfileUnconfined}},
		{sp(runtimeapi.SecurityProfile_Localhost, "p2"), "localhost/p1", container.Profile{Type: container.ProfileLocalhost, Path: "p2"}},
		{sp(runtimeapi.SecurityProfile_RuntimeDefault, "p2"), "", container.Profile{Type: container.ProfileRuntimeDefault, Path: "p2"}},
	} {
		if got := appArmorFromCRI(tc.p, tc.legacy); got != tc.want {
			t.Errorf("appArmorFromCRI(%v, %q) = %+v, want %+v", tc.p, tc.legacy, got, tc.want)
		}
	}
}

package server

import (
	"context"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

// TestCgroupFieldsAreTranslated: cgroup_mount_mode and a container's
// cgroupns_options reach the domain (nil stays nil: the runtime's
// default); a pod's cgroupns_options are marked, for sandbox to refuse.
func TestCgroupFieldsAreTranslated(t *testing.T) {
	for _, c := range []struct {
		cri  runtimeapi.NamespaceMode
		want container.NamespaceMode
	}{
		{runtimeapi.NamespaceMode_CONTAINER, container.ModeContainer},
		{runtimeapi.NamespaceMode_NODE, container.ModeNode},
		{runtimeapi.NamespaceMode_POD, container.ModePod},
		{runtimeapi.NamespaceMode_TARGET, container.ModeTarget},
	} {
		cfg := containerConfig(&runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
				CgroupMountMode:  runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_WRITE,
				NamespaceOptions: &runtimeapi.NamespaceOption{CgroupnsOptions: &runtimeapi.CgroupNamespace{Mode: c.cri}},
			}}})
		if ns := cfg.Security.CgroupNS; ns == nil || *ns != c.want {
			t.Errorf("cgroupns_options %v: got %v", c.cri, ns)
		}
		if cfg.Security.CgroupMountMode != container.CgroupMountReadWrite {
			t.Errorf("cgroup_mount_mode: got %v", cfg.Security.CgroupMountMode)
		}
	}
	ro := containerConfig(&runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
		SecurityContext: &runtimeapi.LinuxContainerSecurityContext{CgroupMountMode: runtimeapi.CgroupMountMode_CGROUP_MOUNT_MODE_READ_ONLY}}})
	if ro.Security.CgroupNS != nil || ro.Security.CgroupMountMode != container.CgroupMountReadOnly {
		t.Errorf("READ_ONLY without cgroupns_options: %+v", ro.Security)
	}
	if none := containerConfig(&runtimeapi.ContainerConfig{}); none.Security.CgroupNS != nil || none.Security.CgroupMountMode != container.CgroupMountUnspecified {
		t.Errorf("nothing asked: %+v", none.Security)
	}

	podOpts := func(o *runtimeapi.NamespaceOption) *runtimeapi.PodSandboxConfig {
		return &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: o}}}
	}
	if !sandboxConfig(podOpts(&runtimeapi.NamespaceOption{CgroupnsOptions: &runtimeapi.CgroupNamespace{}}), "").Namespaces.CgroupNSSet {
		t.Error("a pod's cgroupns_options were not marked")
	}
	if sandboxConfig(podOpts(&runtimeapi.NamespaceOption{}), "").Namespaces.CgroupNSSet {
		t.Error("a pod without cgroupns_options was marked")
	}
}

type readyNetwork struct{}

func (readyNetwork) Ready() error            { return nil }
func (readyNetwork) SetPodCIDR(string) error { return nil }

// TestStatusAdvertisesCgroupFeatures: cgroup_mount_mode and each handler's
// cgroup_namespaces are what daemon/ found, never more.
func TestStatusAdvertisesCgroupFeatures(t *testing.T) {
	for _, rw := range []bool{false, true} {
		s := New(Deps{Network: readyNetwork{}, CgroupMountMode: rw, Handlers: []HandlerInfo{
			{Name: "", CgroupNamespaces: true}, {Name: "runc"},
		}})
		resp, err := s.Status(context.Background(), &runtimeapi.StatusRequest{})
		if err != nil {
			t.Fatal(err)
		}
		if got := resp.GetFeatures().GetCgroupMountMode(); got != rw {
			t.Errorf("cgroup_mount_mode %v, want %v", got, rw)
		}
		if !resp.GetFeatures().GetSupplementalGroupsPolicy() || !resp.GetFeatures().GetMountOptions() {
			t.Errorf("features lost: %+v", resp.GetFeatures())
		}
		hs := resp.GetRuntimeHandlers()
		if len(hs) != 2 || !hs[0].GetFeatures().GetCgroupNamespaces() || hs[1].GetFeatures().GetCgroupNamespaces() {
			t.Errorf("handlers %+v", hs)
		}
	}
}

package main

import "testing"

// TestContainerdPodInfo: the pause pid, cgroup and netns of containerd's
// verbose PodSandboxStatus (its SandboxInfo, trimmed); no shim runs here.
func TestContainerdPodInfo(t *testing.T) {
	info := `{"pid":4242,"processStatus":"running","netNamespaceClosed":false,
		"runtimeSpec":{"linux":{"cgroupsPath":"/minicri-soak-1/abc","namespaces":[{"type":"network","path":"/x/netns/cni-1"}]}},
		"sandboxMetadata":{"Version":"v1","Metadata":{"ID":"abc","Name":"p","NetNSPath":"/x/netns/cni-1","IP":"10.1.0.2"}}}`
	i := &instance{dir: t.TempDir(), sock: "/nowhere/containerd.sock"}
	got, err := (&containerd{}).podInfo(i, "abc", map[string]string{"info": info})
	if err != nil {
		t.Fatal(err)
	}
	want := podInfo{PID: 4242, NetNS: "/x/netns/cni-1", Cgroup: "/minicri-soak-1/abc"}
	if got != want {
		t.Errorf("podInfo = %+v, want %+v", got, want)
	}
}

// TestShimSocket: the socket of a pod's shim is named as the shim names it
// (pkg/shim.CreateSocketAddress: the sha256 of containerd's address, the
// namespace and the id, under /run/containerd/s, the instance's run dir).
func TestShimSocket(t *testing.T) {
	i := &instance{dir: "/tmp/containerd-soak-1", sock: "/tmp/containerd-soak-1/containerd.sock"}
	// echo -n /tmp/containerd-soak-1/containerd.sock/k8s.io/abc | sha256sum
	want := "/tmp/containerd-soak-1/run/containerd/s/d4a7d0f502f1e0038703f2580c2d83f21ed8ce4589126da68a477f32a7412836"
	if got := shimSocket(i, "abc"); got != want {
		t.Errorf("shimSocket = %s, want %s", got, want)
	}
}

package integration

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestMountOptionsApplied: Mount.mount_options (KEP-5855, what the kubelet
// sends for volumeMounts[].bindMountOptions) make the bind noexec, nosuid
// and nodev; the same directory bound without them stays executable; the
// runtime advertises the feature; anything but those three options is
// InvalidArgument and leaves nothing. Before the fix the options were
// dropped: the script ran from the "noexec" bind.
func TestMountOptionsApplied(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	st, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{})
	if err != nil {
		t.Fatal(err)
	}
	if !st.GetFeatures().GetMountOptions() {
		t.Errorf("Status does not advertise mount_options: %v", st.GetFeatures())
	}
	vol := filepath.Join(i.dir, "vol")
	if err := os.MkdirAll(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(vol, "x.sh"), []byte("#!/bin/sh\necho ran\n"), 0o755); err != nil { //nolint:gosec // an executable script is the point
		t.Fatal(err)
	}
	podID, pod := i.podWithLogs(t, "mountopts")
	opts := []string{"noexec", "nosuid", "nodev"}
	cfg := ctrConfig("mountopts", "sleep 1000")
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/opts", HostPath: vol, MountOptions: opts},
		{ContainerPath: "/plain", HostPath: vol},
	}
	id := i.run(t, podID, pod, cfg)
	if code, out := i.execIn(t, id, "sh", "-c", "/plain/x.sh"); code != 0 || out != "ran" {
		t.Errorf("plain bind: %d %q", code, out)
	}
	if code, out := i.execIn(t, id, "sh", "-c", "/opts/x.sh"); code == 0 {
		t.Errorf("noexec bind: the script ran: %q", out)
	}
	_, mi := i.execIn(t, id, "cat", "/proc/self/mountinfo")
	found := false
	for _, l := range strings.Split(mi, "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == "/opts" {
			found = true
			for _, o := range opts {
				if !strings.Contains(","+f[5]+",", ","+o+",") {
					t.Errorf("/opts mount lacks %s: %s", o, l)
				}
			}
		}
	}
	if !found {
		t.Errorf("no /opts mount in %s", mi)
	}
	if ms := i.ctrStatus(t, id).Mounts; len(ms) != 2 || strings.Join(ms[0].MountOptions, ",") != "noexec,nosuid,nodev" {
		t.Errorf("status mounts: %v", ms)
	}
	for _, bad := range [][]string{{"exec"}, {"suid"}, {"noexec,dev"}, {"remount"}, {"mode=777"}} {
		bc := ctrConfig("bad", "true")
		bc.Mounts = []*runtimeapi.Mount{{ContainerPath: "/bad", HostPath: vol, MountOptions: bad}}
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bc, SandboxConfig: pod})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), bad[0]) {
			t.Errorf("mount option %q: %v, want InvalidArgument naming it", bad, err)
		}
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestImageNameAnnotationIsTheUserSpecifiedImage: the kubelet sends the
// image ID as ImageSpec.image and the pod's image in user_specified_image;
// the spec's io.kubernetes.cri.image-name annotation (read by NRI plugins
// and tools, set the same way by containerd) names the latter. Before the
// fix it was the image ID.
func TestImageNameAnnotationIsTheUserSpecifiedImage(t *testing.T) {
	i := newInstance(t, withRegistry())
	ref := i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "imagename")
	cfg := ctrConfig("imagename", "sleep 1000")
	cfg.Image = &runtimeapi.ImageSpec{Image: ref, UserSpecifiedImage: busybox}
	id := i.create(t, podID, pod, cfg)
	plain := ctrConfig("plain", "sleep 1000")
	plainID := i.create(t, podID, pod, plain)
	for cid, want := range map[string]string{id: busybox, plainID: busybox} {
		resp, err := i.rt.ContainerStatus(ctx(t), &runtimeapi.ContainerStatusRequest{ContainerId: cid, Verbose: true})
		if err != nil {
			t.Fatal(err)
		}
		var v struct {
			RuntimeSpec struct {
				Annotations map[string]string `json:"annotations"`
			} `json:"runtimeSpec"`
		}
		if err := json.Unmarshal([]byte(resp.Info["info"]), &v); err != nil {
			t.Fatal(err)
		}
		if got := v.RuntimeSpec.Annotations["io.kubernetes.cri.image-name"]; got != want {
			t.Errorf("container %s: image-name annotation %q, want %q", cid, got, want)
		}
	}
	// ImageStatus verbose (ImageStatusRequest.verbose) carries the image's
	// config.
	is, err := i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: &runtimeapi.ImageSpec{Image: busybox}, Verbose: true})
	if err != nil || is.GetImage().GetId() != ref || !strings.Contains(is.GetInfo()["info"], `"imageSpec"`) {
		t.Errorf("verbose ImageStatus: %v %v", is, err)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestUTSAndUserNamespaceSysctls: Kubernetes counts kernel.domainname (UTS)
// and user.* (user namespace) as namespaced sysctls, and the kubelet sends
// them (an allowed unsafe sysctl, or DefaultPodSysctls). They reach the
// pod's own namespaces, and are refused when the pod shares the host's.
// Before the fix both were InvalidArgument "not namespaced".
func TestUTSAndUserNamespaceSysctls(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	hostDomain, _ := os.ReadFile("/proc/sys/kernel/domainname")
	hostMaxNS, _ := os.ReadFile("/proc/sys/user/max_user_namespaces")
	infos := map[string]podInfo{}
	check := func(pod *runtimeapi.PodSandboxConfig, file, want string) {
		t.Helper()
		pod.LogDirectory = filepath.Join(i.dir, "logs", pod.Metadata.Name)
		podID := i.runPod(t, pod)
		cfg := ctrConfig("sysctl", "sleep 1000")
		if ns := pod.Linux.GetSecurityContext().GetNamespaceOptions(); ns != nil {
			cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: ns}
		}
		id := i.run(t, podID, pod, cfg)
		if code, out := i.execIn(t, id, "cat", file); code != 0 || out != want {
			t.Errorf("%s in the container: %d %q, want %q", file, code, out, want)
		}
		_, infos[podID] = i.status(t, podID)
		i.stopRemove(t, podID)
	}
	uts := podConfig("domainname")
	uts.Linux.Sysctls = map[string]string{"kernel.domainname": "example.test"}
	check(uts, "/proc/sys/kernel/domainname", "example.test")

	userns := usernsPodConfig("usersysctl", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	userns.Linux.Sysctls = map[string]string{"user.max_user_namespaces": "7"}
	check(userns, "/proc/sys/user/max_user_namespaces", "7")

	hostNet := podConfig("domainname-hostnet")
	hostNet.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE},
	}
	hostNet.Linux.Sysctls = map[string]string{"kernel.domainname": "example.test"}
	hostUsers := podConfig("usersysctl-host")
	hostUsers.Linux.Sysctls = map[string]string{"user.max_user_namespaces": "7"}
	for _, pod := range []*runtimeapi.PodSandboxConfig{hostNet, hostUsers} {
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: pod})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: %v, want InvalidArgument", pod.Metadata.Name, err)
		}
	}
	if b, _ := os.ReadFile("/proc/sys/kernel/domainname"); string(b) != string(hostDomain) {
		t.Errorf("the host's domainname changed: %q -> %q", hostDomain, b)
	}
	if b, _ := os.ReadFile("/proc/sys/user/max_user_namespaces"); string(b) != string(hostMaxNS) {
		t.Errorf("the host's max_user_namespaces changed: %q -> %q", hostMaxNS, b)
	}
	i.assertNothingLeft(t, infos)
}

// TestWorkingDirIsCreated: ContainerConfig.working_dir (the pod's
// workingDir) need not exist in the image: it is created, as by runc under
// containerd.
func TestWorkingDirIsCreated(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "workdir")
	cfg := ctrConfig("workdir", "sleep 1000")
	cfg.WorkingDir = "/no/such/dir"
	id := i.run(t, podID, pod, cfg)
	if code, out := i.execIn(t, id, "sh", "-c", "pwd && touch f && ls"); code != 0 || out != "/no/such/dir\nf" {
		t.Errorf("in working_dir: %d %q", code, out)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestImageSpecRuntimeHandler: an unknown ImageSpec.runtime_handler in
// PullImage or ImageStatus is InvalidArgument naming it, as the CRI asks;
// a known one (the default "", or "runc" when configured) pulls as usual.
// Before the fix it was ignored.
func TestImageSpecRuntimeHandler(t *testing.T) {
	needRunc(t)
	i := newInstance(t, withRegistry(), func(i *instance) { i.handler = "runc" })
	for _, h := range []string{"", "runc"} {
		if _, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: &runtimeapi.ImageSpec{Image: busybox, RuntimeHandler: h}}); err != nil {
			t.Errorf("pull with handler %q: %v", h, err)
		}
	}
	spec := &runtimeapi.ImageSpec{Image: busybox, RuntimeHandler: "no-such-handler"}
	_, err := i.images().PullImage(ctx(t), &runtimeapi.PullImageRequest{Image: spec})
	if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), `"no-such-handler"`) {
		t.Errorf("pull with an unknown handler: %v, want InvalidArgument naming it", err)
	}
	_, err = i.images().ImageStatus(ctx(t), &runtimeapi.ImageStatusRequest{Image: spec})
	if status.Code(err) != codes.InvalidArgument {
		t.Errorf("image status with an unknown handler: %v, want InvalidArgument", err)
	}
}

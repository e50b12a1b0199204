package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/test/registry/fixture"
)

// The kubelet's lists for procMount Default (k8s.io/kubernetes
// pkg/securitycontext); for Unmasked it sends empty lists.
var (
	kubeletMaskedPaths = []string{"/proc/asound", "/proc/acpi", "/proc/interrupts", "/proc/kcore", "/proc/keys",
		"/proc/latency_stats", "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
		"/sys/firmware", "/sys/devices/virtual/powercap"}
	kubeletReadonlyPaths = []string{"/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"}
)

// mountPoints lists the mount points a container sees.
func (i *instance) mountPoints(t *testing.T, id string) []string {
	t.Helper()
	code, out := i.execIn(t, id, "cat", "/proc/self/mountinfo")
	if code != 0 {
		t.Fatalf("read mountinfo: %d %s", code, out)
	}
	var mps []string
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 4 {
			mps = append(mps, f[4])
		}
	}
	return mps
}

// TestProcMountUnmaskedInUserNSPod: procMount Unmasked (empty lists, nil
// over gRPC) leaves /proc and /sys unmasked and writable in a user
// namespace pod; procMount Default masks them. Before the fix nil meant
// "the runtime's defaults" and Unmasked was masked all the same.
func TestProcMountUnmaskedInUserNSPod(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := usernsPodConfig("procmount", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "procmount")
	podID := i.runPod(t, pod)
	mk := func(name string, masked, readonly []string) *runtimeapi.ContainerConfig {
		cfg := ctrConfig(name, "sleep 1000")
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
			NamespaceOptions: pod.Linux.SecurityContext.NamespaceOptions,
			MaskedPaths:      masked, ReadonlyPaths: readonly,
		}
		return cfg
	}
	def := i.run(t, podID, pod, mk("default", kubeletMaskedPaths, kubeletReadonlyPaths))
	unmasked := i.run(t, podID, pod, mk("unmasked", []string{}, []string{}))

	var present []string // the paths this host has (no /proc/kcore without CONFIG_PROC_KCORE)
	for _, p := range append(slices.Clone(kubeletMaskedPaths), kubeletReadonlyPaths...) {
		if _, err := os.Stat(p); err == nil {
			present = append(present, p)
		}
	}
	if len(present) < 4 {
		t.Fatalf("too few of the default paths exist here to prove anything: %v", present)
	}
	defMounts, unmaskedMounts := i.mountPoints(t, def), i.mountPoints(t, unmasked)
	for _, p := range present {
		if !slices.Contains(defMounts, p) {
			t.Errorf("procMount Default: %s is not masked or read-only", p)
		}
		if slices.Contains(unmaskedMounts, p) {
			t.Errorf("procMount Unmasked: %s is masked or read-only", p)
		}
	}
	if code, out := i.execIn(t, unmasked, "sh", "-c", "test -c /proc/keys && echo MASKED; cat /proc/keys >/dev/null && echo READ"); code != 0 || out != "READ" {
		t.Errorf("procMount Unmasked: /proc/keys: %d %q", code, out)
	}
	if code, out := i.execIn(t, def, "sh", "-c", "test -c /proc/keys && echo MASKED"); code != 0 || out != "MASKED" {
		t.Errorf("procMount Default: /proc/keys: %d %q", code, out)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, def)
	i.assertCtrGone(t, unmasked)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestContainerNamespaceOptions: a container's namespace options must
// match its pod's; what minicri would not do is refused with
// InvalidArgument and leaves nothing; what matches is honoured.
func TestContainerNamespaceOptions(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	plainID, plain := i.podWithLogs(t, "ns-plain")
	userns := usernsPodConfig("ns-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	userns.LogDirectory = filepath.Join(i.dir, "logs", "ns-userns")
	usernsID := i.runPod(t, userns)
	host := podConfig("ns-host")
	host.LogDirectory = filepath.Join(i.dir, "logs", "ns-host")
	hostNS := &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE}
	host.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: hostNS}
	hostID := i.runPod(t, host)

	podUserns := userns.Linux.SecurityContext.NamespaceOptions.UsernsOptions
	refused := map[string]struct {
		podID string
		pod   *runtimeapi.PodSandboxConfig
		ns    *runtimeapi.NamespaceOption
	}{
		"own network namespace":            {plainID, plain, &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_CONTAINER}},
		"TARGET IPC namespace":             {plainID, plain, &runtimeapi.NamespaceOption{Ipc: runtimeapi.NamespaceMode_TARGET}},
		"pod user namespace, pod has none": {plainID, plain, &runtimeapi.NamespaceOption{UsernsOptions: podUserns}},
		"host user namespace in userns pod": {usernsID, userns, &runtimeapi.NamespaceOption{
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_NODE}}},
		"other mappings than the pod's": {usernsID, userns, &runtimeapi.NamespaceOption{UsernsOptions: &runtimeapi.UserNamespace{
			Mode: runtimeapi.NamespaceMode_POD, Uids: mapping(0, usernsHostID+65536, 65536), Gids: mapping(0, usernsHostID+65536, 65536)}}},
		"CONTAINER user namespace": {usernsID, userns, &runtimeapi.NamespaceOption{
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_CONTAINER}}},
	}
	for name, c := range refused {
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: c.podID,
			Config: withNamespaces(ctrConfig("refused", "sleep 1000"), c.ns), SandboxConfig: c.pod})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "containers")); len(entries) != 0 {
		t.Fatalf("refused containers left records: %v", entries)
	}

	// As the kubelet and critest send them: the pod's own options.
	inUserns := i.run(t, usernsID, userns, withNamespaces(ctrConfig("in-userns", "sleep 1000"), userns.Linux.SecurityContext.NamespaceOptions))
	if code, out := i.execIn(t, inUserns, "cat", "/proc/self/uid_map"); code != 0 || !strings.Contains(out, fmt.Sprint(usernsHostID)) {
		t.Errorf("container in the pod's user namespace: uid_map %q", out)
	}
	onHost := i.run(t, hostID, host, withNamespaces(ctrConfig("on-host", "sleep 1000"), hostNS))
	self := os.Getpid()
	for _, kind := range []string{"net", "ipc"} {
		if nsInode(t, i.ctrPID(t, onHost), kind) != nsInode(t, self, kind) {
			t.Errorf("container with %s NODE in a host pod is not in the host's %s namespace", kind, kind)
		}
	}
	infos := map[string]podInfo{}
	for _, id := range []string{plainID, usernsID, hostID} {
		_, infos[id] = i.status(t, id)
		i.stopRemove(t, id)
	}
	i.assertCtrGone(t, inUserns)
	i.assertCtrGone(t, onHost)
	i.assertNothingLeft(t, infos)
}

// pauseIDs reads the pause's real UID and GID and its groups.
func pauseIDs(t *testing.T, pid int) (uid, gid, groups string) {
	t.Helper()
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) == 0 {
			continue
		}
		switch f[0] {
		case "Uid:":
			uid = f[1]
		case "Gid:":
			gid = f[1]
		case "Groups:":
			groups = strings.Join(f[1:], " ")
		}
	}
	return uid, gid, groups
}

// TestPodSecurityContext: the pause takes the pod's run_as_user,
// run_as_group and supplemental groups (before: always 65535 and no
// groups); IDs it cannot take and a Localhost seccomp profile that does
// not exist are refused with InvalidArgument and leave nothing; an
// existing profile, RuntimeDefault and readonly_rootfs are accepted.
func TestPodSecurityContext(t *testing.T) {
	i := newInstance(t)
	pod := podConfig("pod-ids")
	pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		RunAsUser: &runtimeapi.Int64Value{Value: 1234}, RunAsGroup: &runtimeapi.Int64Value{Value: 2345},
		SupplementalGroups: []int64{3456, 4567}, ReadonlyRootfs: true,
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
	}
	podID := i.runPod(t, pod)
	_, info := i.status(t, podID)
	if uid, gid, groups := pauseIDs(t, info.PID); uid != "1234" || gid != "2345" || groups != "3456 4567" {
		t.Errorf("pause runs as uid %s gid %s groups %q, want 1234 2345 \"3456 4567\"", uid, gid, groups)
	}
	plainID := i.runPod(t, podConfig("pod-default-ids"))
	_, plainInfo := i.status(t, plainID)
	if uid, gid, groups := pauseIDs(t, plainInfo.PID); uid != "65535" || gid != "65535" || groups != "" {
		t.Errorf("default pause runs as uid %s gid %s groups %q, want 65535 65535 none", uid, gid, groups)
	}

	profile := filepath.Join(t.TempDir(), "profile.json")
	if err := os.WriteFile(profile, []byte(`{"defaultAction":"SCMP_ACT_ALLOW"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	local := podConfig("pod-seccomp")
	local.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: profile}}
	localID := i.runPod(t, local)
	_, localInfo := i.status(t, localID)

	refused := map[string]*runtimeapi.LinuxSandboxSecurityContext{
		"missing Localhost profile": {Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost,
			LocalhostRef: profile + ".missing"}},
		"missing legacy localhost/ profile": {SeccompProfilePath: "localhost/" + profile + ".missing"}, //nolint:staticcheck // the deprecated field is still honoured
		"negative run_as_user":              {RunAsUser: &runtimeapi.Int64Value{Value: -1}},
		"unmapped run_as_user in userns": {RunAsUser: &runtimeapi.Int64Value{Value: 70000}, NamespaceOptions: &runtimeapi.NamespaceOption{
			UsernsOptions: &runtimeapi.UserNamespace{Mode: runtimeapi.NamespaceMode_POD, Uids: mapping(0, usernsHostID, 65536), Gids: mapping(0, usernsHostID, 65536)}}},
	}
	for name, sc := range refused {
		cfg := podConfig("refused")
		cfg.Linux.SecurityContext = sc
		_, err := i.rt.RunPodSandbox(ctx(t), &runtimeapi.RunPodSandboxRequest{Config: cfg})
		if status.Code(err) != codes.InvalidArgument {
			t.Errorf("%s: want InvalidArgument, got %v", name, err)
		}
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "sandboxes")); len(entries) != 3 {
		t.Errorf("refused pods left records: %d sandboxes, want 3", len(entries))
	}
	i.stopRemove(t, podID)
	i.stopRemove(t, plainID)
	i.stopRemove(t, localID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info, plainID: plainInfo, localID: localInfo})
}

// statOwner waits for path and returns its owner on the host.
func statOwner(t *testing.T, path string) uint32 {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for {
		var st syscall.Stat_t
		err := syscall.Stat(path, &st)
		if err == nil {
			return st.Uid
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s never appeared: %v", path, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// TestIDMappedMounts: a mount with the pod's mappings (what the kubelet
// sends in a user namespace pod) is idmapped through the pod's user
// namespace: host root's files show as the container's root, and what the
// container's root creates is owned by host root, not by the pod's host
// UID. Other mappings are honoured as given. Mappings in a pod without a
// user namespace are refused.
func TestIDMappedMounts(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := usernsPodConfig("idmap", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "idmap")
	podID := i.runPod(t, pod)
	podVol, otherVol, plainVol := t.TempDir(), t.TempDir(), t.TempDir()
	// Before: host root owns podVol; host UID 1000 owns otherVol.
	if err := os.Chown(otherVol, 1000, 1000); err != nil {
		t.Fatal(err)
	}
	os.Chmod(plainVol, 0o777)
	podMap := mapping(0, usernsHostID, 65536)
	otherMap := mapping(1000, usernsHostID, 65536) // container root writes as host 1000
	cfg := ctrConfig("idmap", "touch /pod/f /other/f /plain/f && echo DONE; sleep 1000")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{NamespaceOptions: pod.Linux.SecurityContext.NamespaceOptions}
	cfg.Mounts = []*runtimeapi.Mount{
		{ContainerPath: "/pod", HostPath: podVol, UidMappings: podMap, GidMappings: podMap},
		{ContainerPath: "/other", HostPath: otherVol, UidMappings: otherMap, GidMappings: otherMap},
		{ContainerPath: "/plain", HostPath: plainVol},
	}
	id := i.run(t, podID, pod, cfg)
	waitLog(t, i.ctrStatus(t, id).LogPath, "DONE", 10*time.Second)
	for path, want := range map[string]uint32{
		filepath.Join(podVol, "f"): 0, filepath.Join(otherVol, "f"): 1000, filepath.Join(plainVol, "f"): usernsHostID,
	} {
		if got := statOwner(t, path); got != want {
			t.Errorf("%s, created by the container's root, is owned by host UID %d, want %d", path, got, want)
		}
	}
	if code, out := i.execIn(t, id, "stat", "-c", "%u %n", "/pod", "/other", "/plain"); code != 0 || out != "0 /pod\n0 /other\n65534 /plain" {
		t.Errorf("owners inside: %d %q", code, out)
	}
	if st := i.ctrStatus(t, id); len(st.Mounts) == 0 || st.Mounts[0].UidMappings == nil {
		t.Errorf("ContainerStatus does not report the mount's mappings: %v", st.Mounts)
	}

	plainID, plainPod := i.podWithLogs(t, "idmap-plain")
	bad := ctrConfig("refused", "sleep 1000")
	bad.Mounts = []*runtimeapi.Mount{{ContainerPath: "/pod", HostPath: t.TempDir(), UidMappings: podMap, GidMappings: podMap}}
	if _, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: plainID, Config: bad, SandboxConfig: plainPod}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("mappings in a pod without a user namespace: want InvalidArgument, got %v", err)
	}
	bad.Mounts[0].GidMappings = nil
	if _, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: bad, SandboxConfig: pod}); status.Code(err) != codes.InvalidArgument {
		t.Errorf("UID mappings without GID mappings: want InvalidArgument, got %v", err)
	}
	if ids := i.containersOf(t, plainID); len(ids) != 0 {
		t.Errorf("refused containers were created: %v", ids)
	}
	infos := map[string]podInfo{}
	for _, p := range []string{podID, plainID} {
		_, infos[p] = i.status(t, p)
		i.stopRemove(t, p)
	}
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, infos)
}

// TestHostnameEnv: every container's environment has HOSTNAME, the pod's
// hostname; an image's HOSTNAME and the config's win over it.
func TestHostnameEnv(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, fixture.HostnameEnvImage)
	podID, pod := i.podWithLogs(t, "envhost")
	plain := i.run(t, podID, pod, ctrConfig("plain", "sleep 1000"))
	fromImage := ctrConfig("image", "sleep 1000")
	fromImage.Image = &runtimeapi.ImageSpec{Image: fixture.HostnameEnvImage}
	imageID := i.run(t, podID, pod, fromImage)
	fromConfig := ctrConfig("config", "sleep 1000")
	fromConfig.Image = &runtimeapi.ImageSpec{Image: fixture.HostnameEnvImage}
	fromConfig.Envs = []*runtimeapi.KeyValue{{Key: "HOSTNAME", Value: []byte("from-config")}}
	configID := i.run(t, podID, pod, fromConfig)
	for id, want := range map[string]string{plain: pod.Hostname, imageID: "from-image", configID: "from-config"} {
		// env, not a shell: busybox's sh sets HOSTNAME when it is unset.
		code, out := i.execIn(t, id, "env")
		if lines := strings.Split(out, "\n"); code != 0 || !slices.Contains(lines, "HOSTNAME="+want) {
			t.Errorf("exec'd env %q (exit %d) lacks HOSTNAME=%s", out, code, want)
		}
	}
	// The container's init has it too, not only exec'd processes.
	if b, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", i.ctrPID(t, plain))); err != nil || !slices.Contains(strings.Split(string(b), "\x00"), "HOSTNAME="+pod.Hostname) {
		t.Errorf("init's environment %q lacks HOSTNAME=%s (%v)", b, pod.Hostname, err)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// TestSELinuxFieldsIgnored: without SELinux on the host (as here), the
// pod's and the container's SELinux options and a mount's selinux_relabel
// are accepted and ignored, as containerd does with enable_selinux off.
func TestSELinuxFieldsIgnored(t *testing.T) {
	if _, err := os.Stat("/sys/fs/selinux/enforce"); err == nil {
		t.Skip("SELinux is enabled on this host: minicri would still ignore the options")
	}
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	opts := &runtimeapi.SELinuxOption{User: "system_u", Role: "system_r", Type: "container_t", Level: "s0:c1,c2"}
	pod := podConfig("selinux")
	pod.LogDirectory = filepath.Join(i.dir, "logs", "selinux")
	pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{SelinuxOptions: opts}
	podID := i.runPod(t, pod)
	vol := t.TempDir()
	cfg := ctrConfig("selinux", "sleep 1000")
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{SelinuxOptions: opts}
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/data", HostPath: vol, SelinuxRelabel: true}}
	id := i.run(t, podID, pod, cfg)
	if code, out := i.execIn(t, id, "sh", "-c", "echo ok > /data/f && cat /data/f"); code != 0 || out != "ok" {
		t.Errorf("relabelled mount: %d %q", code, out)
	}
	if st := i.ctrStatus(t, id); len(st.Mounts) != 1 || !st.Mounts[0].SelinuxRelabel {
		t.Errorf("status mounts: %v", st.Mounts)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

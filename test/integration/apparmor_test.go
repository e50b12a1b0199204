package integration

// AppArmor (issue 10 item 4). The profile tests need a kernel that enforces
// AppArmor (the VM lab, test/vm); on other hosts they skip, saying so, and
// TestAppArmorAbsentHost checks that such hosts keep working.

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

const defaultProfile = "minicri-default"

func appArmorEnabled() bool {
	b, err := os.ReadFile("/sys/module/apparmor/parameters/enabled")
	return err == nil && strings.TrimSpace(string(b)) == "Y"
}

func requireAppArmor(t *testing.T) {
	t.Helper()
	if !appArmorEnabled() {
		t.Skip("AppArmor is not enabled on this host (/sys/module/apparmor/parameters/enabled is not Y): run in the VM lab (test/vm)")
	}
}

func withAppArmor(cfg *runtimeapi.ContainerConfig, p *runtimeapi.SecurityProfile, legacy string) *runtimeapi.ContainerConfig {
	if cfg.Linux.SecurityContext == nil {
		cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{}
	}
	cfg.Linux.SecurityContext.Apparmor = p
	cfg.Linux.SecurityContext.ApparmorProfile = legacy //nolint:staticcheck // the deprecated field older kubelets still send
	return cfg
}

func profileOf(ty runtimeapi.SecurityProfile_ProfileType, ref string) *runtimeapi.SecurityProfile {
	return &runtimeapi.SecurityProfile{ProfileType: ty, LocalhostRef: ref}
}

// label is the AppArmor label of a process as the host sees it.
func label(t *testing.T, pid int) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "attr/current"))
	if err != nil {
		t.Fatalf("read the AppArmor label of %d: %v", pid, err)
	}
	return strings.TrimRight(string(b), "\n\x00")
}

// execIn runs cmd in the container and returns its exit code and output.
func (i *instance) execIn(t *testing.T, id string, cmd ...string) (int32, string) {
	t.Helper()
	res, err := i.rt.ExecSync(ctx(t), &runtimeapi.ExecSyncRequest{ContainerId: id, Cmd: cmd, Timeout: 30})
	if err != nil {
		t.Fatalf("ExecSync %q: %v", cmd, err)
	}
	return res.ExitCode, strings.TrimRight(string(res.Stdout)+string(res.Stderr), "\n\x00")
}

// loadTestProfile loads a profile that denies every file write, as
// critest's do, and unloads it when the test ends.
func loadTestProfile(t *testing.T, dir, name string) {
	t.Helper()
	text := "profile " + name + " flags=(attach_disconnected,mediate_deleted) {\n"
	if _, err := os.Stat("/etc/apparmor.d/abstractions/base"); err == nil {
		text = "#include <tunables/global>\n" + text + "  #include <abstractions/base>\n"
	}
	text += "  file,\n  deny /** w,\n}\n"
	path := filepath.Join(dir, name+".profile")
	if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("apparmor_parser", "-Kr", path).CombinedOutput(); err != nil {
		t.Fatalf("apparmor_parser -Kr: %v: %s", err, out)
	}
	t.Cleanup(func() { exec.Command("apparmor_parser", "-R", path).Run() })
}

// TestAppArmorProfilesApplied: each way of asking gives its profile to the
// container's init and to the processes exec'd into it.
func TestAppArmorProfilesApplied(t *testing.T) {
	requireAppArmor(t)
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	testProfile := "minicri-it-deny-write-" + strconv.Itoa(os.Getpid())
	loadTestProfile(t, i.dir, testProfile)
	podID, pod := i.podWithLogs(t, "apparmor")
	privPod := podConfig("apparmor-priv")
	privPod.LogDirectory = filepath.Join(i.dir, "logs", "apparmor-priv")
	privPod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	privPodID := i.runPod(t, privPod)

	cases := []struct {
		name   string
		pod    string
		podCfg *runtimeapi.PodSandboxConfig
		cfg    *runtimeapi.ContainerConfig
		want   string
	}{
		{"nothing asked", podID, pod, ctrConfig("unset", "sleep 1000"), defaultProfile + " (enforce)"},
		{"RuntimeDefault", podID, pod, withAppArmor(ctrConfig("default", "sleep 1000"),
			profileOf(runtimeapi.SecurityProfile_RuntimeDefault, ""), ""), defaultProfile + " (enforce)"},
		{"runtime/default (deprecated field)", podID, pod, withAppArmor(ctrConfig("default-legacy", "sleep 1000"),
			nil, "runtime/default"), defaultProfile + " (enforce)"},
		{"Unconfined", podID, pod, withAppArmor(ctrConfig("unconfined", "sleep 1000"),
			profileOf(runtimeapi.SecurityProfile_Unconfined, ""), ""), "unconfined"},
		{"Localhost", podID, pod, withAppArmor(ctrConfig("localhost", "sleep 1000"),
			profileOf(runtimeapi.SecurityProfile_Localhost, testProfile), ""), testProfile + " (enforce)"},
		{"localhost/ (deprecated field)", podID, pod, withAppArmor(ctrConfig("localhost-legacy", "sleep 1000"),
			nil, "localhost/"+testProfile), testProfile + " (enforce)"},
	}
	priv := withAppArmor(ctrConfig("privileged", "sleep 1000"), profileOf(runtimeapi.SecurityProfile_RuntimeDefault, ""), "")
	priv.Linux.SecurityContext.Privileged = true
	cases = append(cases, struct {
		name   string
		pod    string
		podCfg *runtimeapi.PodSandboxConfig
		cfg    *runtimeapi.ContainerConfig
		want   string
	}{"RuntimeDefault, privileged (containerd: none)", privPodID, privPod, priv, "unconfined"})

	for _, c := range cases {
		id := i.run(t, c.pod, c.podCfg, c.cfg)
		if got := label(t, i.ctrPID(t, id)); got != c.want {
			t.Errorf("%s: the container's init runs under %q, want %q", c.name, got, c.want)
		}
		if code, got := i.execIn(t, id, "cat", "/proc/self/attr/current"); code != 0 || got != c.want {
			t.Errorf("%s: an exec'd process runs under %q (exit %d), want %q", c.name, got, code, c.want)
		}
	}
	// The Localhost profile is enforced: it denies writes.
	loc := i.run(t, podID, pod, withAppArmor(ctrConfig("localhost-enforced", "sleep 1000"),
		profileOf(runtimeapi.SecurityProfile_Localhost, testProfile), ""))
	if code, out := i.execIn(t, loc, "touch", "/tmp/x"); code == 0 {
		t.Errorf("a write under %s succeeded: %s", testProfile, out)
	}
	i.stopRemove(t, podID)
	i.stopRemove(t, privPodID)
}

// TestAppArmorUnloadedLocalhostProfile: CreateContainer fails with
// FailedPrecondition naming the profile, and leaves nothing.
func TestAppArmorUnloadedLocalhostProfile(t *testing.T) {
	requireAppArmor(t)
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "apparmor-missing")
	for _, cfg := range []*runtimeapi.ContainerConfig{
		withAppArmor(ctrConfig("missing", "sleep 1000"), profileOf(runtimeapi.SecurityProfile_Localhost, "minicri-it-not-loaded"), ""),
		withAppArmor(ctrConfig("missing-legacy", "sleep 1000"), nil, "localhost/minicri-it-not-loaded"),
	} {
		_, err := i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, Config: cfg, SandboxConfig: pod})
		if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "minicri-it-not-loaded") {
			t.Errorf("%s: CreateContainer = %v, want FailedPrecondition naming the profile", cfg.Metadata.Name, err)
		}
	}
	if ids := i.containersOf(t, podID); len(ids) != 0 {
		t.Errorf("refused containers were created: %v", ids)
	}
	if entries, _ := os.ReadDir(filepath.Join(i.dir, "root", "containers")); len(entries) != 0 {
		t.Errorf("refused containers left records: %v", entries)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

// The attack: a container holding CAP_SYS_ADMIN without seccomp remounts
// /proc/sys read-write and writes kernel.domainname, or mounts a tmpfs.
// Unconfined, both work (the attack is real); under the default profile,
// in the container's init and in an exec'd process, neither does.
func TestAppArmorDefaultProfileDeniesMountAndProcSys(t *testing.T) {
	requireAppArmor(t)
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "apparmor-attack")
	attack := "mount -o remount,rw,bind /proc/sys && echo evil > /proc/sys/kernel/domainname && echo WROTE; " +
		"mkdir -p /tmp/m && mount -t tmpfs none /tmp/m && echo MOUNTED; echo DONE; sleep 1000"
	mk := func(name string, p runtimeapi.SecurityProfile_ProfileType) *runtimeapi.ContainerConfig {
		cfg := withAppArmor(ctrConfig(name, attack), profileOf(p, ""), "")
		sc := cfg.Linux.SecurityContext
		sc.Capabilities = &runtimeapi.Capability{AddCapabilities: []string{"SYS_ADMIN"}}
		sc.Seccomp = profileOf(runtimeapi.SecurityProfile_Unconfined, "")
		// What the kubelet sends for the Default procMount: /proc/sys is a
		// read-only mount for the attack to remount.
		sc.MaskedPaths, sc.ReadonlyPaths = kubeletMaskedPaths, kubeletReadonlyPaths
		return cfg
	}
	i.run(t, podID, pod, mk("unconfined", runtimeapi.SecurityProfile_Unconfined))
	for _, l := range waitLog(t, filepath.Join(pod.LogDirectory, "unconfined.log"), "DONE", time.Minute) {
		t.Logf("unconfined: %s", l.content)
	}
	unconfinedLog := strings.Join(logContents(t, filepath.Join(pod.LogDirectory, "unconfined.log")), "\n")
	if !strings.Contains(unconfinedLog, "WROTE") || !strings.Contains(unconfinedLog, "MOUNTED") {
		t.Fatalf("the attack does not work even unconfined, so it proves nothing:\n%s", unconfinedLog)
	}

	confined := i.run(t, podID, pod, mk("confined", runtimeapi.SecurityProfile_RuntimeDefault))
	logPath := filepath.Join(pod.LogDirectory, "confined.log")
	waitLog(t, logPath, "DONE", time.Minute)
	if code, out := i.execIn(t, confined, "sh", "-c", "mkdir -p /tmp/e && mount -t tmpfs none /tmp/e && echo MOUNTED"); code == 0 || strings.Contains(out, "MOUNTED") {
		t.Errorf("an exec'd process mounted a tmpfs under the default profile: %s", out)
	}
	if code, out := i.execIn(t, confined, "sh", "-c", "mount -o remount,rw,bind /proc/sys && echo evil > /proc/sys/kernel/domainname && echo WROTE"); code == 0 || strings.Contains(out, "WROTE") {
		t.Errorf("an exec'd process wrote kernel.domainname under the default profile: %s", out)
	}
	for _, l := range readLog(t, logPath) {
		if l.content == "MOUNTED" || l.content == "WROTE" {
			t.Errorf("the container's init got through the default profile: %q", l.content)
		}
	}
	i.stopRemove(t, podID)
}

func logContents(t *testing.T, path string) []string {
	t.Helper()
	var out []string
	for _, l := range readLog(t, path) {
		out = append(out, l.content)
	}
	return out
}

// TestAppArmorAbsentHost: on a host without AppArmor, verbose Status says
// so, containers that ask for nothing, Unconfined or RuntimeDefault run as
// before, and a Localhost profile, which cannot be loaded, is refused with
// FailedPrecondition naming it. On an AppArmor host, Status says it is
// there and names the default profile.
func TestAppArmorAbsentHost(t *testing.T) {
	i := newInstance(t, withRegistry())
	resp, err := i.rt.Status(ctx(t), &runtimeapi.StatusRequest{Verbose: true})
	if err != nil {
		t.Fatalf("Status: %v", err)
	}
	var cfg struct {
		AppArmor struct {
			Enabled        bool   `json:"enabled"`
			DefaultProfile string `json:"defaultProfile"`
		} `json:"apparmor"`
	}
	jsonUnmarshal(t, resp.Info["config"], &cfg)
	if cfg.AppArmor.Enabled != appArmorEnabled() {
		t.Fatalf("Status says AppArmor enabled=%v, the host says %v", cfg.AppArmor.Enabled, appArmorEnabled())
	}
	if appArmorEnabled() {
		if cfg.AppArmor.DefaultProfile != defaultProfile {
			t.Fatalf("Status names default profile %q, want %q", cfg.AppArmor.DefaultProfile, defaultProfile)
		}
		return
	}
	if _, err := i.rt.RuntimeConfig(ctx(t), &runtimeapi.RuntimeConfigRequest{}); err != nil {
		t.Fatalf("RuntimeConfig: %v", err)
	}
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "no-apparmor")
	for name, c := range map[string]*runtimeapi.ContainerConfig{
		"unset":      ctrConfig("unset", "sleep 1000"),
		"default":    withAppArmor(ctrConfig("default", "sleep 1000"), profileOf(runtimeapi.SecurityProfile_RuntimeDefault, ""), ""),
		"unconfined": withAppArmor(ctrConfig("unconfined", "sleep 1000"), nil, "unconfined"),
	} {
		id := i.run(t, podID, pod, c)
		if code, out := i.execIn(t, id, "true"); code != 0 {
			t.Errorf("%s: exec failed: %s", name, out)
		}
	}
	_, err = i.rt.CreateContainer(ctx(t), &runtimeapi.CreateContainerRequest{PodSandboxId: podID, SandboxConfig: pod,
		Config: withAppArmor(ctrConfig("localhost", "sleep 1000"), profileOf(runtimeapi.SecurityProfile_Localhost, "some-profile"), "")})
	if status.Code(err) != codes.FailedPrecondition || !strings.Contains(err.Error(), "some-profile") {
		t.Errorf("Localhost without AppArmor: %v, want FailedPrecondition naming the profile", err)
	}
	_, info := i.status(t, podID)
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: info})
}

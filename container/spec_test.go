package container

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// testRootfs makes a fake rootfs with the /etc/passwd and /etc/group the
// user package's tests resolve users in.
func testRootfs(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	if err := os.CopyFS(root, os.DirFS(filepath.Join("..", "user", "testdata", "rootfs"))); err != nil {
		t.Fatal(err)
	}
	return root
}

func writeFile(t *testing.T, path, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

// testInput is a minimal valid request in a pod with its own network, IPC
// and PID namespaces and all pod files present.
func testInput(t *testing.T) SpecInput {
	t.Helper()
	podDir := t.TempDir()
	for _, f := range []string{"hostname", "hosts", "resolv.conf"} {
		writeFile(t, filepath.Join(podDir, f), f+"\n")
	}
	shm := filepath.Join(podDir, "shm")
	if err := os.Mkdir(shm, 0o755); err != nil {
		t.Fatal(err)
	}
	return SpecInput{
		ID: "ctr1",
		Config: Config{
			Name:    "app",
			Image:   "docker.io/library/busybox:latest",
			Command: []string{"sleep", "inf"},
		},
		Image:  ImageConfig{Cmd: []string{"sh"}, Env: []string{"PATH=/bin:/usr/bin"}},
		Rootfs: testRootfs(t),
		Pod: PodInfo{
			ID:             "pod1",
			NetNSPath:      "/run/netns/pod1",
			PausePID:       4242,
			HostnameFile:   filepath.Join(podDir, "hostname"),
			HostsFile:      filepath.Join(podDir, "hosts"),
			ResolvConfFile: filepath.Join(podDir, "resolv.conf"),
			ShmPath:        shm,
		},
		CgroupsPath: "/minicri/pod1/ctr1",
		HostCaps:    []string{"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_SYS_ADMIN", "CAP_NET_ADMIN", "CAP_KILL"},
	}
}

func mustBuild(t *testing.T, in SpecInput) *specs.Spec {
	t.Helper()
	s, err := BuildSpec(in)
	if err != nil {
		t.Fatalf("BuildSpec: %v", err)
	}
	return s
}

func wantInvalid(t *testing.T, err error) {
	t.Helper()
	if err == nil {
		t.Fatal("no error, want one wrapping ErrInvalid")
	}
	if !errors.Is(err, ErrInvalid) {
		t.Fatalf("error %q does not wrap ErrInvalid", err)
	}
}

func TestProcessArgs(t *testing.T) {
	img := ImageConfig{Entrypoint: []string{"/entry", "-x"}, Cmd: []string{"cmd1", "cmd2"}}
	tests := []struct {
		name          string
		command, args []string
		img           ImageConfig
		want          []string
		invalid       bool
	}{
		{"command and args", []string{"/bin/sh", "-c"}, []string{"echo hi"}, img, []string{"/bin/sh", "-c", "echo hi"}, false},
		{"command only drops image cmd", []string{"/bin/true"}, nil, img, []string{"/bin/true"}, false},
		{"args only keep entrypoint", nil, []string{"a1"}, img, []string{"/entry", "-x", "a1"}, false},
		{"neither", nil, nil, img, []string{"/entry", "-x", "cmd1", "cmd2"}, false},
		{"cmd without entrypoint", nil, nil, ImageConfig{Cmd: []string{"sh"}}, []string{"sh"}, false},
		{"args without entrypoint", nil, []string{"ls", "/"}, ImageConfig{Cmd: []string{"sh"}}, []string{"ls", "/"}, false},
		{"empty entrypoint string means none", nil, nil, ImageConfig{Entrypoint: []string{""}, Cmd: []string{"sh"}}, []string{"sh"}, false},
		{"nothing at all", nil, nil, ImageConfig{}, nil, true},
		{"empty entrypoint only", nil, nil, ImageConfig{Entrypoint: []string{""}}, nil, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := processArgs(tt.command, tt.args, tt.img)
			if tt.invalid {
				wantInvalid(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, tt.want) {
				t.Fatalf("args = %q, want %q", got, tt.want)
			}
		})
	}
}

func TestBuildSpecNoCommand(t *testing.T) {
	in := testInput(t)
	in.Config.Command = nil
	in.Image = ImageConfig{}
	_, err := BuildSpec(in)
	wantInvalid(t, err)
}

func TestBuildEnv(t *testing.T) {
	const h = "HOSTNAME=web-0"
	tests := []struct {
		name     string
		image    []string
		cri      []string
		tty      bool
		expected []string
	}{
		{"default PATH and HOSTNAME", nil, nil, false, []string{defaultPathEnv, h}},
		{"image PATH replaces the default in place", []string{"PATH=/bin", "A=1"}, nil, false, []string{"PATH=/bin", h, "A=1"}},
		{"CRI overrides image by key", []string{"A=1", "B=2"}, []string{"B=3", "C=4"}, false, []string{defaultPathEnv, h, "A=1", "B=3", "C=4"}},
		{"CRI PATH wins", []string{"PATH=/bin"}, []string{"PATH=/x"}, false, []string{"PATH=/x", h}},
		{"value with =", nil, []string{"Q=a=b"}, false, []string{defaultPathEnv, h, "Q=a=b"}},
		{"tty sets TERM", nil, nil, true, []string{defaultPathEnv, "TERM=xterm", h}},
		{"TERM overridable", []string{"TERM=vt100"}, nil, true, []string{defaultPathEnv, "TERM=vt100", h}},
		{"entry without = unsets", []string{"A=1", "B=2"}, []string{"A"}, false, []string{defaultPathEnv, h, "B=2"}},
		{"image HOSTNAME wins", []string{"HOSTNAME=img"}, nil, false, []string{defaultPathEnv, "HOSTNAME=img"}},
		{"CRI HOSTNAME wins over image", []string{"HOSTNAME=img"}, []string{"HOSTNAME=cfg"}, false, []string{defaultPathEnv, "HOSTNAME=cfg"}},
		{"HOSTNAME can be unset", nil, []string{"HOSTNAME"}, false, []string{defaultPathEnv}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := buildEnv("web-0", tt.image, tt.cri, tt.tty)
			if !slices.Equal(got, tt.expected) {
				t.Fatalf("env = %q, want %q", got, tt.expected)
			}
		})
	}
}

// TestBuildSpecHostnameEnv: the pod's hostname, or the host's when the pod
// names none (its containers then see the host's name, as with containerd).
func TestBuildSpecHostnameEnv(t *testing.T) {
	in := testInput(t)
	in.Pod.Hostname = "web-0"
	if env := mustBuild(t, in).Process.Env; !slices.Contains(env, "HOSTNAME=web-0") {
		t.Fatalf("env %q lacks the pod's hostname", env)
	}
	in.Pod.Hostname = ""
	host, err := os.Hostname()
	if err != nil {
		t.Fatal(err)
	}
	if env := mustBuild(t, in).Process.Env; !slices.Contains(env, "HOSTNAME="+host) {
		t.Fatalf("env %q lacks the host's name %q", env, host)
	}
}

func TestBuildSpecProcess(t *testing.T) {
	tests := []struct {
		name     string
		criDir   string
		imageDir string
		want     string
		invalid  bool
	}{
		{"default", "", "", "/", false},
		{"image", "", "/srv", "/srv", false},
		{"request wins", "/work", "/srv", "/work", false},
		{"relative", "work", "", "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Config.WorkingDir = tt.criDir
			in.Image.WorkingDir = tt.imageDir
			s, err := BuildSpec(in)
			if tt.invalid {
				wantInvalid(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if s.Process.Cwd != tt.want {
				t.Fatalf("cwd = %q, want %q", s.Process.Cwd, tt.want)
			}
		})
	}

	in := testInput(t)
	in.Config.TTY = true
	in.Config.Security.NoNewPrivs = true
	in.Config.Security.ReadonlyRootfs = true
	in.Config.Resources.OOMScoreAdj = 999
	in.Config.Env = []string{"FOO=bar"}
	in.Pod.Hostname = "pod-host"
	s := mustBuild(t, in)
	p := s.Process
	if !p.Terminal || !p.NoNewPrivileges || p.OOMScoreAdj == nil || *p.OOMScoreAdj != 999 {
		t.Fatalf("process = %+v", p)
	}
	if !slices.Equal(p.Args, []string{"sleep", "inf"}) {
		t.Fatalf("args = %q", p.Args)
	}
	if !slices.Equal(p.Env, []string{"PATH=/bin:/usr/bin", "TERM=xterm", "HOSTNAME=pod-host", "FOO=bar"}) {
		t.Fatalf("env = %q", p.Env)
	}
	if len(p.Rlimits) != 0 || p.ApparmorProfile != "" || s.Hostname != "" || s.Hooks != nil {
		t.Fatalf("unexpected rlimits/apparmor/hostname/hooks in %+v", s)
	}
	if s.Root.Path != in.Rootfs || !s.Root.Readonly {
		t.Fatalf("root = %+v", s.Root)
	}
	if s.Linux.CgroupsPath != "/minicri/pod1/ctr1" {
		t.Fatalf("cgroups path = %q", s.Linux.CgroupsPath)
	}
	if s.Linux.Sysctl != nil || s.Linux.UIDMappings != nil || s.Linux.RootfsPropagation != "" {
		t.Fatalf("unexpected sysctl/userns/propagation in %+v", s.Linux)
	}
}

func TestBuildSpecAnnotations(t *testing.T) {
	in := testInput(t)
	in.Config.Annotations = map[string]string{"a": "b", AnnotationContainerType: "spoofed"}
	s := mustBuild(t, in)
	want := map[string]string{
		"a":                     "b",
		AnnotationContainerType: "container",
		AnnotationSandboxID:     "pod1",
		AnnotationContainerName: "app",
		AnnotationImageName:     "docker.io/library/busybox:latest",
	}
	if len(s.Annotations) != len(want) {
		t.Fatalf("annotations = %v, want %v", s.Annotations, want)
	}
	for k, v := range want {
		if s.Annotations[k] != v {
			t.Fatalf("annotation %s = %q, want %q", k, s.Annotations[k], v)
		}
	}
}

func TestBuildSpecNamespaces(t *testing.T) {
	pod := func(typ specs.LinuxNamespaceType) specs.LinuxNamespace {
		kind := map[specs.LinuxNamespaceType]string{specs.PIDNamespace: "pid", specs.IPCNamespace: "ipc", specs.UTSNamespace: "uts"}[typ]
		return specs.LinuxNamespace{Type: typ, Path: "/proc/4242/ns/" + kind}
	}
	mnt := specs.LinuxNamespace{Type: specs.MountNamespace}
	net := specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: "/run/netns/pod1"}
	tests := []struct {
		name    string
		mode    NamespaceMode
		hostNet bool
		hostIPC bool
		target  int
		want    []specs.LinuxNamespace
		invalid bool
	}{
		{name: "pod", mode: ModePod, want: []specs.LinuxNamespace{pod(specs.PIDNamespace), pod(specs.IPCNamespace), pod(specs.UTSNamespace), mnt, net}},
		{name: "container", mode: ModeContainer, want: []specs.LinuxNamespace{{Type: specs.PIDNamespace}, pod(specs.IPCNamespace), pod(specs.UTSNamespace), mnt, net}},
		{name: "node", mode: ModeNode, want: []specs.LinuxNamespace{pod(specs.IPCNamespace), pod(specs.UTSNamespace), mnt, net}},
		{name: "target", mode: ModeTarget, target: 777, want: []specs.LinuxNamespace{{Type: specs.PIDNamespace, Path: "/proc/777/ns/pid"}, pod(specs.IPCNamespace), pod(specs.UTSNamespace), mnt, net}},
		{name: "target not running", mode: ModeTarget, invalid: true},
		{name: "host network", mode: ModePod, hostNet: true, want: []specs.LinuxNamespace{pod(specs.PIDNamespace), pod(specs.IPCNamespace), mnt}},
		{name: "host IPC", mode: ModePod, hostIPC: true, want: []specs.LinuxNamespace{pod(specs.PIDNamespace), pod(specs.UTSNamespace), mnt, net}},
		{name: "all host", mode: ModeNode, hostNet: true, hostIPC: true, want: []specs.LinuxNamespace{mnt}},
		{name: "unknown mode", mode: NamespaceMode(9), invalid: true},
	}
	defer stubCgroupUnified(false)()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := testInput(t)
			in.Config.Security.PID = tt.mode
			in.TargetPID = tt.target
			in.Pod.HostIPC = tt.hostIPC
			if tt.hostNet {
				in.Pod.NetNSPath = ""
			}
			s, err := BuildSpec(in)
			if tt.invalid {
				wantInvalid(t, err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(s.Linux.Namespaces, tt.want) {
				t.Fatalf("namespaces = %+v, want %+v", s.Linux.Namespaces, tt.want)
			}
		})
	}
}

func TestBuildSpecCgroupNamespace(t *testing.T) {
	defer stubCgroupUnified(true)()
	in := testInput(t)
	s := mustBuild(t, in)
	if !slices.Contains(s.Linux.Namespaces, specs.LinuxNamespace{Type: specs.CgroupNamespace}) {
		t.Fatalf("cgroup v2: no cgroup namespace in %+v", s.Linux.Namespaces)
	}
	in.Config.Security.Privileged = true
	s = mustBuild(t, in)
	if slices.ContainsFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.CgroupNamespace }) {
		t.Fatalf("privileged: cgroup namespace in %+v", s.Linux.Namespaces)
	}
}

func TestBuildSpecRootfsMustBeAbsolute(t *testing.T) {
	in := testInput(t)
	in.Rootfs = "relative/rootfs"
	if _, err := BuildSpec(in); err == nil {
		t.Fatal("no error for a relative rootfs")
	}
}

// stubCgroupUnified makes the host look like cgroup v2 (or v1) and returns
// the undo.
func stubCgroupUnified(v bool) func() {
	old := cgroupUnified
	cgroupUnified = func() bool { return v }
	return func() { cgroupUnified = old }
}

package server

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// The capabilities the fuzzed daemon holds: all but two, so that "ALL" and
// privileged have something they must not grant.
var fuzzHostCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER", "CAP_FSETID", "CAP_KILL",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETPCAP", "CAP_LINUX_IMMUTABLE", "CAP_NET_BIND_SERVICE",
	"CAP_NET_BROADCAST", "CAP_NET_ADMIN", "CAP_NET_RAW", "CAP_IPC_LOCK", "CAP_IPC_OWNER",
	"CAP_SYS_RAWIO", "CAP_SYS_CHROOT", "CAP_SYS_PTRACE", "CAP_SYS_PACCT", "CAP_SYS_ADMIN",
	"CAP_SYS_BOOT", "CAP_SYS_NICE", "CAP_SYS_TIME", "CAP_SYS_TTY_CONFIG", "CAP_MKNOD", "CAP_LEASE",
	"CAP_AUDIT_WRITE", "CAP_AUDIT_CONTROL", "CAP_SETFCAP", "CAP_MAC_OVERRIDE", "CAP_MAC_ADMIN",
	"CAP_SYSLOG", "CAP_WAKE_ALARM", "CAP_BLOCK_SUSPEND", "CAP_AUDIT_READ", "CAP_PERFMON", "CAP_BPF",
	"CAP_CHECKPOINT_RESTORE",
	// Not held: CAP_SYS_MODULE, CAP_SYS_RESOURCE.
}

// Docker's default capabilities (containerd's defaultUnixCaps).
var fuzzDefaultCaps = []string{
	"CAP_CHOWN", "CAP_DAC_OVERRIDE", "CAP_FSETID", "CAP_FOWNER", "CAP_MKNOD", "CAP_NET_RAW",
	"CAP_SETGID", "CAP_SETUID", "CAP_SETFCAP", "CAP_SETPCAP", "CAP_NET_BIND_SERVICE",
	"CAP_SYS_CHROOT", "CAP_KILL", "CAP_AUDIT_WRITE",
}

const (
	fuzzPausePID  = 4242
	fuzzTargetPID = 4343
)

// FuzzContainerSpec: a CreateContainer request (ContainerConfig) in a pod
// (PodSandboxConfig), both as protobuf bytes, goes through the server's
// translation and container.BuildSpec without a panic, and every spec it
// accepts keeps the promises isolation rests on: no capability beyond the
// defaults, the request's adds and (for privileged or "ALL") the daemon's
// own; drops honoured; one new mount namespace and the pod's namespaces;
// bind sources only where the request or the pod points; default mounts
// nosuid and read-only sysfs/cgroupfs unless privileged; default masked
// paths and seccomp unless asked otherwise; minicri's annotations not
// overridable; the requested user.
//
// Every host path in the request is confined to a temporary directory (the
// builder creates missing bind sources, as containerd does), device paths
// to /dev.
func FuzzContainerSpec(f *testing.F) {
	for _, s := range specFuzzSeeds() {
		cb, err := proto.Marshal(s.ctr)
		if err != nil {
			f.Fatal(err)
		}
		pb, err := proto.Marshal(s.pod)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(cb, pb)
	}
	f.Fuzz(func(t *testing.T, ctrBytes, podBytes []byte) {
		var ctr runtimeapi.ContainerConfig
		var pod runtimeapi.PodSandboxConfig
		if proto.Unmarshal(ctrBytes, &ctr) != nil || proto.Unmarshal(podBytes, &pod) != nil {
			return
		}
		fx := newSpecFixture(t)
		in := fx.input(t, containerConfig(&ctr), sandboxConfig(&pod, ""))
		s, err := container.BuildSpec(in)
		if err != nil {
			if s != nil {
				t.Fatalf("BuildSpec returned a spec and an error: %v", err)
			}
			return
		}
		if err := checkSpec(fx, &in, s); err != nil {
			t.Fatal(err)
		}
	})
}

// specFixture is a fake pod and rootfs in a temporary directory.
type specFixture struct {
	dir      string // confined host root: request host paths land here
	realDir  string // dir without symlinks
	rootfs   string
	podFiles []string
	shm      string
}

func newSpecFixture(t *testing.T) *specFixture {
	tmp := t.TempDir()
	real, err := filepath.EvalSymlinks(tmp)
	if err != nil {
		t.Fatal(err)
	}
	fx := &specFixture{dir: filepath.Join(real, "host"), realDir: real, rootfs: filepath.Join(real, "rootfs")}
	write := func(p, data string) {
		if err := os.MkdirAll(filepath.Dir(p), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	write(filepath.Join(fx.rootfs, "etc/passwd"), "root:x:0:0:root:/root:/bin/sh\nalice:x:1000:1000::/home/alice:/bin/sh\n")
	write(filepath.Join(fx.rootfs, "etc/group"), "root:x:0:\nwheel:x:10:alice\nalice:x:1000:\n")
	for _, n := range []string{"hostname", "hosts", "resolv.conf"} {
		p := filepath.Join(real, "pod", n)
		write(p, n+"\n")
		fx.podFiles = append(fx.podFiles, p)
	}
	fx.shm = filepath.Join(real, "pod", "shm")
	if err := os.Mkdir(fx.shm, 0o700); err != nil {
		t.Fatal(err)
	}
	// A Localhost seccomp profile the seeds name as "/profile.json".
	write(filepath.Join(fx.dir, "profile.json"), `{"defaultAction":"SCMP_ACT_ERRNO","syscalls":[{"names":["read","write","exit_group"],"action":"SCMP_ACT_ALLOW"}]}`)
	return fx
}

// confine maps a host path from the request into the fixture's host root.
func (fx *specFixture) confine(p string) string {
	if p == "" {
		return ""
	}
	return filepath.Join(fx.dir, filepath.Clean("/"+p))
}

// input builds BuildSpec's input the way CreateContainer does (the pod
// side as daemon/wiring.go's Pod), with host paths confined.
func (fx *specFixture) input(t *testing.T, cfg container.Config, pc sandbox.Config) container.SpecInput {
	t.Helper()
	cfg.Mounts = slices.Clone(cfg.Mounts)
	for i := range cfg.Mounts {
		cfg.Mounts[i].HostPath = fx.confine(cfg.Mounts[i].HostPath)
	}
	cfg.Devices = slices.Clone(cfg.Devices)
	for i := range cfg.Devices {
		// Only host devices: no walk of the host's filesystem.
		if d := filepath.Clean("/" + cfg.Devices[i].HostPath); d != "/dev" && !strings.HasPrefix(d, "/dev/") {
			cfg.Devices[i].HostPath = fx.confine(d)
		}
	}
	if p := &cfg.Security.Seccomp; p.Path != "" {
		p.Path = fx.confine(strings.TrimPrefix(p.Path, "localhost/"))
	}
	ns := pc.Namespaces
	pod := container.PodInfo{
		ID:             "pod1",
		PausePID:       fuzzPausePID,
		HostIPC:        ns.IPC == sandbox.ModeNode,
		HostPID:        ns.PID == sandbox.ModeNode,
		HostnameFile:   fx.podFiles[0],
		HostsFile:      fx.podFiles[1],
		ResolvConfFile: fx.podFiles[2],
		ShmPath:        fx.shm,
		CgroupPath:     "/kubepods/pod1",
		Sysctls:        pc.Sysctls,
		Ready:          true,
	}
	if ns.Network != sandbox.ModeNode {
		pod.NetNSPath = "/run/netns/pod1"
	}
	if ns.OwnUserNS() {
		pod.UserNS = &container.IDMappings{UIDs: ns.UserNS.UIDs, GIDs: ns.UserNS.GIDs}
	}
	in := container.SpecInput{
		ID:          "ctr1",
		Config:      cfg,
		Image:       container.ImageConfig{Cmd: []string{"/bin/sh"}, User: "alice"},
		Rootfs:      fx.rootfs,
		Pod:         pod,
		CgroupsPath: "/kubepods/pod1/ctr1",
		HostCaps:    fuzzHostCaps,
	}
	if cfg.Security.PID == container.ModeTarget {
		in.TargetPID = fuzzTargetPID
	}
	return in
}

func checkSpec(fx *specFixture, in *container.SpecInput, s *specs.Spec) error {
	if s.Process == nil || s.Linux == nil || s.Root == nil {
		return fmt.Errorf("incomplete spec: process %v linux %v root %v", s.Process, s.Linux, s.Root)
	}
	if s.Root.Path != in.Rootfs {
		return fmt.Errorf("root %q, want %q", s.Root.Path, in.Rootfs)
	}
	if len(s.Process.Args) == 0 || !filepath.IsAbs(s.Process.Cwd) {
		return fmt.Errorf("args %q, cwd %q", s.Process.Args, s.Process.Cwd)
	}
	for _, check := range []func() error{
		func() error { return checkCapabilities(&in.Config.Security, s.Process.Capabilities) },
		func() error { return checkNamespaces(in, s) },
		func() error { return checkMounts(fx, in, s.Mounts) },
		func() error { return checkConfinement(in, s) },
		func() error { return checkUser(&in.Config.Security, s.Process.User) },
	} {
		if err := check(); err != nil {
			return err
		}
	}
	for k, want := range map[string]string{
		container.AnnotationSandboxID:     in.Pod.ID,
		container.AnnotationContainerName: in.Config.Name,
		container.AnnotationImageName:     in.Config.Image,
		container.AnnotationContainerType: "container",
	} {
		if got := s.Annotations[k]; got != want {
			return fmt.Errorf("annotation %s = %q, want %q (a request annotation must not override it)", k, got, want)
		}
	}
	return nil
}

func normCap(c string) string {
	n := strings.ToUpper(strings.TrimSpace(c))
	if !strings.HasPrefix(n, "CAP_") {
		n = "CAP_" + n
	}
	return n
}

func isAllCap(c string) bool { n := normCap(c); return n == "CAP_ALL" }

// checkCapabilities: bounding = effective = permitted, all of it either a
// default, requested or (privileged / add ALL) held by the daemon; no
// dropped capability; ambient only what was asked and is permitted.
func checkCapabilities(sec *container.Security, c *specs.LinuxCapabilities) error {
	if c == nil {
		return errors.New("no capabilities in the spec")
	}
	if !slices.Equal(c.Bounding, c.Effective) || !slices.Equal(c.Bounding, c.Permitted) {
		return fmt.Errorf("bounding %q, effective %q, permitted %q differ", c.Bounding, c.Effective, c.Permitted)
	}
	allowed := map[string]bool{}
	add := func(cs []string) {
		for _, x := range cs {
			allowed[normCap(x)] = true
		}
	}
	addAll := slices.ContainsFunc(sec.CapAdd, isAllCap)
	dropAll := slices.ContainsFunc(sec.CapDrop, isAllCap)
	switch {
	case sec.Privileged:
		add(fuzzHostCaps)
	default:
		if !dropAll {
			if addAll {
				add(fuzzHostCaps)
			} else {
				add(fuzzDefaultCaps)
			}
		}
		for _, x := range sec.CapAdd {
			if !isAllCap(x) {
				allowed[normCap(x)] = true
			}
		}
		for _, x := range sec.CapDrop {
			if !isAllCap(x) {
				delete(allowed, normCap(x))
			}
		}
	}
	for _, x := range c.Bounding {
		if !allowed[x] {
			return fmt.Errorf("capability %s granted but not requested (privileged=%v add=%q drop=%q)",
				x, sec.Privileged, sec.CapAdd, sec.CapDrop)
		}
	}
	asked := map[string]bool{}
	for _, x := range sec.AmbientAdd {
		asked[normCap(x)] = true
	}
	for _, x := range c.Ambient {
		if !asked[x] || !slices.Contains(c.Permitted, x) {
			return fmt.Errorf("ambient capability %s not asked for or not permitted", x)
		}
	}
	if !slices.Equal(c.Inheritable, c.Ambient) {
		return fmt.Errorf("inheritable %q differs from ambient %q", c.Inheritable, c.Ambient)
	}
	return nil
}

// checkNamespaces: a new mount namespace, no type twice, and the pod's
// namespaces as the pod and the request say.
func checkNamespaces(in *container.SpecInput, s *specs.Spec) error {
	got := map[specs.LinuxNamespaceType]string{}
	for _, ns := range s.Linux.Namespaces {
		if _, dup := got[ns.Type]; dup {
			return fmt.Errorf("namespace %s twice", ns.Type)
		}
		got[ns.Type] = ns.Path
	}
	pause := func(kind string) string { return fmt.Sprintf("/proc/%d/ns/%s", fuzzPausePID, kind) }
	want := map[specs.LinuxNamespaceType]string{specs.MountNamespace: ""}
	switch in.Config.Security.PID {
	case container.ModePod:
		want[specs.PIDNamespace] = pause("pid")
	case container.ModeContainer:
		want[specs.PIDNamespace] = ""
	case container.ModeTarget:
		want[specs.PIDNamespace] = fmt.Sprintf("/proc/%d/ns/pid", fuzzTargetPID)
	}
	if !in.Pod.HostIPC {
		want[specs.IPCNamespace] = pause("ipc")
	}
	if in.Pod.NetNSPath != "" {
		want[specs.NetworkNamespace] = in.Pod.NetNSPath
		want[specs.UTSNamespace] = pause("uts")
	}
	if in.Pod.UserNS != nil {
		want[specs.UserNamespace] = pause("user")
	}
	for typ, p := range want {
		if gp, ok := got[typ]; !ok || gp != p {
			return fmt.Errorf("namespace %s: got %q (present %v), want %q; all: %v", typ, gp, ok, p, s.Linux.Namespaces)
		}
	}
	for typ := range got {
		if _, ok := want[typ]; !ok && typ != specs.CgroupNamespace {
			return fmt.Errorf("unexpected namespace %s in %v", typ, s.Linux.Namespaces)
		}
	}
	return nil
}

var defaultMountTypes = map[string]bool{"proc": true, "tmpfs": true, "devpts": true, "mqueue": true, "sysfs": true, "cgroup": true}

// checkMounts: absolute destinations; binds only from the confined host
// root, the pod's files or the host's /dev/shm, with one propagation and
// one access mode, read-only when asked; other mounts are the defaults,
// nosuid, sysfs and cgroupfs read-only unless privileged.
func checkMounts(fx *specFixture, in *container.SpecInput, mounts []specs.Mount) error {
	priv := in.Config.Security.Privileged
	readonlyDst := map[string]bool{}
	for _, m := range in.Config.Mounts {
		if m.Readonly {
			readonlyDst[m.ContainerPath] = true
		}
	}
	for _, m := range mounts {
		if !filepath.IsAbs(m.Destination) {
			return fmt.Errorf("mount destination %q is not absolute", m.Destination)
		}
		if m.Type != "bind" {
			if !defaultMountTypes[m.Type] {
				return fmt.Errorf("unexpected %s mount at %s", m.Type, m.Destination)
			}
			if !slices.Contains(m.Options, "nosuid") {
				return fmt.Errorf("%s mount at %s without nosuid: %q", m.Type, m.Destination, m.Options)
			}
			if !priv && (m.Type == "sysfs" || m.Type == "cgroup") && !slices.Contains(m.Options, "ro") {
				return fmt.Errorf("%s writable in an unprivileged container: %q", m.Type, m.Options)
			}
			continue
		}
		src := m.Source
		if src != "/dev/shm" && !strings.HasPrefix(src, fx.realDir+"/") {
			return fmt.Errorf("bind mount of %q at %q: not from the request or the pod", src, m.Destination)
		}
		count := func(opts ...string) int {
			n := 0
			for _, o := range opts {
				if slices.Contains(m.Options, o) {
					n++
				}
			}
			return n
		}
		if count("rbind") != 1 || count("rprivate", "rslave", "rshared") != 1 || count("ro", "rw", "rro") != 1 {
			return fmt.Errorf("bind mount at %s: options %q", m.Destination, m.Options)
		}
		if readonlyDst[m.Destination] && count("ro", "rro") != 1 {
			return fmt.Errorf("read-only bind mount at %s is writable: %q", m.Destination, m.Options)
		}
	}
	return nil
}

// checkConfinement: the requested masked and read-only paths (exactly,
// as containerd) and seccomp profile apply unless the request is privileged;
// without a pod user namespace, none requested is the defaults (never a
// writable /proc/sys).
func checkConfinement(in *container.SpecInput, s *specs.Spec) error {
	sec := &in.Config.Security
	if sec.Privileged {
		if s.Linux.Seccomp != nil {
			return errors.New("privileged container with a seccomp profile")
		}
		return nil
	}
	ownUserNS := in.Pod.UserNS != nil
	switch {
	case len(sec.MaskedPaths) == 0 && !ownUserNS:
		if !slices.Contains(s.Linux.MaskedPaths, "/proc/kcore") {
			return fmt.Errorf("default masked paths missing: %q", s.Linux.MaskedPaths)
		}
	case !slices.Equal(sec.MaskedPaths, s.Linux.MaskedPaths):
		return fmt.Errorf("masked paths %q, requested %q", s.Linux.MaskedPaths, sec.MaskedPaths)
	}
	switch {
	case len(sec.ReadonlyPaths) == 0 && !ownUserNS:
		if !slices.Contains(s.Linux.ReadonlyPaths, "/proc/sys") {
			return fmt.Errorf("default read-only paths missing: %q", s.Linux.ReadonlyPaths)
		}
	case !slices.Equal(sec.ReadonlyPaths, s.Linux.ReadonlyPaths):
		return fmt.Errorf("read-only paths %q, requested %q", s.Linux.ReadonlyPaths, sec.ReadonlyPaths)
	}
	if sec.Seccomp.Type != container.ProfileUnconfined && s.Linux.Seccomp == nil {
		return fmt.Errorf("no seccomp profile for type %d", sec.Seccomp.Type)
	}
	return nil
}

// checkUser: a numeric RunAsUser / RunAsGroup is the process's.
func checkUser(sec *container.Security, u specs.User) error {
	if sec.RunAsUsername == "" && sec.RunAsUser != nil && int64(u.UID) != *sec.RunAsUser {
		return fmt.Errorf("uid %d, want run_as_user %d", u.UID, *sec.RunAsUser)
	}
	if sec.RunAsGroup != nil && int64(u.GID) != *sec.RunAsGroup {
		return fmt.Errorf("gid %d, want run_as_group %d", u.GID, *sec.RunAsGroup)
	}
	for _, g := range sec.SupplementalGroups {
		if !slices.Contains(u.AdditionalGids, uint32(g)) {
			return fmt.Errorf("supplemental group %d missing from %v", g, u.AdditionalGids)
		}
	}
	return nil
}

type specFuzzSeed struct {
	ctr *runtimeapi.ContainerConfig
	pod *runtimeapi.PodSandboxConfig
}

// specFuzzSeeds are requests as the kubelet and critest send them.
func specFuzzSeeds() []specFuzzSeed {
	pod := func(mod func(*runtimeapi.LinuxSandboxSecurityContext)) *runtimeapi.PodSandboxConfig {
		sc := &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{}}
		if mod != nil {
			mod(sc)
		}
		return &runtimeapi.PodSandboxConfig{
			Metadata:     &runtimeapi.PodSandboxMetadata{Name: "p", Uid: "u1", Namespace: "default"},
			LogDirectory: "/var/log/pods/default_p_u1",
			Linux:        &runtimeapi.LinuxPodSandboxConfig{CgroupParent: "/kubepods/pod1", SecurityContext: sc},
		}
	}
	ctr := func(mod func(*runtimeapi.ContainerConfig)) *runtimeapi.ContainerConfig {
		c := &runtimeapi.ContainerConfig{
			Metadata: &runtimeapi.ContainerMetadata{Name: "app"},
			Image:    &runtimeapi.ImageSpec{Image: "docker.io/library/busybox:latest"},
			Command:  []string{"sleep", "inf"},
			LogPath:  "app/0.log",
			Linux: &runtimeapi.LinuxContainerConfig{
				Resources: &runtimeapi.LinuxContainerResources{CpuShares: 2, MemoryLimitInBytes: 64 << 20, OomScoreAdj: 1000},
				SecurityContext: &runtimeapi.LinuxContainerSecurityContext{
					NamespaceOptions: &runtimeapi.NamespaceOption{},
					Seccomp:          &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_RuntimeDefault},
					// What the kubelet sends for procMount Default.
					MaskedPaths:   []string{"/proc/kcore", "/proc/keys", "/sys/firmware"},
					ReadonlyPaths: []string{"/proc/sys", "/proc/sysrq-trigger"},
				},
			},
		}
		if mod != nil {
			mod(c)
		}
		return c
	}
	uid := func(v int64) *runtimeapi.Int64Value { return &runtimeapi.Int64Value{Value: v} }
	return []specFuzzSeed{
		{ctr(nil), pod(nil)},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			sc := c.Linux.SecurityContext
			sc.Capabilities = &runtimeapi.Capability{
				AddCapabilities:        []string{"NET_ADMIN", "cap_sys_ptrace"},
				DropCapabilities:       []string{"MKNOD", "CAP_NET_RAW"},
				AddAmbientCapabilities: []string{"CAP_NET_ADMIN", "SYS_TIME"},
			}
			sc.RunAsUser, sc.RunAsGroup = uid(1000), uid(1000)
			sc.SupplementalGroups = []int64{10, 2000}
			sc.ReadonlyRootfs, sc.NoNewPrivs = true, true
			c.Envs = []*runtimeapi.KeyValue{{Key: "A", Value: []byte("1")}, {Key: "PATH", Value: []byte("/bin")}}
			c.WorkingDir = "/tmp"
		}), pod(nil)},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{
				AddCapabilities: []string{"ALL"}, DropCapabilities: []string{"SYS_ADMIN"},
			}
		}), pod(nil)},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Capabilities = &runtimeapi.Capability{
				AddCapabilities: []string{"CHOWN"}, DropCapabilities: []string{"ALL"},
			}
		}), pod(nil)},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Privileged = true
			c.Mounts = []*runtimeapi.Mount{{ContainerPath: "/host", HostPath: "/", Propagation: runtimeapi.MountPropagation_PROPAGATION_PRIVATE}}
		}), pod(func(sc *runtimeapi.LinuxSandboxSecurityContext) {
			sc.Privileged = true
			sc.NamespaceOptions = &runtimeapi.NamespaceOption{Network: runtimeapi.NamespaceMode_NODE, Pid: runtimeapi.NamespaceMode_NODE, Ipc: runtimeapi.NamespaceMode_NODE}
		})},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			c.Mounts = []*runtimeapi.Mount{
				{ContainerPath: "/data", HostPath: "/var/lib/kubelet/pods/u1/volumes/empty-dir/data"},
				{ContainerPath: "/etc/config", HostPath: "/var/lib/kubelet/pods/u1/volumes/configmap/cfg", Readonly: true, RecursiveReadOnly: true},
				{ContainerPath: "/etc/hosts", HostPath: "/var/lib/kubelet/pods/u1/etc-hosts"},
				{ContainerPath: "/dev/termination-log", HostPath: "/var/lib/kubelet/pods/u1/containers/app/0"},
				{ContainerPath: "/mnt/../proc", HostPath: "../../../etc", Readonly: true},
			}
			c.Devices = []*runtimeapi.Device{{ContainerPath: "/dev/mynull", HostPath: "/dev/null", Permissions: "rw"}}
		}), pod(nil)},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			sc := c.Linux.SecurityContext
			sc.NamespaceOptions = &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_TARGET, TargetId: "other"}
			sc.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost, LocalhostRef: "/profile.json"}
			sc.MaskedPaths, sc.ReadonlyPaths = []string{}, []string{"/proc/sys"}
			sc.RunAsUsername = "alice"
		}), pod(func(sc *runtimeapi.LinuxSandboxSecurityContext) {
			sc.NamespaceOptions.UsernsOptions = &runtimeapi.UserNamespace{
				Mode: runtimeapi.NamespaceMode_POD,
				Uids: []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 65536, Length: 65536}},
				Gids: []*runtimeapi.IDMapping{{ContainerId: 0, HostId: 65536, Length: 65536}},
			}
		})},
		{ctr(func(c *runtimeapi.ContainerConfig) {
			c.Linux.SecurityContext.Seccomp = &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined}
			c.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_CONTAINER
			c.Annotations = map[string]string{container.AnnotationSandboxID: "evil", "x": "y"}
			c.Tty = true
		}), pod(func(sc *runtimeapi.LinuxSandboxSecurityContext) {
			sc.NamespaceOptions.Ipc = runtimeapi.NamespaceMode_NODE
		})},
	}
}

// TestSpecFuzzChecksCatchViolations: the checks FuzzContainerSpec relies on
// fail on a spec that breaks each promise.
func TestSpecFuzzChecksCatchViolations(t *testing.T) {
	seed := specFuzzSeeds()[0]
	fx := newSpecFixture(t)
	in := fx.input(t, containerConfig(seed.ctr), sandboxConfig(seed.pod, ""))
	for name, breakIt := range map[string]func(*specs.Spec){
		"extra capability": func(s *specs.Spec) {
			for _, l := range []*[]string{&s.Process.Capabilities.Bounding, &s.Process.Capabilities.Effective, &s.Process.Capabilities.Permitted} {
				*l = append(*l, "CAP_SYS_ADMIN")
			}
		},
		"no mount namespace": func(s *specs.Spec) {
			s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.MountNamespace })
		},
		"host PID namespace": func(s *specs.Spec) {
			s.Linux.Namespaces = slices.DeleteFunc(s.Linux.Namespaces, func(n specs.LinuxNamespace) bool { return n.Type == specs.PIDNamespace })
		},
		"foreign bind": func(s *specs.Spec) {
			s.Mounts = append(s.Mounts, specs.Mount{Destination: "/x", Source: "/etc", Type: "bind", Options: []string{"rbind", "rprivate", "rw"}})
		},
		"writable sysfs": func(s *specs.Spec) {
			for i := range s.Mounts {
				if s.Mounts[i].Type == "sysfs" {
					s.Mounts[i].Options = slices.DeleteFunc(s.Mounts[i].Options, func(o string) bool { return o == "ro" })
				}
			}
		},
		"no seccomp":         func(s *specs.Spec) { s.Linux.Seccomp = nil },
		"no masked paths":    func(s *specs.Spec) { s.Linux.MaskedPaths = nil },
		"overridden sandbox": func(s *specs.Spec) { s.Annotations[container.AnnotationSandboxID] = "evil" },
	} {
		s, err := container.BuildSpec(in)
		if err != nil {
			t.Fatal(err)
		}
		breakIt(s)
		if checkSpec(fx, &in, s) == nil {
			t.Errorf("%s: the checks pass a broken spec", name)
		}
	}
}

package container

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/devices"
	"github.com/minicri/minicri/security"
	"github.com/minicri/minicri/user"
)

// Annotations minicri puts on every container spec (containerd's names).
const (
	AnnotationContainerType = "io.kubernetes.cri.container-type"
	AnnotationSandboxID     = "io.kubernetes.cri.sandbox-id"
	AnnotationContainerName = "io.kubernetes.cri.container-name"
	AnnotationImageName     = "io.kubernetes.cri.image-name"

	containerTypeContainer = "container"
)

// defaultPathEnv is set when neither the image nor the request sets PATH.
const defaultPathEnv = "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"

// SpecInput is everything BuildSpec needs.
type SpecInput struct {
	ID     string
	Config Config
	Image  ImageConfig
	// Rootfs is the container's mounted rootfs (absolute, no symlinks). Its
	// /etc/passwd and /etc/group resolve user and group names.
	Rootfs string
	Pod    PodInfo
	// CgroupsPath is the container's cgroup path in cgdriver's notation,
	// beside its pod's pause: <parent>/<container id>, or under systemd
	// <parent slice>:minicri:<container id>.
	CgroupsPath string
	// TargetPID is the PID of the target container's init when
	// Security.PID == ModeTarget.
	TargetPID int
	// HostCaps are the capabilities minicri holds (see
	// security.HostCapabilities):
	// what a privileged container, or "add ALL", gets.
	HostCaps []string
	// AppArmor is the host's AppArmor; nil means none.
	AppArmor AppArmor
}

// BuildSpec turns a container request into the OCI runtime spec that
// containerd's CRI plugin would produce, for runc's libcontainer to run.
// Errors caused by the request wrap ErrInvalid.
//
// It reads the host: the rootfs's /etc/passwd and /etc/group, the host
// paths of mounts (creating missing ones as directories, as containerd
// does), device nodes, /proc/self/mountinfo, cgroup facts, Localhost
// seccomp profiles and the kernel's AppArmor profiles.
func BuildSpec(in SpecInput) (*specs.Spec, error) {
	if in.Rootfs == "" || !filepath.IsAbs(in.Rootfs) {
		return nil, fmt.Errorf("container rootfs %q is not an absolute path", in.Rootfs)
	}
	proc, err := buildProcess(&in)
	if err != nil {
		return nil, err
	}
	s := &specs.Spec{
		Version: specs.Version,
		Root:    &specs.Root{Path: in.Rootfs, Readonly: in.Config.Security.ReadonlyRootfs},
		Process: proc,
		// Hostname stays empty: the container joins the pause's UTS
		// namespace, where the pause has set it.
		Linux: &specs.Linux{CgroupsPath: in.CgroupsPath},
	}
	// Its cgroup namespace and /sys/fs/cgroup (containerd's rule by default:
	// a namespace of its own only on cgroup v2 and unprivileged).
	cg, err := cgroupView(&in.Config.Security)
	if err != nil {
		return nil, err
	}
	if err := specNamespaces(s, &in, cg.OwnNamespace); err != nil {
		return nil, err
	}
	if err := specMountsAndDevices(s, &in, cg.MountOptions); err != nil {
		return nil, err
	}
	// After the capabilities: the profile depends on them.
	if err := specConfinement(s, &in); err != nil {
		return nil, err
	}
	s.Annotations = buildAnnotations(&in.Config, in.Pod.ID)
	return s, nil
}

// buildProcess is the container's init: its arguments, working directory,
// user, capabilities, environment and OOM score.
func buildProcess(in *SpecInput) (*specs.Process, error) {
	cfg := &in.Config
	sec := &cfg.Security
	args, err := processArgs(cfg.Command, cfg.Args, in.Image)
	if err != nil {
		return nil, err
	}
	cwd := "/"
	if cfg.WorkingDir != "" {
		cwd = cfg.WorkingDir
	} else if in.Image.WorkingDir != "" {
		cwd = in.Image.WorkingDir
	}
	if !filepath.IsAbs(cwd) {
		return nil, fmt.Errorf("%w: working directory %q is not absolute", ErrInvalid, cwd)
	}
	usr, err := user.Resolve(in.Rootfs, userRequest(sec), in.Image.User)
	if err != nil {
		return nil, err
	}
	caps, err := security.Capabilities(&security.CapRequest{Privileged: sec.Privileged,
		CapAdd: sec.CapAdd, CapDrop: sec.CapDrop, AmbientAdd: sec.AmbientAdd}, in.HostCaps)
	if err != nil {
		return nil, err
	}
	oomScoreAdj := int(cfg.Resources.OOMScoreAdj)
	return &specs.Process{
		Terminal:        cfg.TTY,
		User:            usr,
		Args:            args,
		Env:             buildEnv(podHostname(&in.Pod), in.Image.Env, cfg.Env, cfg.TTY),
		Cwd:             cwd,
		Capabilities:    caps,
		NoNewPrivileges: sec.NoNewPrivs,
		OOMScoreAdj:     &oomScoreAdj,
	}, nil
}

// userRequest is what the request asks of the process's identity.
func userRequest(sec *Security) *user.Request {
	return &user.Request{RunAsUser: sec.RunAsUser, RunAsGroup: sec.RunAsGroup, RunAsUsername: sec.RunAsUsername,
		SupplementalGroups: sec.SupplementalGroups, SupplementalGroupsPolicy: sec.SupplementalGroupsPolicy}
}

// specNamespaces joins the pod's namespaces and maps its user namespace.
func specNamespaces(s *specs.Spec, in *SpecInput, cgroupNS bool) error {
	var err error
	s.Linux.Namespaces, err = buildNamespaces(in, cgroupNS)
	if err != nil {
		return err
	}
	if u := in.Pod.UserNS; u != nil {
		s.Linux.UIDMappings, s.Linux.GIDMappings = specIDMappings(u.UIDs), specIDMappings(u.GIDs)
	}
	return nil
}

// specMountsAndDevices is what the container sees of the host: its mounts,
// masked and read-only paths, devices and the resources (device rules among
// them) of its cgroup.
func specMountsAndDevices(s *specs.Spec, in *SpecInput, cgroupOptions []string) error {
	var err error
	s.Mounts, s.Linux.RootfsPropagation, err = buildMounts(in, cgroupOptions)
	if err != nil {
		return err
	}
	sec := &in.Config.Security
	s.Linux.MaskedPaths, s.Linux.ReadonlyPaths = security.MaskedAndReadonlyPaths(sec.Privileged, in.Pod.UserNS != nil,
		sec.MaskedPaths, sec.ReadonlyPaths)
	devs, rules, moved, err := devices.Build(in.Config.Devices, sec.Privileged)
	if err != nil {
		return err
	}
	if in.Pod.UserNS != nil {
		devs, s.Mounts = devices.BindMoved(devs, moved, s.Mounts)
	}
	s.Linux.Devices = devs
	s.Linux.Resources, err = buildResources(&in.Config.Resources, rules)
	return err
}

// specConfinement is the container's seccomp filter and AppArmor profile.
func specConfinement(s *specs.Spec, in *SpecInput) error {
	sec := &in.Config.Security
	var err error
	s.Linux.Seccomp, err = security.Seccomp(sec.Seccomp, sec.Privileged, s)
	if err != nil {
		return err
	}
	s.Process.ApparmorProfile, err = security.AppArmorProfile(sec.AppArmor, sec.Privileged, in.AppArmor)
	return err
}

// buildAnnotations are the request's annotations and containerd's own.
func buildAnnotations(cfg *Config, podID string) map[string]string {
	a := make(map[string]string, len(cfg.Annotations)+4)
	for k, v := range cfg.Annotations {
		a[k] = v
	}
	a[AnnotationSandboxID] = podID
	a[AnnotationContainerName] = cfg.Name
	a[AnnotationImageName] = annotatedImageName(cfg)
	a[AnnotationContainerType] = containerTypeContainer
	return a
}

// processArgs merges the request's command and args with the image's
// entrypoint and cmd the way the kubelet expects (containerd's
// WithProcessArgs, after Docker): a command replaces the entrypoint and
// drops the image's cmd; args alone replace the cmd.
func processArgs(command, args []string, img ImageConfig) ([]string, error) {
	command = slices.Clone(command)
	args = slices.Clone(args)
	if len(command) == 0 {
		if len(args) == 0 {
			args = slices.Clone(img.Cmd)
		}
		// An entrypoint of [""] is Docker's way to say "none".
		if len(img.Entrypoint) != 1 || img.Entrypoint[0] != "" {
			command = slices.Clone(img.Entrypoint)
		}
	}
	if len(command) == 0 && len(args) == 0 {
		return nil, fmt.Errorf("%w: no command specified", ErrInvalid)
	}
	return append(command, args...), nil
}

// buildEnv is containerd's environment: the default PATH (and TERM for a
// TTY), HOSTNAME (the pod's hostname), then the image's variables, then the
// request's, each replacing an earlier one with the same name in place. An
// entry without "=" unsets.
func buildEnv(hostname string, imageEnv, criEnv []string, tty bool) []string {
	env := []string{defaultPathEnv}
	if tty {
		env = append(env, "TERM=xterm")
	}
	env = append(env, hostnameEnv+"="+hostname)
	overrides := append(slices.Clone(imageEnv), criEnv...)
	return replaceOrAppendEnv(env, overrides)
}

// replaceOrAppendEnv is containerd's replaceOrAppendEnvValues.
func replaceOrAppendEnv(defaults, overrides []string) []string {
	index := make(map[string]int, len(defaults))
	results := make([]string, 0, len(defaults)+len(overrides))
	for i, e := range defaults {
		k, _, _ := strings.Cut(e, "=")
		results = append(results, e)
		index[k] = i
	}
	for _, v := range overrides {
		k, _, ok := strings.Cut(v, "=")
		if !ok {
			if i, exists := index[k]; exists {
				results[i] = "" // removed below
			}
			continue
		}
		if i, exists := index[k]; exists {
			results[i] = v
		} else {
			index[k] = len(results)
			results = append(results, v)
		}
	}
	return slices.DeleteFunc(results, func(e string) bool { return e == "" })
}

// buildNamespaces joins the pod's namespaces (containerd's
// WithPodNamespaces): a new mount namespace; the pod's network namespace
// (the host's when the pod has none); the pause's IPC and UTS namespaces
// (the host's with host IPC, resp. host network); and the PID namespace
// the request asks for.
func buildNamespaces(in *SpecInput, cgroupNS bool) ([]specs.LinuxNamespace, error) {
	pod := &in.Pod
	pausePath := func(kind string) (string, error) {
		if pod.PausePID <= 0 {
			return "", fmt.Errorf("pod %s has no pause process to join its %s namespace", pod.ID, kind)
		}
		return fmt.Sprintf("/proc/%d/ns/%s", pod.PausePID, kind), nil
	}

	var ns []specs.LinuxNamespace
	switch in.Config.Security.PID {
	case ModePod:
		p, err := pausePath("pid")
		if err != nil {
			return nil, err
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: p})
	case ModeContainer:
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace})
	case ModeNode:
		// The host's: no namespace entry.
	case ModeTarget:
		if in.TargetPID <= 0 {
			return nil, fmt.Errorf("%w: target container %q of the PID namespace is not running", ErrInvalid, in.Config.Security.TargetID)
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.PIDNamespace, Path: fmt.Sprintf("/proc/%d/ns/pid", in.TargetPID)})
	default:
		return nil, fmt.Errorf("%w: unknown PID namespace mode %d", ErrInvalid, in.Config.Security.PID)
	}
	if !pod.HostIPC {
		p, err := pausePath("ipc")
		if err != nil {
			return nil, err
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.IPCNamespace, Path: p})
	}
	if pod.NetNSPath != "" {
		p, err := pausePath("uts")
		if err != nil {
			return nil, err
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.UTSNamespace, Path: p})
	}
	if pod.UserNS != nil {
		p, err := pausePath("user")
		if err != nil {
			return nil, err
		}
		ns = append(ns, specs.LinuxNamespace{Type: specs.UserNamespace, Path: p})
	}
	ns = append(ns, specs.LinuxNamespace{Type: specs.MountNamespace})
	if pod.NetNSPath != "" {
		ns = append(ns, specs.LinuxNamespace{Type: specs.NetworkNamespace, Path: pod.NetNSPath})
	}
	if cgroupNS {
		ns = append(ns, specs.LinuxNamespace{Type: specs.CgroupNamespace})
	}
	return ns, nil
}

func specIDMappings(m []IDMapping) []specs.LinuxIDMapping {
	out := make([]specs.LinuxIDMapping, len(m))
	for i, e := range m {
		out[i] = specs.LinuxIDMapping{ContainerID: e.ContainerID, HostID: e.HostID, Size: e.Length}
	}
	return out
}

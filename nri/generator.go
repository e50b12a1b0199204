package nri

import (
	"fmt"
	"slices"
	"strings"

	specs "github.com/opencontainers/runtime-spec/specs-go"
)

// specEditor edits an OCI spec in place for the nri library's generator
// (generate.UnderlyingGenerator): the subset of runtime-tools' generator it
// uses, with the same semantics (an env variable, device, hugepage limit or
// namespace of the same key is replaced; mounts are removed by
// destination).
type specEditor struct{ s *specs.Spec }

func (e specEditor) Spec() *specs.Spec { return e.s }

func (e specEditor) process() *specs.Process {
	if e.s.Process == nil {
		e.s.Process = &specs.Process{}
	}
	return e.s.Process
}

func (e specEditor) linux() *specs.Linux {
	if e.s.Linux == nil {
		e.s.Linux = &specs.Linux{}
	}
	return e.s.Linux
}

func (e specEditor) resources() *specs.LinuxResources {
	l := e.linux()
	if l.Resources == nil {
		l.Resources = &specs.LinuxResources{}
	}
	return l.Resources
}

func (e specEditor) cpu() *specs.LinuxCPU {
	r := e.resources()
	if r.CPU == nil {
		r.CPU = &specs.LinuxCPU{}
	}
	return r.CPU
}

func (e specEditor) memory() *specs.LinuxMemory {
	r := e.resources()
	if r.Memory == nil {
		r.Memory = &specs.LinuxMemory{}
	}
	return r.Memory
}

func (e specEditor) hooks() *specs.Hooks {
	if e.s.Hooks == nil {
		e.s.Hooks = &specs.Hooks{}
	}
	return e.s.Hooks
}

func (e specEditor) AddAnnotation(key, value string) {
	if e.s.Annotations == nil {
		e.s.Annotations = map[string]string{}
	}
	e.s.Annotations[key] = value
}

func (e specEditor) RemoveAnnotation(key string) { delete(e.s.Annotations, key) }

func (e specEditor) AddDevice(d specs.LinuxDevice) {
	l := e.linux()
	for i := range l.Devices {
		if l.Devices[i].Path == d.Path {
			l.Devices[i] = d
			return
		}
	}
	l.Devices = append(l.Devices, d)
}

func (e specEditor) RemoveDevice(path string) {
	if e.s.Linux == nil {
		return
	}
	e.s.Linux.Devices = slices.DeleteFunc(e.s.Linux.Devices, func(d specs.LinuxDevice) bool { return d.Path == path })
}

func (e specEditor) AddOrReplaceLinuxNamespace(ns, path string) error {
	l := e.linux()
	n := specs.LinuxNamespace{Type: specs.LinuxNamespaceType(ns), Path: path}
	for i := range l.Namespaces {
		if l.Namespaces[i].Type == n.Type {
			l.Namespaces[i] = n
			return nil
		}
	}
	l.Namespaces = append(l.Namespaces, n)
	return nil
}

func (e specEditor) RemoveLinuxNamespace(ns string) error {
	if e.s.Linux == nil {
		return nil
	}
	e.s.Linux.Namespaces = slices.DeleteFunc(e.s.Linux.Namespaces, func(n specs.LinuxNamespace) bool {
		return string(n.Type) == ns
	})
	return nil
}

//nolint:staticcheck // Prestart is deprecated, still what a plugin may ask for
func (e specEditor) AddPreStartHook(h specs.Hook) { e.hooks().Prestart = append(e.hooks().Prestart, h) }
func (e specEditor) AddPostStartHook(h specs.Hook) {
	e.hooks().Poststart = append(e.hooks().Poststart, h)
}
func (e specEditor) AddPostStopHook(h specs.Hook) { e.hooks().Poststop = append(e.hooks().Poststop, h) }

func (e specEditor) AddProcessEnv(name, value string) {
	p := e.process()
	kv := name + "=" + value
	for i, v := range p.Env {
		if k, _, _ := strings.Cut(v, "="); k == name {
			p.Env[i] = kv
			return
		}
	}
	p.Env = append(p.Env, kv)
}

func (e specEditor) ClearProcessEnv() {
	if e.s.Process != nil {
		e.s.Process.Env = nil
	}
}

func (e specEditor) SetProcessArgs(args []string) { e.process().Args = args }
func (e specEditor) SetProcessOOMScoreAdj(adj int) {
	e.process().OOMScoreAdj = &adj
}

func (e specEditor) AddLinuxResourcesDevice(allow bool, devType string, major, minor *int64, access string) {
	r := e.resources()
	r.Devices = append(r.Devices, specs.LinuxDeviceCgroup{Allow: allow, Type: devType, Major: major, Minor: minor, Access: access})
}

func (e specEditor) AddLinuxResourcesHugepageLimit(pageSize string, limit uint64) {
	r := e.resources()
	for i := range r.HugepageLimits {
		if r.HugepageLimits[i].Pagesize == pageSize {
			r.HugepageLimits[i].Limit = limit
			return
		}
	}
	r.HugepageLimits = append(r.HugepageLimits, specs.LinuxHugepageLimit{Pagesize: pageSize, Limit: limit})
}

func (e specEditor) AddLinuxResourcesUnified(key, val string) {
	r := e.resources()
	if r.Unified == nil {
		r.Unified = map[string]string{}
	}
	r.Unified[key] = val
}

func (e specEditor) AddLinuxSysctl(key, value string) {
	l := e.linux()
	if l.Sysctl == nil {
		l.Sysctl = map[string]string{}
	}
	l.Sysctl[key] = value
}

func (e specEditor) RemoveLinuxSysctl(key string) {
	if e.s.Linux != nil {
		delete(e.s.Linux.Sysctl, key)
	}
}

func (e specEditor) AddMount(m specs.Mount) { e.s.Mounts = append(e.s.Mounts, m) }
func (e specEditor) ClearMounts()           { e.s.Mounts = nil }
func (e specEditor) Mounts() []specs.Mount  { return slices.Clone(e.s.Mounts) }
func (e specEditor) RemoveMount(dest string) {
	e.s.Mounts = slices.DeleteFunc(e.s.Mounts, func(m specs.Mount) bool { return m.Destination == dest })
}

func (e specEditor) SetLinuxCgroupsPath(path string)   { e.linux().CgroupsPath = path }
func (e specEditor) SetLinuxResourcesCPUCpus(s string) { e.cpu().Cpus = s }
func (e specEditor) SetLinuxResourcesCPUMems(s string) { e.cpu().Mems = s }
func (e specEditor) SetLinuxResourcesCPUPeriod(v uint64) {
	e.cpu().Period = &v
}
func (e specEditor) SetLinuxResourcesCPUQuota(v int64) { e.cpu().Quota = &v }
func (e specEditor) SetLinuxResourcesCPUShares(v uint64) {
	e.cpu().Shares = &v
}
func (e specEditor) SetLinuxResourcesCPURealtimePeriod(v uint64) {
	e.cpu().RealtimePeriod = &v
}
func (e specEditor) SetLinuxResourcesCPURealtimeRuntime(v int64) {
	e.cpu().RealtimeRuntime = &v
}
func (e specEditor) SetLinuxResourcesMemoryLimit(v int64) { e.memory().Limit = &v }
func (e specEditor) SetLinuxResourcesMemorySwap(v int64)  { e.memory().Swap = &v }

func (e specEditor) SetLinuxRootPropagation(rp string) error {
	switch rp {
	case "", "private", "rprivate", "slave", "rslave", "shared", "rshared", "unbindable", "runbindable":
		e.linux().RootfsPropagation = rp
		return nil
	}
	return fmt.Errorf("rootfs propagation %q is invalid", rp)
}

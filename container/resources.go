package container

import (
	"fmt"
	"maps"
	"slices"
	"sync"

	specs "github.com/opencontainers/runtime-spec/specs-go"
	"golang.org/x/sys/unix"

	"github.com/minicri/minicri/cgdriver"
)

// Host cgroup facts, probed once like containerd does. They are variables
// so that tests can stub them.
var (
	cgroupUnified  = sync.OnceValue(probeCgroupUnified)
	swapAvailable  = cgdriver.SwapAvailable
	hugetlbPresent = cgdriver.HugetlbPresent
)

// probeCgroupUnified reports whether /sys/fs/cgroup is cgroup v2.
func probeCgroupUnified() bool {
	var st unix.Statfs_t
	if err := unix.Statfs(sysFsCgroup, &st); err != nil {
		return false
	}
	return st.Type == unix.CGROUP2_SUPER_MAGIC
}

// buildResources mirrors containerd's CRI WithResources: zero means unset;
// the memory+swap limit equals the memory limit unless a swap limit is
// given (only where the swap controller exists); hugepage limits are
// dropped when the hugetlb controller is missing (containerd's default
// tolerate_missing_hugetlb_controller = true; the kubelet always sends
// them). devices are the device cgroup rules.
func buildResources(r *Resources, devices []specs.LinuxDeviceCgroup) (*specs.LinuxResources, error) {
	out := &specs.LinuxResources{Devices: devices}

	var cpu specs.LinuxCPU
	if r.CPUPeriod < 0 || r.CPUShares < 0 {
		return nil, fmt.Errorf("%w: negative CPU period or shares", ErrInvalid)
	}
	if r.CPUPeriod != 0 {
		p := uint64(r.CPUPeriod)
		cpu.Period = &p
	}
	if r.CPUQuota != 0 {
		q := r.CPUQuota
		cpu.Quota = &q
	}
	if r.CPUShares != 0 {
		s := uint64(r.CPUShares)
		cpu.Shares = &s
	}
	cpu.Cpus = r.CpusetCPUs
	cpu.Mems = r.CpusetMems
	if cpu != (specs.LinuxCPU{}) {
		out.CPU = &cpu
	}

	var mem specs.LinuxMemory
	if r.MemoryLimit != 0 {
		l := r.MemoryLimit
		mem.Limit = &l
		// memory+swap = memory: no swapping by default.
		if r.MemorySwapLimit == 0 && swapAvailable() {
			s := l
			mem.Swap = &s
		}
	}
	if r.MemorySwapLimit != 0 && swapAvailable() {
		s := r.MemorySwapLimit
		mem.Swap = &s
	}
	if mem.Limit != nil || mem.Swap != nil {
		out.Memory = &mem
	}

	if len(r.Hugepages) > 0 && hugetlbPresent() {
		for _, size := range slices.Sorted(maps.Keys(r.Hugepages)) {
			out.HugepageLimits = append(out.HugepageLimits, specs.LinuxHugepageLimit{
				Pagesize: size,
				Limit:    r.Hugepages[size],
			})
		}
	}

	if len(r.Unified) > 0 {
		if !cgroupUnified() {
			return nil, fmt.Errorf("%w: unified (cgroup v2) resources are not supported on a cgroup v1 host", ErrInvalid)
		}
		out.Unified = maps.Clone(r.Unified)
	}
	return out, nil
}

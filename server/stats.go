package server

import (
	"context"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// ContainerStats reports one container's usage.
func (s *Server) ContainerStats(_ context.Context, req *runtimeapi.ContainerStatsRequest) (*runtimeapi.ContainerStatsResponse, error) {
	st, err := s.containers.Stats(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ContainerStatsResponse{Stats: containerStatsToCRI(st)}, nil
}

// ListContainerStats reports the usage of the containers the filter selects.
func (s *Server) ListContainerStats(_ context.Context, req *runtimeapi.ListContainerStatsRequest) (*runtimeapi.ListContainerStatsResponse, error) {
	f := req.GetFilter()
	all := s.containers.ListStats(container.Filter{ID: f.GetId(), PodID: f.GetPodSandboxId(), LabelSelector: f.GetLabelSelector()})
	out := make([]*runtimeapi.ContainerStats, 0, len(all))
	for _, st := range all {
		out = append(out, containerStatsToCRI(st))
	}
	return &runtimeapi.ListContainerStatsResponse{Stats: out}, nil
}

// PodSandboxStats reports one pod's usage.
func (s *Server) PodSandboxStats(_ context.Context, req *runtimeapi.PodSandboxStatsRequest) (*runtimeapi.PodSandboxStatsResponse, error) {
	info, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	ps, err := s.containers.PodStats(info.ID)
	if err != nil {
		return nil, err
	}
	return &runtimeapi.PodSandboxStatsResponse{Stats: podStatsToCRI(info, ps)}, nil
}

// ListPodSandboxStats reports the usage of the pods the filter selects.
func (s *Server) ListPodSandboxStats(_ context.Context, req *runtimeapi.ListPodSandboxStatsRequest) (*runtimeapi.ListPodSandboxStatsResponse, error) {
	f := req.GetFilter()
	var out []*runtimeapi.PodSandboxStats
	for _, info := range s.sandboxes.List(sandbox.Filter{ID: f.GetId(), LabelSelector: f.GetLabelSelector()}) {
		ps, err := s.containers.PodStats(info.ID)
		if err != nil {
			continue
		}
		out = append(out, podStatsToCRI(info, ps))
	}
	return &runtimeapi.ListPodSandboxStatsResponse{Stats: out}, nil
}

func u64(v uint64) *runtimeapi.UInt64Value { return &runtimeapi.UInt64Value{Value: v} }

func cpuToCRI(u container.Usage) *runtimeapi.CpuUsage {
	return &runtimeapi.CpuUsage{Timestamp: u.Timestamp.UnixNano(), UsageCoreNanoSeconds: u64(u.CPUNanos), UsageNanoCores: u64(u.NanoCores),
		Psi: psiToCRI(u.CPUPressure)}
}

func memoryToCRI(u container.Usage) *runtimeapi.MemoryUsage {
	m := &runtimeapi.MemoryUsage{
		Timestamp: u.Timestamp.UnixNano(), WorkingSetBytes: u64(u.MemoryWorkingSet), UsageBytes: u64(u.MemoryUsage),
		RssBytes: u64(u.MemoryRSS), PageFaults: u64(u.PageFaults), MajorPageFaults: u64(u.MajorPageFaults),
		Psi: psiToCRI(u.MemoryPressure),
	}
	if avail, ok := u.MemoryAvailable(); ok {
		m.AvailableBytes = u64(avail)
	}
	return m
}

func swapToCRI(u container.Usage) *runtimeapi.SwapUsage {
	s := &runtimeapi.SwapUsage{Timestamp: u.Timestamp.UnixNano(), SwapUsageBytes: u64(u.SwapUsage)}
	if u.SwapLimit > u.SwapUsage {
		s.SwapAvailableBytes = u64(u.SwapLimit - u.SwapUsage)
	}
	return s
}

// ioToCRI reports I/O pressure, all the CRI's IoUsage holds; nil without it.
func ioToCRI(u container.Usage) *runtimeapi.IoUsage {
	if u.IOPressure == nil {
		return nil
	}
	return &runtimeapi.IoUsage{Timestamp: u.Timestamp.UnixNano(), Psi: psiToCRI(u.IOPressure)}
}

func psiToCRI(p *container.PSI) *runtimeapi.PsiStats {
	if p == nil {
		return nil
	}
	d := func(x container.PSIData) *runtimeapi.PsiData {
		return &runtimeapi.PsiData{Total: x.Total, Avg10: x.Avg10, Avg60: x.Avg60, Avg300: x.Avg300}
	}
	return &runtimeapi.PsiStats{Some: d(p.Some), Full: d(p.Full)}
}

func containerStatsToCRI(st container.Stats) *runtimeapi.ContainerStats {
	return &runtimeapi.ContainerStats{
		Attributes: &runtimeapi.ContainerAttributes{
			Id:          st.ID,
			Metadata:    &runtimeapi.ContainerMetadata{Name: st.Config.Name, Attempt: st.Config.Attempt},
			Labels:      st.Config.Labels,
			Annotations: st.Config.Annotations,
		},
		Cpu:    cpuToCRI(st.Usage),
		Memory: memoryToCRI(st.Usage),
		Swap:   swapToCRI(st.Usage),
		Io:     ioToCRI(st.Usage),
		WritableLayer: &runtimeapi.FilesystemUsage{
			Timestamp: st.Timestamp.UnixNano(), FsId: &runtimeapi.FilesystemIdentifier{Mountpoint: st.Mountpoint},
			UsedBytes: u64(st.WritableBytes), InodesUsed: u64(st.WritableInodes),
		},
	}
}

func podStatsToCRI(info sandbox.Info, ps container.PodStats) *runtimeapi.PodSandboxStats {
	linux := &runtimeapi.LinuxPodSandboxStats{
		Cpu:     cpuToCRI(ps.Usage),
		Memory:  memoryToCRI(ps.Usage),
		Process: &runtimeapi.ProcessUsage{Timestamp: ps.Usage.Timestamp.UnixNano(), ProcessCount: u64(ps.Usage.Processes)},
		Io:      ioToCRI(ps.Usage),
	}
	if len(ps.Interfaces) > 0 {
		net := &runtimeapi.NetworkUsage{Timestamp: ps.Usage.Timestamp.UnixNano()}
		for _, i := range ps.Interfaces {
			iu := &runtimeapi.NetworkInterfaceUsage{Name: i.Name, RxBytes: u64(i.RxBytes), RxErrors: u64(i.RxErrors), TxBytes: u64(i.TxBytes), TxErrors: u64(i.TxErrors)}
			net.Interfaces = append(net.Interfaces, iu)
			if i.Name == "eth0" || net.DefaultInterface == nil {
				net.DefaultInterface = iu
			}
		}
		linux.Network = net
	}
	for _, c := range ps.Containers {
		linux.Containers = append(linux.Containers, containerStatsToCRI(c))
	}
	return &runtimeapi.PodSandboxStats{
		Attributes: &runtimeapi.PodSandboxAttributes{
			Id: info.ID, Metadata: metadataToCRI(info.Config.Metadata), Labels: info.Config.Labels, Annotations: info.Config.Annotations,
		},
		Linux: linux,
	}
}

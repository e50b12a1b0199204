package server

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

// Containers is the container manager.
type Containers interface {
	Create(ctx context.Context, podID string, cfg container.Config) (string, error)
	Start(ctx context.Context, id string) error
	Stop(ctx context.Context, id string, timeout time.Duration) error
	Remove(ctx context.Context, id string) error
	Get(id string) (container.Info, error)
	List(f container.Filter) []container.Info
	ReopenLog(ctx context.Context, id string) error
	BundleDir(id string) string
	ExecSync(ctx context.Context, id string, cmd []string, timeout time.Duration) (container.ExecResult, error)
	Stats(id string) (container.Stats, error)
	ListStats(f container.Filter) []container.Stats
	PodStats(podID string) (container.PodStats, error)
	PodMetrics(podID string) (container.PodSample, error)
	FsInfo() (container.FsUsage, error)
	UpdateResources(ctx context.Context, id string, r container.Resources) error
}

// CreateContainer creates a container in a pod sandbox.
func (s *Server) CreateContainer(ctx context.Context, req *runtimeapi.CreateContainerRequest) (*runtimeapi.CreateContainerResponse, error) {
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is required")
	}
	if req.GetConfig().GetMetadata() == nil {
		return nil, invalid("config.metadata is required")
	}
	if err := checkContainerProfiles(req.GetConfig().GetLinux().GetSecurityContext()); err != nil {
		return nil, err
	}
	id, err := s.containers.Create(ctx, req.GetPodSandboxId(), containerConfig(req.GetConfig()))
	if err != nil {
		return nil, err
	}
	return &runtimeapi.CreateContainerResponse{ContainerId: id}, nil
}

// StartContainer starts a created container.
func (s *Server) StartContainer(ctx context.Context, req *runtimeapi.StartContainerRequest) (*runtimeapi.StartContainerResponse, error) {
	if err := s.containers.Start(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.StartContainerResponse{}, nil
}

// StopContainer stops a container; unknown or stopped ones are fine.
func (s *Server) StopContainer(ctx context.Context, req *runtimeapi.StopContainerRequest) (*runtimeapi.StopContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is required")
	}
	if err := s.containers.Stop(ctx, req.GetContainerId(), time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, err
	}
	return &runtimeapi.StopContainerResponse{}, nil
}

// RemoveContainer removes a container; unknown ones are fine.
func (s *Server) RemoveContainer(ctx context.Context, req *runtimeapi.RemoveContainerRequest) (*runtimeapi.RemoveContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is required")
	}
	if err := s.containers.Remove(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.RemoveContainerResponse{}, nil
}

// ReopenContainerLog reopens a running container's log file.
func (s *Server) ReopenContainerLog(ctx context.Context, req *runtimeapi.ReopenContainerLogRequest) (*runtimeapi.ReopenContainerLogResponse, error) {
	if err := s.containers.ReopenLog(ctx, req.GetContainerId()); err != nil {
		return nil, err
	}
	return &runtimeapi.ReopenContainerLogResponse{}, nil
}

// ListContainers lists containers with the CRI filter.
func (s *Server) ListContainers(_ context.Context, req *runtimeapi.ListContainersRequest) (*runtimeapi.ListContainersResponse, error) {
	var f container.Filter
	if cf := req.GetFilter(); cf != nil {
		f = container.Filter{ID: cf.GetId(), PodID: cf.GetPodSandboxId(), LabelSelector: cf.GetLabelSelector()}
		if st := cf.GetState(); st != nil {
			state := containerStateFromCRI(st.GetState())
			f.State = &state
		}
	}
	infos := s.containers.List(f)
	out := make([]*runtimeapi.Container, 0, len(infos))
	for _, c := range infos {
		out = append(out, &runtimeapi.Container{
			Id:           c.ID,
			PodSandboxId: c.PodID,
			Metadata:     &runtimeapi.ContainerMetadata{Name: c.Config.Name, Attempt: c.Config.Attempt},
			Image:        &runtimeapi.ImageSpec{Image: c.ImageName},
			ImageRef:     c.ImageRef,
			ImageId:      c.ImageID,
			State:        containerStateToCRI(c.Status.State),
			CreatedAt:    c.CreatedAt.UnixNano(),
			Labels:       c.Config.Labels,
			Annotations:  c.Config.Annotations,
		})
	}
	return &runtimeapi.ListContainersResponse{Containers: out}, nil
}

// ContainerStatus reports one container.
func (s *Server) ContainerStatus(_ context.Context, req *runtimeapi.ContainerStatusRequest) (*runtimeapi.ContainerStatusResponse, error) {
	c, err := s.containers.Get(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	st := c.Status
	status := containerStatusToCRI(c)
	resp := &runtimeapi.ContainerStatusResponse{Status: status}
	if req.GetVerbose() {
		var spec any
		if data, err := os.ReadFile(filepath.Join(s.containers.BundleDir(c.ID), "config.json")); err == nil {
			if err := json.Unmarshal(data, &spec); err != nil {
				// Verbose info is best effort: the status itself stands.
				s.log.Warn("container spec unreadable for verbose status", "container", c.ID, "err", err)
				spec = nil
			}
		}
		info, _ := json.Marshal(map[string]any{
			"pid": st.Init.PID, "sandboxID": c.PodID, "runtimeSpec": spec, "imageRef": c.ImageRef,
		})
		resp.Info = map[string]string{"info": string(info)}
	}
	return resp, nil
}

// UpdateContainerResources changes a container's limits live.
func (s *Server) UpdateContainerResources(ctx context.Context, req *runtimeapi.UpdateContainerResourcesRequest) (*runtimeapi.UpdateContainerResourcesResponse, error) {
	if req.GetLinux() == nil {
		return nil, invalid("linux resources are required")
	}
	if err := s.containers.UpdateResources(ctx, req.GetContainerId(), resourcesFromCRI(req.GetLinux())); err != nil {
		return nil, err
	}
	return &runtimeapi.UpdateContainerResourcesResponse{}, nil
}

// containerStatusToCRI builds the CRI status of a container.
func containerStatusToCRI(c container.Info) *runtimeapi.ContainerStatus {
	st := c.Status
	status := &runtimeapi.ContainerStatus{
		Id:          c.ID,
		Metadata:    &runtimeapi.ContainerMetadata{Name: c.Config.Name, Attempt: c.Config.Attempt},
		State:       containerStateToCRI(st.State),
		CreatedAt:   c.CreatedAt.UnixNano(),
		ExitCode:    st.ExitCode,
		Image:       &runtimeapi.ImageSpec{Image: c.ImageName},
		ImageRef:    c.ImageRef,
		ImageId:     c.ImageID,
		Reason:      st.Reason,
		Message:     st.Message,
		Labels:      c.Config.Labels,
		Annotations: c.Config.Annotations,
		Mounts:      mountsToCRI(c.Config.Mounts, c.ImageMounts),
		LogPath:     c.LogPath,
		Resources:   &runtimeapi.ContainerResources{Linux: resourcesToCRI(c.Config.Resources)},
		StopSignal:  signalToCRI(c.StopSignal()),
	}
	if u := c.User; u != nil {
		lu := &runtimeapi.LinuxContainerUser{Uid: int64(u.UID), Gid: int64(u.GID)}
		for _, g := range u.Groups {
			lu.SupplementalGroups = append(lu.SupplementalGroups, int64(g))
		}
		status.User = &runtimeapi.ContainerUser{Linux: lu}
	}
	if !st.StartedAt.IsZero() {
		status.StartedAt = st.StartedAt.UnixNano()
	}
	if !st.FinishedAt.IsZero() {
		status.FinishedAt = st.FinishedAt.UnixNano()
	}
	return status
}

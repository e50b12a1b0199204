package server

import (
	"context"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// CheckpointContainer writes a checkpoint archive of a running container to
// the request's location; the container keeps running. A timeout of zero is
// the runtime's default. CheckpointPod and RestorePod: checkpoint_pod.go.
func (s *Server) CheckpointContainer(ctx context.Context, req *runtimeapi.CheckpointContainerRequest) (*runtimeapi.CheckpointContainerResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is required")
	}
	if req.GetLocation() == "" {
		return nil, invalid("location is required")
	}
	if req.GetTimeout() < 0 {
		return nil, invalid("timeout must not be negative")
	}
	if err := s.containers.Checkpoint(ctx, req.GetContainerId(), req.GetLocation(), time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, err
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}

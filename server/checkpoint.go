package server

import (
	"context"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/checkpoint"
)

// Checkpoints writes checkpoints of running containers (package
// checkpoint). Restores are CreateContainer's (of an image that names a
// checkpoint) and RestorePod's.
type Checkpoints interface {
	// Checkpoint writes a KEP-2008 forensic checkpoint archive of a running
	// container to location; the container keeps running.
	Checkpoint(ctx context.Context, id, location string, timeout time.Duration) error
	// CheckpointPod writes into dir one archive per container ids names
	// (running, of pod podID), all of them frozen first.
	CheckpointPod(ctx context.Context, podID string, ids []string, dir string, timeout time.Duration) ([]checkpoint.PodArchive, error)
}

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
	if s.checkpoints == nil {
		return nil, status.Error(codes.Unimplemented, "CheckpointContainer is not supported")
	}
	if err := s.checkpoints.Checkpoint(ctx, req.GetContainerId(), req.GetLocation(), time.Duration(req.GetTimeout())*time.Second); err != nil {
		return nil, err
	}
	return &runtimeapi.CheckpointContainerResponse{}, nil
}

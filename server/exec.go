package server

import (
	"context"
	"errors"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
)

// ExecSync runs a command in a container and returns its output.
func (s *Server) ExecSync(ctx context.Context, req *runtimeapi.ExecSyncRequest) (*runtimeapi.ExecSyncResponse, error) {
	if req.GetContainerId() == "" {
		return nil, invalid("container_id is required")
	}
	res, err := s.containers.ExecSync(ctx, req.GetContainerId(), req.GetCmd(), time.Duration(req.GetTimeout())*time.Second)
	if errors.Is(err, container.ErrTimeout) {
		return nil, status.Error(codes.DeadlineExceeded, err.Error())
	}
	if err != nil {
		return nil, err
	}
	return &runtimeapi.ExecSyncResponse{Stdout: res.Stdout, Stderr: res.Stderr, ExitCode: res.ExitCode}, nil
}

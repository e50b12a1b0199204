package server

import (
	"context"
	"fmt"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/sandbox"
)

// Streaming hands out URLs of the streaming server for Exec, Attach and
// PortForward sessions.
type Streaming interface {
	GetExec(*runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error)
	GetAttach(*runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error)
	GetPortForward(*runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error)
}

// Exec prepares a streaming exec session in a running container.
func (s *Server) Exec(ctx context.Context, req *runtimeapi.ExecRequest) (*runtimeapi.ExecResponse, error) {
	if s.streaming == nil {
		return nil, status.Error(codes.Unimplemented, "streaming is not configured")
	}
	if len(req.GetCmd()) == 0 {
		return nil, invalid("cmd is required")
	}
	id, err := s.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return s.streaming.GetExec(&runtimeapi.ExecRequest{
		ContainerId: id, Cmd: req.GetCmd(), Tty: req.GetTty(),
		Stdin: req.GetStdin(), Stdout: req.GetStdout(), Stderr: req.GetStderr(),
	})
}

// Attach prepares a streaming attach session to a running container.
func (s *Server) Attach(ctx context.Context, req *runtimeapi.AttachRequest) (*runtimeapi.AttachResponse, error) {
	if s.streaming == nil {
		return nil, status.Error(codes.Unimplemented, "streaming is not configured")
	}
	id, err := s.runningContainer(req.GetContainerId())
	if err != nil {
		return nil, err
	}
	return s.streaming.GetAttach(&runtimeapi.AttachRequest{
		ContainerId: id, Tty: req.GetTty(),
		Stdin: req.GetStdin(), Stdout: req.GetStdout(), Stderr: req.GetStderr(),
	})
}

// PortForward prepares a streaming port-forward session to a ready pod.
func (s *Server) PortForward(ctx context.Context, req *runtimeapi.PortForwardRequest) (*runtimeapi.PortForwardResponse, error) {
	if s.streaming == nil {
		return nil, status.Error(codes.Unimplemented, "streaming is not configured")
	}
	if req.GetPodSandboxId() == "" {
		return nil, invalid("pod_sandbox_id is required")
	}
	info, err := s.sandboxes.Get(req.GetPodSandboxId())
	if err != nil {
		return nil, err
	}
	if !info.Ready {
		return nil, fmt.Errorf("%w: pod sandbox %s is not ready", sandbox.ErrFailedPrecondition, info.ID)
	}
	return s.streaming.GetPortForward(&runtimeapi.PortForwardRequest{PodSandboxId: info.ID, Port: req.GetPort()})
}

// runningContainer resolves id (or a unique prefix) to a running container.
func (s *Server) runningContainer(id string) (string, error) {
	if id == "" {
		return "", invalid("container_id is required")
	}
	info, err := s.containers.Get(id)
	if err != nil {
		return "", err
	}
	if info.Status.State != container.StateRunning {
		return "", fmt.Errorf("%w: container %s is %s, not running", container.ErrFailedPrecondition, info.ID, info.Status.State)
	}
	return info.ID, nil
}

package server

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestUpdatePodSandboxResourcesValidatesAndLogs(t *testing.T) {
	s, _, _, logs := testServer(t, 3)
	bg := context.Background()
	if _, err := s.UpdatePodSandboxResources(bg, &runtimeapi.UpdatePodSandboxResourcesRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("missing ID: %v", err)
	}
	_, err := s.UpdatePodSandboxResources(bg, &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "unknown"})
	if status.Code(toStatus(err)) != codes.NotFound {
		t.Fatalf("unknown pod: %v", err)
	}
	req := &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: "pod0001",
		Overhead:     &runtimeapi.LinuxContainerResources{CpuShares: 7},
		Resources:    &runtimeapi.LinuxContainerResources{CpuShares: 1024, MemoryLimitInBytes: 64 << 20},
	}
	if _, err := s.UpdatePodSandboxResources(bg, req); err != nil {
		t.Fatalf("known pod: %v", err)
	}
	line := logs.String()
	for _, want := range []string{"level=INFO", "pod=pod0001", "cpu_shares:7", "memory_limit_in_bytes:67108864"} {
		if !strings.Contains(strings.ReplaceAll(line, " ", ""), strings.ReplaceAll(want, " ", "")) {
			t.Errorf("log lacks %q: %s", want, line)
		}
	}
	// Neither part is required.
	if _, err := s.UpdatePodSandboxResources(bg, &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "pod0002"}); err != nil {
		t.Fatalf("no resources: %v", err)
	}
}

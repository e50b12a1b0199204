package server

import (
	"context"
	"io"
	"log/slog"
	"strings"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// TestUnknownEnumsAreRefusedAtTheEdge: a value no enum of the CRI defines,
// anywhere in a request (nested, in a list), never reaches a handler.
func TestUnknownEnumsAreRefusedAtTheEdge(t *testing.T) {
	s := &Server{log: slog.New(slog.NewTextHandler(io.Discard, nil))}
	cases := map[string]struct {
		req  any
		path string
	}{
		"seccomp type": {&runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
			SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: 99}}}}},
			"config.linux.security_context.seccomp.profile_type"},
		"mount propagation in a list": {&runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{Mounts: []*runtimeapi.Mount{
			{ContainerPath: "/a"}, {ContainerPath: "/b", Propagation: 9}}}}, "config.mounts[1].propagation"},
		"pod namespace mode": {&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{Linux: &runtimeapi.LinuxPodSandboxConfig{
			SecurityContext: &runtimeapi.LinuxSandboxSecurityContext{NamespaceOptions: &runtimeapi.NamespaceOption{Network: 17}}}}},
			"config.linux.security_context.namespace_options.network"},
		"port protocol": {&runtimeapi.RunPodSandboxRequest{Config: &runtimeapi.PodSandboxConfig{PortMappings: []*runtimeapi.PortMapping{
			{Protocol: 5}}}}, "config.port_mappings[0].protocol"},
		"list filter state": {&runtimeapi.ListContainersRequest{Filter: &runtimeapi.ContainerFilter{
			State: &runtimeapi.ContainerStateValue{State: 12}}}, "filter.state.state"},
		"stop signal": {&runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{StopSignal: 1000}}, "config.stop_signal"},
	}
	for name, tc := range cases {
		_, err := s.Interceptor(context.Background(), tc.req, &grpc.UnaryServerInfo{FullMethod: "/test"},
			func(context.Context, any) (any, error) {
				t.Errorf("%s: the handler ran", name)
				return nil, nil
			})
		if status.Code(err) != codes.InvalidArgument || !strings.Contains(err.Error(), tc.path+": unknown") {
			t.Errorf("%s: want InvalidArgument naming %s, got %v", name, tc.path, err)
		}
	}
	ran := false
	ok := &runtimeapi.CreateContainerRequest{Config: &runtimeapi.ContainerConfig{Linux: &runtimeapi.LinuxContainerConfig{
		SecurityContext: &runtimeapi.LinuxContainerSecurityContext{Seccomp: &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Localhost}}}}}
	if _, err := s.Interceptor(context.Background(), ok, &grpc.UnaryServerInfo{FullMethod: "/test"},
		func(context.Context, any) (any, error) { ran = true; return nil, nil }); err != nil || !ran {
		t.Errorf("known values: err %v, handler ran %v", err, ran)
	}
}

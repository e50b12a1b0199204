// Package server is minicri's kubelet-facing edge: it implements the CRI v1
// RuntimeService and ImageService, translating CRI messages to the domain
// packages and back, and maps domain errors to gRPC status codes in one
// place (see errors.go). It holds no Linux details.
package server

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/sandbox"
)

// Version facts reported by the Version RPC.
const (
	RuntimeName       = "minicri"
	RuntimeVersion    = "0.1.0"
	RuntimeAPIVersion = "v1"
)

// Network is what the server needs from the network layer.
type Network interface {
	// Ready returns nil when pods can be networked, else the reason.
	Ready() error
	// SetPodCIDR applies the kubelet's pod CIDR.
	SetPodCIDR(cidr string) error
}

// Sandboxes is the sandbox manager.
type Sandboxes interface {
	Run(ctx context.Context, cfg sandbox.Config) (string, error)
	Stop(ctx context.Context, id string) error
	Remove(ctx context.Context, id string) error
	Get(id string) (sandbox.Info, error)
	List(f sandbox.Filter) []sandbox.Info
	UpdateResources(ctx context.Context, id string, overhead, resources *sandbox.PodResources) error
}

// Server implements the CRI services.
type Server struct {
	runtimeapi.UnimplementedRuntimeServiceServer
	runtimeapi.UnimplementedImageServiceServer

	sandboxes  Sandboxes
	containers Containers
	images     Images
	profiles   Profiles
	network    Network
	streaming  Streaming
	events     Events
	log        *slog.Logger
	config     any
	systemd    bool
	handlers   []HandlerInfo
	// cgroupMountMode: RuntimeFeatures.cgroup_mount_mode.
	cgroupMountMode bool

	checkpoints Checkpoints
}

// Deps are the domain services the server translates to.
type Deps struct {
	Sandboxes  Sandboxes
	Containers Containers
	Images     Images
	Profiles   Profiles // nil: the security profile RPCs are unimplemented
	Network    Network
	Streaming  Streaming // nil: Exec, Attach and PortForward are unimplemented
	Events     Events
	Log        *slog.Logger
	// Config is reported by a verbose Status as info["config"] (JSON), as
	// containerd does; critest reads its stateDir.
	Config any
	// SystemdCgroups: the cgroup driver in use is systemd (else cgroupfs),
	// as RuntimeConfig tells the kubelet.
	SystemdCgroups bool
	// Handlers are the RuntimeClass handlers Status advertises; empty: the
	// built-in "" only.
	Handlers []HandlerInfo
	// CgroupMountMode: READ_WRITE cgroup_mount_mode can be honoured here
	// (RuntimeFeatures.cgroup_mount_mode; daemon/ probes the host).
	CgroupMountMode bool
	// Checkpoints writes checkpoints; nil: CheckpointContainer and
	// CheckpointPod are unimplemented.
	Checkpoints Checkpoints
}

// New creates the server.
func New(d Deps) *Server {
	return &Server{sandboxes: d.Sandboxes, containers: d.Containers, images: d.Images, profiles: d.Profiles, network: d.Network,
		streaming: d.Streaming, events: d.Events, log: d.Log, config: d.Config,
		systemd: d.SystemdCgroups, handlers: d.Handlers, checkpoints: d.Checkpoints, cgroupMountMode: d.CgroupMountMode}
}

// Register adds the CRI services to g.
func (s *Server) Register(g *grpc.Server) {
	runtimeapi.RegisterRuntimeServiceServer(g, s)
	runtimeapi.RegisterImageServiceServer(g, s)
}

// Interceptor refuses a request with an enum value the CRI does not define
// (checkEnums), logs every call and turns domain errors into gRPC statuses.
func (s *Server) Interceptor(ctx context.Context, req any, info *grpc.UnaryServerInfo, handler grpc.UnaryHandler) (any, error) {
	start := time.Now()
	err := checkEnums(req)
	var resp any
	if err == nil {
		resp, err = handler(ctx, req)
	}
	err = toStatus(err)
	if err != nil {
		s.log.Warn("CRI call failed", "method", info.FullMethod, "duration", time.Since(start), "err", err)
	} else {
		s.log.Debug("CRI call", "method", info.FullMethod, "duration", time.Since(start))
	}
	return resp, err
}

// StreamInterceptor does for streaming calls what Interceptor does for
// unary ones: one log line, domain errors turned into gRPC statuses.
func (s *Server) StreamInterceptor(srv any, ss grpc.ServerStream, info *grpc.StreamServerInfo, handler grpc.StreamHandler) error {
	start := time.Now()
	err := toStatus(handler(srv, enumCheckedStream{ss}))
	if err != nil {
		s.log.Warn("CRI stream failed", "method", info.FullMethod, "duration", time.Since(start), "err", err)
	} else {
		s.log.Debug("CRI stream", "method", info.FullMethod, "duration", time.Since(start))
	}
	return err
}

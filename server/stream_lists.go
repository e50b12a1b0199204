package server

import (
	"context"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The list-streaming RPCs (KEP-5825, kubelet feature gate CRIListStreaming)
// return what their unary List counterparts return, split over several
// messages so that a node with many pods, containers or images stays under
// the gRPC message size limit. Each handler calls its unary List method with
// the same filter, so the two can never disagree, then sends the items in
// order, each exactly once, in lists of at least one item, and ends the
// stream with EOF (a nil return). An empty result sends no message at all.
//
// The daemon installs only a unary interceptor, so these handlers log and map
// their own errors (through toStatus, like every other RPC).

// A batch holds at most streamBatchItems items and, unless a single item is
// larger, at most streamBatchBytes of encoded items: well under the 16 MiB
// the kubelet accepts per message even for pods with many metrics.
const (
	streamBatchItems = 100
	streamBatchBytes = 4 << 20
)

// batches cuts items into consecutive lists of at least one item, each
// within maxItems and, unless one item alone is larger, maxBytes.
func batches[T proto.Message](items []T, maxItems, maxBytes int) [][]T {
	var out [][]T
	start, size := 0, 0
	for i, it := range items {
		n := proto.Size(it)
		if i > start && (i-start == maxItems || size+n > maxBytes) {
			out = append(out, items[start:i])
			start, size = i, 0
		}
		size += n
	}
	if start < len(items) {
		out = append(out, items[start:])
	}
	return out
}

// sendBatches sends items in batches, wrapped by wrap, and stops as soon as
// ctx ends or a Send fails.
func sendBatches[T proto.Message, R any](ctx context.Context, stream grpc.ServerStreamingServer[R], items []T, wrap func([]T) *R) error {
	for _, b := range batches(items, streamBatchItems, streamBatchBytes) {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := stream.Send(wrap(b)); err != nil {
			return err
		}
	}
	return nil
}

// streamList runs one list-streaming RPC: list collects the items through
// the unary List code path, then they are sent in batches. Errors are logged
// and mapped as the unary interceptor does for the other RPCs.
func streamList[T proto.Message, R any](s *Server, method string, stream grpc.ServerStreamingServer[R],
	list func(context.Context) ([]T, error), wrap func([]T) *R) error {
	start := time.Now()
	ctx := stream.Context()
	var items []T
	err := ctx.Err()
	if err == nil {
		items, err = list(ctx)
	}
	if err == nil {
		err = sendBatches(ctx, stream, items, wrap)
	}
	err = toStatus(err)
	if err != nil {
		s.log.Warn("CRI call failed", "method", method, "duration", time.Since(start), "items", len(items), "err", err)
	} else {
		s.log.Debug("CRI call", "method", method, "duration", time.Since(start), "items", len(items))
	}
	return err
}

// StreamPodSandboxes streams what ListPodSandbox returns for the same filter.
func (s *Server) StreamPodSandboxes(req *runtimeapi.StreamPodSandboxesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxesResponse]) error {
	return streamList(s, runtimeapi.RuntimeService_StreamPodSandboxes_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.PodSandbox, error) {
			resp, err := s.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{Filter: req.GetFilter()})
			return resp.GetItems(), err
		},
		func(b []*runtimeapi.PodSandbox) *runtimeapi.StreamPodSandboxesResponse {
			return &runtimeapi.StreamPodSandboxesResponse{PodSandboxes: b}
		})
}

// StreamContainers streams what ListContainers returns for the same filter.
func (s *Server) StreamContainers(req *runtimeapi.StreamContainersRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainersResponse]) error {
	return streamList(s, runtimeapi.RuntimeService_StreamContainers_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.Container, error) {
			resp, err := s.ListContainers(ctx, &runtimeapi.ListContainersRequest{Filter: req.GetFilter()})
			return resp.GetContainers(), err
		},
		func(b []*runtimeapi.Container) *runtimeapi.StreamContainersResponse {
			return &runtimeapi.StreamContainersResponse{Containers: b}
		})
}

// StreamContainerStats streams what ListContainerStats returns for the same
// filter.
func (s *Server) StreamContainerStats(req *runtimeapi.StreamContainerStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamContainerStatsResponse]) error {
	return streamList(s, runtimeapi.RuntimeService_StreamContainerStats_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.ContainerStats, error) {
			resp, err := s.ListContainerStats(ctx, &runtimeapi.ListContainerStatsRequest{Filter: req.GetFilter()})
			return resp.GetStats(), err
		},
		func(b []*runtimeapi.ContainerStats) *runtimeapi.StreamContainerStatsResponse {
			return &runtimeapi.StreamContainerStatsResponse{ContainerStats: b}
		})
}

// StreamPodSandboxStats streams what ListPodSandboxStats returns for the
// same filter.
func (s *Server) StreamPodSandboxStats(req *runtimeapi.StreamPodSandboxStatsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxStatsResponse]) error {
	return streamList(s, runtimeapi.RuntimeService_StreamPodSandboxStats_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.PodSandboxStats, error) {
			resp, err := s.ListPodSandboxStats(ctx, &runtimeapi.ListPodSandboxStatsRequest{Filter: req.GetFilter()})
			return resp.GetStats(), err
		},
		func(b []*runtimeapi.PodSandboxStats) *runtimeapi.StreamPodSandboxStatsResponse {
			return &runtimeapi.StreamPodSandboxStatsResponse{PodSandboxStats: b}
		})
}

// StreamPodSandboxMetrics streams what ListPodSandboxMetrics returns; neither
// request has a filter.
func (s *Server) StreamPodSandboxMetrics(_ *runtimeapi.StreamPodSandboxMetricsRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamPodSandboxMetricsResponse]) error {
	return streamList(s, runtimeapi.RuntimeService_StreamPodSandboxMetrics_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.PodSandboxMetrics, error) {
			resp, err := s.ListPodSandboxMetrics(ctx, &runtimeapi.ListPodSandboxMetricsRequest{})
			return resp.GetPodMetrics(), err
		},
		func(b []*runtimeapi.PodSandboxMetrics) *runtimeapi.StreamPodSandboxMetricsResponse {
			return &runtimeapi.StreamPodSandboxMetricsResponse{PodSandboxMetrics: b}
		})
}

// StreamImages streams what ListImages returns for the same filter.
func (s *Server) StreamImages(req *runtimeapi.StreamImagesRequest, stream grpc.ServerStreamingServer[runtimeapi.StreamImagesResponse]) error {
	return streamList(s, runtimeapi.ImageService_StreamImages_FullMethodName, stream,
		func(ctx context.Context) ([]*runtimeapi.Image, error) {
			resp, err := s.ListImages(ctx, &runtimeapi.ListImagesRequest{Filter: req.GetFilter()})
			return resp.GetImages(), err
		},
		func(b []*runtimeapi.Image) *runtimeapi.StreamImagesResponse {
			return &runtimeapi.StreamImagesResponse{Images: b}
		})
}

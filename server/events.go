package server

import (
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/internal/events"
)

// Events is the source of lifecycle events.
type Events interface {
	Subscribe() (<-chan events.Event, func())
}

var eventTypes = map[events.Kind]runtimeapi.ContainerEventType{
	events.Created: runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT,
	events.Started: runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT,
	events.Stopped: runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT,
	events.Deleted: runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT,
}

// GetContainerEvents streams container and sandbox lifecycle events, each
// with the pod's status and its containers' statuses, as the kubelet's
// evented PLEG expects. A subscriber that falls far behind is cut off; it
// reconnects and relists.
func (s *Server) GetContainerEvents(_ *runtimeapi.GetEventsRequest, stream runtimeapi.RuntimeService_GetContainerEventsServer) error {
	if s.events == nil {
		return status.Error(codes.Unimplemented, "no event source")
	}
	ch, cancel := s.events.Subscribe()
	defer cancel()
	for {
		select {
		case <-stream.Context().Done():
			return nil
		case e, ok := <-ch:
			if !ok {
				return status.Error(codes.ResourceExhausted, "event subscriber fell too far behind; subscribe again")
			}
			if err := stream.Send(s.eventToCRI(e)); err != nil {
				return err
			}
		}
	}
}

func (s *Server) eventToCRI(e events.Event) *runtimeapi.ContainerEventResponse {
	resp := &runtimeapi.ContainerEventResponse{
		ContainerId:        e.ID,
		ContainerEventType: eventTypes[e.Kind],
		CreatedAt:          e.At.UnixNano(),
	}
	resp.PodSandboxStatus = s.eventSandbox(e)
	resp.ContainersStatuses = s.containersStatuses(e.PodID)
	return resp
}

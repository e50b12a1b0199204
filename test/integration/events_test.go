package integration

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestContainerEventsFollowTheLifecycle(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := i.rt.GetContainerEvents(sctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *runtimeapi.ContainerEventResponse, 100)
	go func() {
		for {
			e, err := stream.Recv()
			if err != nil {
				close(got)
				return
			}
			got <- e
		}
	}()
	time.Sleep(100 * time.Millisecond) // the subscription is in place
	podID, pod := i.podWithLogs(t, "events")
	id := i.run(t, podID, pod, ctrConfig("events", "sleep 0.3; exit 4"))
	want := []struct {
		id  string
		typ runtimeapi.ContainerEventType
	}{
		{podID, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT},
		{podID, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_CREATED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_STARTED_EVENT},
		{id, runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT}, // noticed without anyone asking
	}
	for _, w := range want {
		select {
		case e := <-got:
			if e.ContainerId != w.id || e.ContainerEventType != w.typ || e.PodSandboxStatus.GetId() != podID {
				t.Fatalf("event %v for %s (pod %s), want %v for %s", e.ContainerEventType, e.ContainerId, e.PodSandboxStatus.GetId(), w.typ, w.id)
			}
			if w.typ == runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT {
				if len(e.ContainersStatuses) != 1 || e.ContainersStatuses[0].ExitCode != 4 {
					t.Fatalf("stopped event carries %v", e.ContainersStatuses)
				}
			}
		case <-time.After(10 * time.Second):
			t.Fatalf("no %v event for %s", w.typ, w.id)
		}
	}
	i.rt.RemoveContainer(ctx(t), &runtimeapi.RemoveContainerRequest{ContainerId: id})
	if e := <-got; e.ContainerId != id || e.ContainerEventType != runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
		t.Fatalf("after remove: %v for %s", e.ContainerEventType, e.ContainerId)
	}
	i.stopRemove(t, podID)
	for _, typ := range []runtimeapi.ContainerEventType{runtimeapi.ContainerEventType_CONTAINER_STOPPED_EVENT, runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT} {
		if e := <-got; e.ContainerId != podID || e.ContainerEventType != typ {
			t.Fatalf("pod event %v for %s, want %v", e.ContainerEventType, e.ContainerId, typ)
		}
	}
}

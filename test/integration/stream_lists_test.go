package integration

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// recvAll reads a list stream to its EOF and returns the items of every
// message; each message must hold at least one item.
func recvAll[R any, T any](t *testing.T, name string, stream grpc.ServerStreamingClient[R], err error, items func(*R) []T) ([]T, error) {
	t.Helper()
	if err != nil {
		return nil, err
	}
	var out []T
	for {
		msg, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		if len(items(msg)) == 0 {
			t.Errorf("%s: a message without items", name)
		}
		out = append(out, items(msg)...)
	}
}

// sameSet fails unless the stream and the list returned the same IDs, each
// once, and at least min of them.
func sameSet(t *testing.T, name string, listed, streamed []string, min int) {
	t.Helper()
	slices.Sort(listed)
	slices.Sort(streamed)
	if !slices.Equal(listed, streamed) {
		t.Errorf("%s: stream %v, list %v", name, streamed, listed)
	}
	if len(slices.Compact(slices.Clone(streamed))) != len(streamed) {
		t.Errorf("%s: an item streamed twice: %v", name, streamed)
	}
	if len(listed) < min {
		t.Errorf("%s: %d items, want at least %d", name, len(listed), min)
	}
}

func ids[T any](items []T, id func(T) string) []string {
	out := []string{}
	for _, it := range items {
		out = append(out, id(it))
	}
	return out
}

func TestStreamListsMatchListsAndUpdatePodSandboxResources(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, "registry.k8s.io/pause:3.9")
	// podConfig labels each pod test=<name>: two pods in "streama", one in
	// "streamb"; their containers carry the same group as a label.
	var podIDs, ctrIDs []string
	for n, group := range []string{"a", "a", "b"} {
		podID, pod := i.podWithLogs(t, "stream"+group)
		cfg := ctrConfig(fmt.Sprintf("c%d", n), "sleep 1000")
		cfg.Labels = map[string]string{"group": group}
		podIDs, ctrIDs = append(podIDs, podID), append(ctrIDs, i.run(t, podID, pod, cfg))
	}
	podLabel := map[string]string{"test": "streama"}
	rt, img := i.rt, i.images()
	c := ctx(t)

	// Pods.
	for name, f := range map[string]*runtimeapi.PodSandboxFilter{
		"all":       nil,
		"id":        {Id: podIDs[1]},
		"id prefix": {Id: podIDs[2][:12]},
		"ready":     {State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		"notready":  {State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}},
		"labels":    {LabelSelector: podLabel},
	} {
		list, err := rt.ListPodSandbox(c, &runtimeapi.ListPodSandboxRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rt.StreamPodSandboxes(c, &runtimeapi.StreamPodSandboxesRequest{Filter: f})
		got, err := recvAll(t, "pods "+name, stream, err, (*runtimeapi.StreamPodSandboxesResponse).GetPodSandboxes)
		if err != nil {
			t.Fatalf("StreamPodSandboxes %s: %v", name, err)
		}
		min := map[string]int{"all": 3, "id": 1, "id prefix": 1, "ready": 3, "notready": 0, "labels": 2}[name]
		sameSet(t, "pods "+name, ids(list.Items, (*runtimeapi.PodSandbox).GetId), ids(got, (*runtimeapi.PodSandbox).GetId), min)
	}

	// Containers.
	for name, f := range map[string]*runtimeapi.ContainerFilter{
		"all":     nil,
		"id":      {Id: ctrIDs[0]},
		"pod":     {PodSandboxId: podIDs[1]},
		"running": {State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_RUNNING}},
		"exited":  {State: &runtimeapi.ContainerStateValue{State: runtimeapi.ContainerState_CONTAINER_EXITED}},
		"labels":  {LabelSelector: map[string]string{"group": "a"}},
	} {
		list, err := rt.ListContainers(c, &runtimeapi.ListContainersRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rt.StreamContainers(c, &runtimeapi.StreamContainersRequest{Filter: f})
		got, err := recvAll(t, "containers "+name, stream, err, (*runtimeapi.StreamContainersResponse).GetContainers)
		if err != nil {
			t.Fatalf("StreamContainers %s: %v", name, err)
		}
		min := map[string]int{"all": 3, "id": 1, "pod": 1, "running": 3, "exited": 0, "labels": 2}[name]
		sameSet(t, "containers "+name, ids(list.Containers, (*runtimeapi.Container).GetId), ids(got, (*runtimeapi.Container).GetId), min)
	}

	// Container stats.
	ctrStatsID := func(s *runtimeapi.ContainerStats) string { return s.GetAttributes().GetId() }
	for name, f := range map[string]*runtimeapi.ContainerStatsFilter{
		"all":    nil,
		"id":     {Id: ctrIDs[2]},
		"pod":    {PodSandboxId: podIDs[0]},
		"labels": {LabelSelector: map[string]string{"group": "a"}},
	} {
		list, err := rt.ListContainerStats(c, &runtimeapi.ListContainerStatsRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rt.StreamContainerStats(c, &runtimeapi.StreamContainerStatsRequest{Filter: f})
		got, err := recvAll(t, "container stats "+name, stream, err, (*runtimeapi.StreamContainerStatsResponse).GetContainerStats)
		if err != nil {
			t.Fatalf("StreamContainerStats %s: %v", name, err)
		}
		min := map[string]int{"all": 3, "id": 1, "pod": 1, "labels": 2}[name]
		sameSet(t, "container stats "+name, ids(list.Stats, ctrStatsID), ids(got, ctrStatsID), min)
	}

	// Pod stats.
	podStatsID := func(s *runtimeapi.PodSandboxStats) string { return s.GetAttributes().GetId() }
	for name, f := range map[string]*runtimeapi.PodSandboxStatsFilter{
		"all":    nil,
		"id":     {Id: podIDs[0]},
		"labels": {LabelSelector: podLabel},
	} {
		list, err := rt.ListPodSandboxStats(c, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rt.StreamPodSandboxStats(c, &runtimeapi.StreamPodSandboxStatsRequest{Filter: f})
		got, err := recvAll(t, "pod stats "+name, stream, err, (*runtimeapi.StreamPodSandboxStatsResponse).GetPodSandboxStats)
		if err != nil {
			t.Fatalf("StreamPodSandboxStats %s: %v", name, err)
		}
		min := map[string]int{"all": 3, "id": 1, "labels": 2}[name]
		sameSet(t, "pod stats "+name, ids(list.Stats, podStatsID), ids(got, podStatsID), min)
	}

	// Pod metrics: no filter; every ready pod.
	{
		list, err := rt.ListPodSandboxMetrics(c, &runtimeapi.ListPodSandboxMetricsRequest{})
		if err != nil {
			t.Fatal(err)
		}
		stream, err := rt.StreamPodSandboxMetrics(c, &runtimeapi.StreamPodSandboxMetricsRequest{})
		got, err := recvAll(t, "pod metrics", stream, err, (*runtimeapi.StreamPodSandboxMetricsResponse).GetPodSandboxMetrics)
		if err != nil {
			t.Fatalf("StreamPodSandboxMetrics: %v", err)
		}
		id := (*runtimeapi.PodSandboxMetrics).GetPodSandboxId
		sameSet(t, "pod metrics", ids(list.PodMetrics, id), ids(got, id), 3)
		for _, pm := range got {
			if len(pm.ContainerMetrics) != 1 || len(pm.ContainerMetrics[0].Metrics) == 0 {
				t.Errorf("streamed metrics of pod %s lack its container's", pm.PodSandboxId)
			}
		}
	}

	// Images, including a malformed filter: both calls fail the same way.
	for name, f := range map[string]*runtimeapi.ImageFilter{
		"all":   nil,
		"ref":   {Image: &runtimeapi.ImageSpec{Image: busybox}},
		"name":  {Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/pause"}},
		"none":  {Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/nothing-here:1"}},
		"wrong": {Image: &runtimeapi.ImageSpec{Image: "registry.k8s.io/UPPER"}},
	} {
		list, listErr := img.ListImages(c, &runtimeapi.ListImagesRequest{Filter: f})
		stream, err := img.StreamImages(c, &runtimeapi.StreamImagesRequest{Filter: f})
		got, err := recvAll(t, "images "+name, stream, err, (*runtimeapi.StreamImagesResponse).GetImages)
		if status.Code(err) != status.Code(listErr) {
			t.Fatalf("images %s: stream error %v, list error %v", name, err, listErr)
		}
		if (listErr != nil) != (name == "wrong") {
			t.Fatalf("ListImages %s: %v", name, listErr)
		}
		if listErr != nil {
			continue
		}
		min := map[string]int{"all": 2, "ref": 1, "name": 1, "none": 0}[name]
		sameSet(t, "images "+name, ids(list.Images, (*runtimeapi.Image).GetId), ids(got, (*runtimeapi.Image).GetId), min)
	}

	// UpdatePodSandboxResources: best effort, nothing to change, but the pod
	// must exist.
	_, err := rt.UpdatePodSandboxResources(c, &runtimeapi.UpdatePodSandboxResourcesRequest{PodSandboxId: "0123456789abcdef"})
	if status.Code(err) != codes.NotFound {
		t.Fatalf("UpdatePodSandboxResources of an unknown pod: %v", err)
	}
	if _, err := rt.UpdatePodSandboxResources(c, &runtimeapi.UpdatePodSandboxResourcesRequest{}); status.Code(err) != codes.InvalidArgument {
		t.Fatalf("UpdatePodSandboxResources without an ID: %v", err)
	}
	if _, err := rt.UpdatePodSandboxResources(c, &runtimeapi.UpdatePodSandboxResourcesRequest{
		PodSandboxId: podIDs[0],
		Overhead:     &runtimeapi.LinuxContainerResources{CpuShares: 10},
		Resources:    &runtimeapi.LinuxContainerResources{CpuShares: 512, MemoryLimitInBytes: 128 << 20},
	}); err != nil {
		t.Fatalf("UpdatePodSandboxResources of a running pod: %v", err)
	}
	if st, _ := i.status(t, podIDs[0]); st.State != runtimeapi.PodSandboxState_SANDBOX_READY {
		t.Fatalf("pod after UpdatePodSandboxResources: %v", st.State)
	}
}

package integration

import (
	"context"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// The kubelet's evented PLEG reads a pod's containers from PodSandboxStatus
// (containers_statuses, timestamp) and from each event; it forgets a pod on
// the sandbox's CONTAINER_DELETED_EVENT only if that event carries the
// pod's status (a nil one is dropped with an error).
func TestPodSandboxStatusCarriesContainersForEventedPLEG(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	podID, pod := i.podWithLogs(t, "pleg")
	done := i.run(t, podID, pod, ctrConfig("done", "exit 3"))
	i.waitExited(t, done, 10*time.Second)
	live := i.run(t, podID, pod, ctrConfig("live", "sleep 60"))
	before := time.Now().UnixNano()
	resp, err := i.rt.PodSandboxStatus(ctx(t), &runtimeapi.PodSandboxStatusRequest{PodSandboxId: podID})
	after := time.Now().UnixNano()
	if err != nil {
		t.Fatal(err)
	}
	if resp.Timestamp < before || resp.Timestamp > after {
		t.Fatalf("timestamp %d not within the call [%d, %d]", resp.Timestamp, before, after)
	}
	byID := map[string]*runtimeapi.ContainerStatus{}
	for _, cs := range resp.ContainersStatuses {
		byID[cs.Id] = cs
	}
	if len(byID) != 2 || byID[done].GetState() != runtimeapi.ContainerState_CONTAINER_EXITED || byID[done].ExitCode != 3 ||
		byID[live].GetState() != runtimeapi.ContainerState_CONTAINER_RUNNING || byID[live].GetMetadata().GetName() != "live" {
		t.Fatalf("containers_statuses: %v", resp.ContainersStatuses)
	}

	// The sandbox's own deleted event still names the pod.
	sctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	stream, err := i.rt.GetContainerEvents(sctx, &runtimeapi.GetEventsRequest{})
	if err != nil {
		t.Fatal(err)
	}
	got := make(chan *runtimeapi.ContainerEventResponse, 100)
	go func() {
		defer close(got)
		for {
			e, err := stream.Recv()
			if err != nil {
				return
			}
			got <- e
		}
	}()
	time.Sleep(100 * time.Millisecond) // the subscription is in place
	i.stopRemove(t, podID)
	deadline := time.After(10 * time.Second)
	for {
		select {
		case e, ok := <-got:
			if !ok {
				t.Fatal("event stream ended")
			}
			if e.CreatedAt <= 0 {
				t.Fatalf("event %v without created_at", e.ContainerEventType)
			}
			if e.PodSandboxStatus.GetMetadata().GetUid() != pod.Metadata.Uid || e.PodSandboxStatus.GetId() != podID {
				t.Fatalf("%v for %s carries pod status %v", e.ContainerEventType, e.ContainerId, e.PodSandboxStatus)
			}
			if e.ContainerId == podID && e.ContainerEventType == runtimeapi.ContainerEventType_CONTAINER_DELETED_EVENT {
				if e.PodSandboxStatus.State != runtimeapi.PodSandboxState_SANDBOX_NOTREADY || len(e.ContainersStatuses) != 0 {
					t.Fatalf("deleted pod reads %v with %d containers", e.PodSandboxStatus.State, len(e.ContainersStatuses))
				}
				return
			}
		case <-deadline:
			t.Fatal("no CONTAINER_DELETED_EVENT for the sandbox")
		}
	}
}

// ContainerStatus reports the signal StopContainer sends: the config's,
// else the image's, else SIGTERM, real-time ones included.
func TestContainerStatusReportsEffectiveStopSignal(t *testing.T) {
	const httpd = "registry.k8s.io/e2e-test-images/httpd:2.4.39-4" // STOPSIGNAL SIGWINCH
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, httpd)
	podID, pod := i.podWithLogs(t, "stopsig")
	image := ctrConfig("image", "sleep 60")
	image.Image.Image = httpd
	override := ctrConfig("override", "sleep 60")
	override.Image.Image = httpd
	override.StopSignal = runtimeapi.Signal_SIGNAL_SIGUSR1
	rt := ctrConfig("rt", "trap 'exit 36' 36; while :; do sleep 0.1; done")
	rt.StopSignal = runtimeapi.Signal_SIGNAL_SIGRTMINPLUS2
	for cfg, want := range map[*runtimeapi.ContainerConfig]runtimeapi.Signal{
		ctrConfig("default", "sleep 60"): runtimeapi.Signal_SIGNAL_SIGTERM,
		image:                            runtimeapi.Signal_SIGNAL_SIGWINCH,
		override:                         runtimeapi.Signal_SIGNAL_SIGUSR1,
		rt:                               runtimeapi.Signal_SIGNAL_SIGRTMINPLUS2,
	} {
		id := i.run(t, podID, pod, cfg)
		if got := i.ctrStatus(t, id).StopSignal; got != want {
			t.Errorf("%s: stop_signal %v, want %v", cfg.Metadata.Name, got, want)
		}
		if cfg == rt {
			// SIGRTMIN+2 is what StopContainer sends (it used to be SIGTERM).
			time.Sleep(200 * time.Millisecond) // the trap is set
			if _, err := i.rt.StopContainer(ctx(t), &runtimeapi.StopContainerRequest{ContainerId: id, Timeout: 10}); err != nil {
				t.Fatal(err)
			}
			if st := i.ctrStatus(t, id); st.ExitCode != 36 {
				t.Errorf("stopped with SIGRTMIN+2, exit code %d, want 36 from the trap", st.ExitCode)
			}
		}
	}
	i.stopRemove(t, podID)
}

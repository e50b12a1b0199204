package container

import (
	"context"
	"fmt"
	"os"
	"testing"

	"github.com/minicri/minicri/stats"
)

type onePod struct{ pod PodInfo }

func (p onePod) Pod(id string) (PodInfo, error) {
	if id != p.pod.ID {
		return PodInfo{}, fmt.Errorf("%w: pod %s", ErrNotFound, id)
	}
	return p.pod, nil
}

// The kubelet reads every pod's stats every few seconds for the node's whole
// life: the CPU samples kept for the rates must go with the pod.
func TestRemovePodForgetsItsRates(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("reads cgroups as root")
	}
	pod := PodInfo{ID: "pod-rates", CgroupPath: "/pod-rates"}
	m := &Manager{opts: Options{Pods: onePod{pod}}, store: newStore(), names: newNames(),
		rates: stats.NewRates(), metrics: stats.NewCache()}
	if _, err := m.PodStats(pod.ID); err != nil {
		t.Fatal(err)
	}
	if m.rates.Len() == 0 {
		t.Fatal("PodStats kept no CPU sample: the test cannot see what RemovePod forgets")
	}
	if err := m.RemovePod(context.Background(), pod.ID); err != nil {
		t.Fatal(err)
	}
	if n := m.rates.Len(); n != 0 {
		t.Fatalf("rates still hold %d samples after the pod was removed", n)
	}
}

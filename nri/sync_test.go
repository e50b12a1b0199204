package nri

import (
	"context"
	"errors"
	"log/slog"
	"testing"
	"time"

	"github.com/containerd/nri/pkg/api"
	specs "github.com/opencontainers/runtime-spec/specs-go"

	"github.com/minicri/minicri/hook"
)

// fakeContainers records what NRI asks of the containers.
type fakeContainers struct {
	res     map[string]*specs.LinuxResources
	stopped []string
}

func (f *fakeContainers) Containers() []hook.Container { return nil }
func (f *fakeContainers) Stop(_ context.Context, id string, _ time.Duration) error {
	f.stopped = append(f.stopped, id)
	return nil
}

func (f *fakeContainers) InjectCDIDevices(*specs.Spec, []string) error { return nil }

func (f *fakeContainers) AdjustResources(_ context.Context, id string, adjust func(*specs.LinuxResources) error) error {
	r, ok := f.res[id]
	if !ok {
		return errors.New("no such container")
	}
	return adjust(r)
}

// Plugins' updates are merged into the containers' resources (a failing
// one reported unless it may fail), evictions stop the containers.
func TestUpdatesAndEvictions(t *testing.T) {
	quota := int64(1000)
	f := &fakeContainers{res: map[string]*specs.LinuxResources{"a": {CPU: &specs.LinuxCPU{Quota: &quota}}}}
	n := &NRI{ctrs: f, log: slog.Default()}
	ok := &api.ContainerUpdate{ContainerId: "a", Linux: &api.LinuxContainerUpdate{}}
	ok.SetLinuxMemoryLimit(1 << 20)
	bad := &api.ContainerUpdate{ContainerId: "gone", Linux: &api.LinuxContainerUpdate{}}
	bad.SetLinuxMemoryLimit(1 << 20)
	ignored := &api.ContainerUpdate{ContainerId: "gone2", IgnoreFailure: true, Linux: &api.LinuxContainerUpdate{}}
	ignored.SetLinuxCPUShares(2)

	failed, err := n.updateContainers(context.Background(), []*api.ContainerUpdate{ok, bad, ignored})
	if err == nil || len(failed) != 2 {
		t.Fatalf("failed %v, err %v: want both failures listed, an error for the one that may not fail", failed, err)
	}
	if r := f.res["a"]; *r.Memory.Limit != 1<<20 || *r.CPU.Quota != 1000 {
		t.Fatalf("merged resources: %+v %+v", r.Memory, r.CPU)
	}
	if failed, err := n.updateContainers(context.Background(), []*api.ContainerUpdate{ignored}); err != nil || len(failed) != 1 {
		t.Fatalf("an update allowed to fail: failed %v, err %v", failed, err)
	}

	n.apply(context.Background(), nil, []*api.ContainerEviction{{ContainerId: "a", Reason: "test"}})
	if len(f.stopped) != 1 || f.stopped[0] != "a" {
		t.Fatalf("evictions stopped %v", f.stopped)
	}
}

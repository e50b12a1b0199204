package server

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"reflect"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"

	"github.com/minicri/minicri/container"
	"github.com/minicri/minicri/image"
	"github.com/minicri/minicri/sandbox"
)

// fakeStream is the server side of a server-streaming RPC: it records what
// is sent. onSend, when set, runs before each Send is recorded (n counts
// from 1) and can fail it.
type fakeStream[R any] struct {
	grpc.ServerStream // nil: only Context and Send are used
	ctx               context.Context
	sent              []*R
	onSend            func(n int) error
}

func (f *fakeStream[R]) Context() context.Context { return f.ctx }

func (f *fakeStream[R]) Send(r *R) error {
	if f.onSend != nil {
		if err := f.onSend(len(f.sent) + 1); err != nil {
			return err
		}
	}
	f.sent = append(f.sent, r)
	return nil
}

func newStream[R any]() *fakeStream[R] { return &fakeStream[R]{ctx: context.Background()} }

type batchMsg struct{ items []*runtimeapi.PodSandbox }

func pods(n int) []*runtimeapi.PodSandbox {
	out := make([]*runtimeapi.PodSandbox, n)
	for i := range out {
		out[i] = &runtimeapi.PodSandbox{Id: fmt.Sprintf("pod-%04d", i)}
	}
	return out
}

func sizes[T any](bs [][]T) []int {
	var out []int
	for _, b := range bs {
		out = append(out, len(b))
	}
	return out
}

func TestSendBatchesSplitsByCountEachItemOnceInOrder(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want []int
	}{
		{0, nil},
		{1, []int{1}},
		{99, []int{99}},
		{100, []int{100}},
		{101, []int{100, 1}},
		{250, []int{100, 100, 50}},
	} {
		items := pods(tc.n)
		st := newStream[batchMsg]()
		err := sendBatches(context.Background(), st, items, func(b []*runtimeapi.PodSandbox) *batchMsg { return &batchMsg{b} })
		if err != nil {
			t.Fatalf("%d items: %v", tc.n, err)
		}
		var got []int
		var all []*runtimeapi.PodSandbox
		for _, m := range st.sent {
			got = append(got, len(m.items))
			all = append(all, m.items...)
		}
		if !reflect.DeepEqual(got, tc.want) {
			t.Errorf("%d items: batch sizes %v, want %v", tc.n, got, tc.want)
		}
		if len(all) != len(items) || (len(items) > 0 && !reflect.DeepEqual(all, items)) {
			t.Errorf("%d items: not every item exactly once in order", tc.n)
		}
	}
}

func TestBatchesCapEncodedBytesButNeverSendEmptyLists(t *testing.T) {
	big := func(n int) *runtimeapi.PodSandbox {
		return &runtimeapi.PodSandbox{Id: "p", Annotations: map[string]string{"a": strings.Repeat("x", n)}}
	}
	const limit = 1000
	items := []*runtimeapi.PodSandbox{big(400), big(400), big(400), big(3000), big(10), big(10)}
	got := batches(items, 100, limit)
	if want := []int{2, 1, 1, 2}; !reflect.DeepEqual(sizes(got), want) {
		t.Fatalf("batch sizes %v, want %v", sizes(got), want)
	}
	for _, b := range got {
		total := 0
		for _, it := range b {
			total += proto.Size(it)
		}
		if total > limit && len(b) > 1 {
			t.Errorf("a batch of %d items holds %d bytes", len(b), total)
		}
	}
}

func TestSendBatchesStopsWhenTheClientContextEnds(t *testing.T) {
	wrap := func(b []*runtimeapi.PodSandbox) *batchMsg { return &batchMsg{b} }

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	st := &fakeStream[batchMsg]{ctx: ctx}
	if err := sendBatches(ctx, st, pods(10), wrap); !errors.Is(err, context.Canceled) || len(st.sent) != 0 {
		t.Fatalf("cancelled before the first batch: err %v, %d sent", err, len(st.sent))
	}

	ctx, cancel = context.WithCancel(context.Background())
	st = &fakeStream[batchMsg]{ctx: ctx, onSend: func(n int) error {
		if n == 1 {
			cancel()
		}
		return nil
	}}
	if err := sendBatches(ctx, st, pods(350), wrap); !errors.Is(err, context.Canceled) || len(st.sent) != 1 {
		t.Fatalf("cancelled during the first Send: err %v, %d sent", err, len(st.sent))
	}

	boom := errors.New("transport closed")
	st = &fakeStream[batchMsg]{ctx: context.Background(), onSend: func(n int) error {
		if n == 2 {
			return boom
		}
		return nil
	}}
	if err := sendBatches(context.Background(), st, pods(350), wrap); !errors.Is(err, boom) || len(st.sent) != 1 {
		t.Fatalf("failing Send: err %v, %d sent", err, len(st.sent))
	}
}

// fakeSandboxes is a sandbox manager over a fixed list; it records the last
// filter List saw and filters by ID prefix and labels.
type fakeSandboxes struct {
	infos []sandbox.Info
	last  sandbox.Filter
}

func (f *fakeSandboxes) Run(context.Context, sandbox.Config) (string, error) { return "", nil }
func (f *fakeSandboxes) Stop(context.Context, string) error                  { return nil }
func (f *fakeSandboxes) Remove(context.Context, string) error                { return nil }
func (f *fakeSandboxes) UpdateResources(context.Context, string, *sandbox.PodResources, *sandbox.PodResources) error {
	return nil
}

func (f *fakeSandboxes) Get(id string) (sandbox.Info, error) {
	for _, in := range f.infos {
		if strings.HasPrefix(in.ID, id) {
			return in, nil
		}
	}
	return sandbox.Info{}, fmt.Errorf("%w: %s", sandbox.ErrNotFound, id)
}

func (f *fakeSandboxes) List(flt sandbox.Filter) []sandbox.Info {
	f.last = flt
	var out []sandbox.Info
	for _, in := range f.infos {
		if !strings.HasPrefix(in.ID, flt.ID) || (flt.State != nil && (*flt.State == sandbox.StateReady) != in.Ready) {
			continue
		}
		ok := true
		for k, v := range flt.LabelSelector {
			ok = ok && in.Config.Labels[k] == v
		}
		if ok {
			out = append(out, in)
		}
	}
	return out
}

// fakeContainers serves the list and stats calls the list RPCs make.
type fakeContainers struct {
	Containers // nil: other calls panic
	infos      []container.Info
	last       container.Filter
	lastStats  container.Filter
}

func (f *fakeContainers) List(flt container.Filter) []container.Info {
	f.last = flt
	var out []container.Info
	for _, c := range f.infos {
		if strings.HasPrefix(c.PodID, flt.PodID) && strings.HasPrefix(c.ID, flt.ID) {
			out = append(out, c)
		}
	}
	return out
}

func (f *fakeContainers) ListStats(flt container.Filter) []container.Stats {
	f.lastStats = flt
	var out []container.Stats
	for _, c := range f.List(flt) {
		out = append(out, container.Stats{Info: c})
	}
	return out
}

func (f *fakeContainers) PodStats(podID string) (container.PodStats, error) {
	if strings.HasSuffix(podID, "7") { // a pod whose stats cannot be read is left out
		return container.PodStats{}, errors.New("no cgroup")
	}
	return container.PodStats{PodID: podID}, nil
}

func (f *fakeContainers) PodMetrics(podID string) (container.PodSample, error) {
	return container.PodSample{PodID: podID, CgroupPath: "/minicri/" + podID, Timestamp: time.Unix(1, 0)}, nil
}

type fakeImages struct {
	Images // nil: other calls panic
	imgs   []image.Image
	err    error
}

func (f *fakeImages) List(filter string) ([]image.Image, error) {
	if f.err != nil {
		return nil, f.err
	}
	var out []image.Image
	for _, img := range f.imgs {
		if filter == "" || img.ID == filter {
			out = append(out, img)
		}
	}
	return out, nil
}

func testServer(t *testing.T, n int) (*Server, *fakeSandboxes, *fakeContainers, *bytes.Buffer) {
	t.Helper()
	sbs := &fakeSandboxes{}
	ctrs := &fakeContainers{}
	imgs := &fakeImages{}
	for i := range n {
		id := fmt.Sprintf("pod%04d", i)
		info := sandbox.Info{Ready: i%3 != 0}
		info.ID = id
		info.Config.Metadata = sandbox.Metadata{Name: id, Namespace: "ns", UID: "uid-" + id}
		info.Config.Labels = map[string]string{"parity": fmt.Sprint(i % 2)}
		sbs.infos = append(sbs.infos, info)
		var c container.Info
		c.ID, c.PodID = fmt.Sprintf("ctr%04d", i), id
		c.Config.Name = "c"
		ctrs.infos = append(ctrs.infos, c)
		imgs.imgs = append(imgs.imgs, image.Image{ID: fmt.Sprintf("sha256:%04d", i), User: "0"})
	}
	var logs bytes.Buffer
	s := New(Deps{Sandboxes: sbs, Containers: ctrs, Images: imgs,
		Log: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))})
	return s, sbs, ctrs, &logs
}

// sameItems fails unless streamed holds exactly the items of listed, in
// order, and no message is empty.
func sameItems[T proto.Message](t *testing.T, name string, listed []T, msgs [][]T) {
	t.Helper()
	var streamed []T
	for _, m := range msgs {
		if len(m) == 0 {
			t.Errorf("%s: an empty message", name)
		}
		if len(m) > streamBatchItems {
			t.Errorf("%s: a message of %d items", name, len(m))
		}
		streamed = append(streamed, m...)
	}
	if len(streamed) != len(listed) {
		t.Fatalf("%s: streamed %d items, listed %d", name, len(streamed), len(listed))
	}
	for i := range listed {
		if !proto.Equal(listed[i], streamed[i]) {
			t.Fatalf("%s: item %d differs:\nlist   %v\nstream %v", name, i, listed[i], streamed[i])
		}
	}
}

func TestStreamRPCsReturnWhatTheirListRPCsReturn(t *testing.T) {
	s, sbs, ctrs, _ := testServer(t, 250)
	bg := context.Background()

	for _, f := range []*runtimeapi.PodSandboxFilter{
		nil,
		{LabelSelector: map[string]string{"parity": "1"}},
		{State: &runtimeapi.PodSandboxStateValue{State: runtimeapi.PodSandboxState_SANDBOX_READY}},
		{Id: "pod01"},
		{Id: "nope"},
	} {
		list, err := s.ListPodSandbox(bg, &runtimeapi.ListPodSandboxRequest{Filter: f})
		if err != nil {
			t.Fatal(err)
		}
		listFilter := sbs.last
		st := newStream[runtimeapi.StreamPodSandboxesResponse]()
		if err := s.StreamPodSandboxes(&runtimeapi.StreamPodSandboxesRequest{Filter: f}, st); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(sbs.last, listFilter) {
			t.Errorf("pods %v: stream filter %+v, list filter %+v", f, sbs.last, listFilter)
		}
		var msgs [][]*runtimeapi.PodSandbox
		for _, m := range st.sent {
			msgs = append(msgs, m.PodSandboxes)
		}
		sameItems(t, fmt.Sprintf("pods %v", f), list.Items, msgs)
	}

	for _, f := range []*runtimeapi.ContainerFilter{nil, {PodSandboxId: "pod00"}, {Id: "ctr0042"}} {
		list, _ := s.ListContainers(bg, &runtimeapi.ListContainersRequest{Filter: f})
		listFilter := ctrs.last
		st := newStream[runtimeapi.StreamContainersResponse]()
		if err := s.StreamContainers(&runtimeapi.StreamContainersRequest{Filter: f}, st); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ctrs.last, listFilter) {
			t.Errorf("containers %v: stream filter %+v, list filter %+v", f, ctrs.last, listFilter)
		}
		var msgs [][]*runtimeapi.Container
		for _, m := range st.sent {
			msgs = append(msgs, m.Containers)
		}
		sameItems(t, fmt.Sprintf("containers %v", f), list.Containers, msgs)
	}

	for _, f := range []*runtimeapi.ContainerStatsFilter{nil, {PodSandboxId: "pod01"}} {
		list, _ := s.ListContainerStats(bg, &runtimeapi.ListContainerStatsRequest{Filter: f})
		listFilter := ctrs.lastStats
		st := newStream[runtimeapi.StreamContainerStatsResponse]()
		if err := s.StreamContainerStats(&runtimeapi.StreamContainerStatsRequest{Filter: f}, st); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(ctrs.lastStats, listFilter) {
			t.Errorf("container stats %v: stream filter %+v, list filter %+v", f, ctrs.lastStats, listFilter)
		}
		var msgs [][]*runtimeapi.ContainerStats
		for _, m := range st.sent {
			msgs = append(msgs, m.ContainerStats)
		}
		sameItems(t, fmt.Sprintf("container stats %v", f), list.Stats, msgs)
	}

	for _, f := range []*runtimeapi.PodSandboxStatsFilter{nil, {LabelSelector: map[string]string{"parity": "0"}}} {
		list, _ := s.ListPodSandboxStats(bg, &runtimeapi.ListPodSandboxStatsRequest{Filter: f})
		st := newStream[runtimeapi.StreamPodSandboxStatsResponse]()
		if err := s.StreamPodSandboxStats(&runtimeapi.StreamPodSandboxStatsRequest{Filter: f}, st); err != nil {
			t.Fatal(err)
		}
		var msgs [][]*runtimeapi.PodSandboxStats
		for _, m := range st.sent {
			msgs = append(msgs, m.PodSandboxStats)
		}
		sameItems(t, fmt.Sprintf("pod stats %v", f), list.Stats, msgs)
	}

	{
		list, _ := s.ListPodSandboxMetrics(bg, &runtimeapi.ListPodSandboxMetricsRequest{})
		st := newStream[runtimeapi.StreamPodSandboxMetricsResponse]()
		if err := s.StreamPodSandboxMetrics(&runtimeapi.StreamPodSandboxMetricsRequest{}, st); err != nil {
			t.Fatal(err)
		}
		var msgs [][]*runtimeapi.PodSandboxMetrics
		for _, m := range st.sent {
			msgs = append(msgs, m.PodSandboxMetrics)
		}
		sameItems(t, "pod metrics", list.PodMetrics, msgs)
	}

	for _, f := range []*runtimeapi.ImageFilter{nil, {Image: &runtimeapi.ImageSpec{Image: "sha256:0007"}}} {
		list, _ := s.ListImages(bg, &runtimeapi.ListImagesRequest{Filter: f})
		st := newStream[runtimeapi.StreamImagesResponse]()
		if err := s.StreamImages(&runtimeapi.StreamImagesRequest{Filter: f}, st); err != nil {
			t.Fatal(err)
		}
		var msgs [][]*runtimeapi.Image
		for _, m := range st.sent {
			msgs = append(msgs, m.Images)
		}
		sameItems(t, fmt.Sprintf("images %v", f), list.Images, msgs)
	}
}

func TestStreamRPCsMapErrorsAndHonourACancelledClient(t *testing.T) {
	s, _, _, logs := testServer(t, 5)
	s.images.(*fakeImages).err = fmt.Errorf("parse: %w", image.ErrInvalidReference)
	st := newStream[runtimeapi.StreamImagesResponse]()
	err := s.StreamImages(&runtimeapi.StreamImagesRequest{}, st)
	if status.Code(err) != codes.InvalidArgument || len(st.sent) != 0 {
		t.Fatalf("failing image list: %v, %d sent", err, len(st.sent))
	}
	if !strings.Contains(logs.String(), "StreamImages") {
		t.Errorf("the failure is not logged: %s", logs)
	}

	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	ps := &fakeStream[runtimeapi.StreamPodSandboxesResponse]{ctx: ctx}
	if err := s.StreamPodSandboxes(&runtimeapi.StreamPodSandboxesRequest{}, ps); status.Code(err) != codes.Canceled || len(ps.sent) != 0 {
		t.Fatalf("cancelled client: %v, %d sent", err, len(ps.sent))
	}
}

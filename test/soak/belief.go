package main

import (
	"fmt"
	"sort"
	"sync"
	"sync/atomic"
	"time"
)

// pod is what the client believes of one pod it made.
type pod struct {
	slot int
	name string // metadata name, also the "soak.uid" label
	id   string
	info podInfo
	// The pause and the monitor (containerd: the shim) by pid and start time.
	pauseRef, monitorRef procRef
	logDir               string
	logger               string // container that logs numbered lines, never stopped until teardown
	// The logger's setup (its httpd and page) ran between these; a full
	// root then leaves the pod nothing to serve.
	setupFrom, setupBy time.Time
	exiter             string // container that exits with exitCode after exitAfter
	exitCode           int32
	exitFrom           time.Time // the exiter exits between exitFrom (its exit time
	exitAt             time.Time // were it started at once) and exitAt (at its start's answer)
	procs              []procRef // the containers' inits, by pid and start time

	faulted atomic.Bool // its monitor was killed
	steady  atomic.Bool // set up and probed: a monitor kill may pick it
}

// procRef names a process across pid reuse: its pid and start time.
type procRef struct {
	pid   int
	start string
}

// podInfo is the part of PodSandboxStatus's verbose info the soak uses.
type podInfo struct {
	PID        int    `json:"pid"`
	MonitorPID int    `json:"monitorPid"`
	NetNS      string `json:"netNamespacePath"`
	Cgroup     string `json:"cgroupPath"`
}

// belief is the set of pods the client believes exist, and the images.
type belief struct {
	mu     sync.Mutex
	pods   map[string]*pod
	images map[string]bool
}

func newBelief() *belief { return &belief{pods: map[string]*pod{}, images: map[string]bool{}} }

func (b *belief) add(p *pod) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pods[p.id] = p
}

func (b *belief) remove(id string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.pods, id)
}

func (b *belief) all() []*pod {
	b.mu.Lock()
	defer b.mu.Unlock()
	out := make([]*pod, 0, len(b.pods))
	for _, p := range b.pods {
		out = append(out, p)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].name < out[j].name })
	return out
}

// steadyPods are the pods a monitor kill may hit.
func (b *belief) steadyPods() []*pod {
	var out []*pod
	for _, p := range b.all() {
		if p.steady.Load() && !p.faulted.Load() {
			out = append(out, p)
		}
	}
	return out
}

func (b *belief) setImage(ref string, present bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.images[ref] = present
}

func (b *belief) image(ref string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.images[ref]
}

// findings collects what the soak found wrong, by kind, and the pods the
// runtime left stuck.
type findings struct {
	mu    sync.Mutex
	byKey map[string][]string
	count atomic.Int64
	stuck map[string]string // pod (or id) -> why, the first reason
}

func newFindings() *findings {
	return &findings{byKey: map[string][]string{}, stuck: map[string]string{}}
}

// stuckPod records a pod the runtime left stuck: its creation past its
// deadline, its stop or removal failing, not NOTREADY after its monitor
// died, or not as the client believes once the node converged. Each is
// also a finding of its own kind.
func (f *findings) stuckPod(pod, format string, args ...any) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if _, ok := f.stuck[pod]; !ok {
		f.stuck[pod] = fmt.Sprintf(format, args...)
	}
}

func (f *findings) add(kind, format string, args ...any) {
	msg := time.Now().Format("15:04:05.000 ") + fmt.Sprintf(format, args...)
	f.mu.Lock()
	f.byKey[kind] = append(f.byKey[kind], msg)
	f.mu.Unlock()
	if f.count.Add(1) <= 200 {
		fmt.Printf("FINDING %s: %s\n", kind, msg)
	}
}

func (f *findings) n(kind string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.byKey[kind])
}

func (f *findings) nStuck() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return len(f.stuck)
}

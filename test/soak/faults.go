package main

import (
	"context"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// The kinds of faults, with their weights in the seeded draw.
var faultKinds = []struct {
	kind   string
	weight int
	cni    bool // only on a CNI conflist (SOAK_NETWORK=cni)
}{{"daemon-kill", 35, false}, {"monitor-kill", 35, false}, {"enospc", 15, false}, {"registry-stall", 15, false},
	{"cni-hang", 10, true}, {"cni-fail", 10, true}, {"cni-hang-forever", 5, true}}

// window is a span during which RPC errors are a fault's expected effect.
type window struct {
	kind       string
	start, end time.Time
}

// faults injects faults from a seeded schedule and logs each one.
type faults struct {
	s     *soak
	rng   *rand.Rand
	every time.Duration

	mu      sync.Mutex
	windows []window
	byKind  map[string]int
	skipped map[string]int       // drawn, but not of the runtime's faults
	open    map[string]time.Time // windows still open, by kind
	forever map[string]bool      // pods whose ADD hung for ever, by name
	last    time.Time
	async   sync.WaitGroup // the faults that run on
	quietAt time.Time      // no daemon kill after this
	endAt   time.Time      // the churn's end
}

// grace after a fault ends during which errors still count as its effect.
const faultGrace = 2 * time.Second

func newFaults(s *soak, seed int64, every time.Duration) *faults {
	return &faults{s: s, rng: rand.New(rand.NewSource(seed)), every: every, byKind: map[string]int{}, open: map[string]time.Time{},
		forever: map[string]bool{}, skipped: map[string]int{}}
}

func (f *faults) begin(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.open[kind] = time.Now()
}

func (f *faults) end(kind string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.windows = append(f.windows, window{kind, f.open[kind], time.Now().Add(faultGrace)})
	delete(f.open, kind)
	f.last = time.Now()
}

// during reports whether [start, end] overlaps a fault of one of kinds (any kind
// when none is named).
func (f *faults) during(start, end time.Time, kinds ...string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	match := func(k string) bool {
		if len(kinds) == 0 {
			return true
		}
		for _, x := range kinds {
			if x == k {
				return true
			}
		}
		return false
	}
	for k, s := range f.open {
		if match(k) && !s.After(end) {
			return true
		}
	}
	for _, w := range f.windows {
		if match(w.kind) && !w.start.After(end) && !w.end.Before(start) {
			return true
		}
	}
	return false
}

// logf prints a fault line: time since start, kind, detail.
func (f *faults) logf(kind, format string, args ...any) {
	f.mu.Lock()
	f.byKind[kind]++
	n := 0
	for _, c := range f.byKind {
		n += c
	}
	f.mu.Unlock()
	fmt.Printf("fault %3d +%7.1fs %-14s %s\n", n, time.Since(f.s.start).Seconds(), kind, fmt.Sprintf(format, args...))
}

func (f *faults) pick() string {
	total := 0
	for _, k := range faultKinds {
		if f.s.cfg.cni || !k.cni {
			total += k.weight
		}
	}
	n := f.rng.Intn(total)
	for _, k := range faultKinds {
		if !f.s.cfg.cni && k.cni {
			continue
		}
		if n < k.weight {
			return k.kind
		}
		n -= k.weight
	}
	return faultKinds[0].kind
}

// run injects faults until ctx ends: exponential gaps of mean every, each
// fault run to its end before the next.
func (f *faults) run(ctx context.Context) {
	defer f.async.Wait()
	for {
		gap := time.Duration(f.rng.ExpFloat64() * float64(f.every))
		kind := f.pick()
		select {
		case <-ctx.Done():
			return
		case <-time.After(gap):
		}
		if kind == "cni-hang-forever" && time.Until(f.endAt) < foreverNeeds {
			kind = "cni-hang" // no time left for the creation's cap to end it
		}
		if kind == "daemon-kill" && time.Now().After(f.quietAt) {
			kind = "monitor-kill" // the last stretch keeps one daemon, for its slope
		}
		f.inject(kind)
	}
}

// inject runs a kill to its end; a full disk, a CNI fault and a stall run
// on (one of each kind at a time), so that the next fault may land in them.
func (f *faults) inject(kind string) {
	hold := time.Duration(2000+f.rng.Intn(4000)) * time.Millisecond // drawn here: f.rng is this goroutine's
	if why, ok := f.s.inst.daemon.skips()[kind]; ok {
		f.mu.Lock()
		f.skipped[kind]++
		f.mu.Unlock()
		fmt.Printf("fault skip +%7.1fs %-14s %s\n", time.Since(f.s.start).Seconds(), kind, why)
		return
	}
	async := map[string]func(){"enospc": func() { f.enospc(hold) }, "cni-hang": func() { f.cniFault("hang") },
		"cni-hang-forever": func() { f.cniFault("hang-forever") },
		"cni-fail":         func() { f.cniFault("fail") }}
	switch kind {
	case "daemon-kill":
		f.daemonKill()
	case "monitor-kill":
		f.monitorKill()
	case "registry-stall":
		f.registryStall()
	default:
		f.mu.Lock()
		_, busy := f.open[kind]
		_, hang := f.open["cni-hang"]
		_, fail := f.open["cni-fail"]
		_, forever := f.open["cni-hang-forever"]
		busy = busy || (kind != "enospc" && (hang || fail || forever))
		if !busy {
			f.open[kind] = time.Now()
			f.async.Add(1)
		}
		f.mu.Unlock()
		if !busy {
			go func() { defer f.async.Done(); async[kind]() }()
		}
	}
}

func (f *faults) daemonKill() {
	down := time.Duration(f.rng.Intn(1500)) * time.Millisecond
	f.begin("daemon-kill")
	defer f.end("daemon-kill")
	pid := f.s.inst.pid()
	f.s.inst.kill9()
	f.logf("daemon-kill", "kill -9 %s pid %d, restart after %v", f.s.inst.daemon.name(), pid, down)
	time.Sleep(down)
	f.s.restart()
}

// restart starts the daemon again on the same state, retrying for a minute
// (a start may fail while the root is full: it must work once it is not).
func (s *soak) restart() {
	var err error
	for n := 0; n < 60; n++ {
		if err = s.inst.start(); err == nil {
			return
		}
		if !s.flt.during(time.Now(), time.Now(), "enospc") {
			break
		}
		fmt.Printf("soak: %s did not start on a full root, again in 1 s: %.200s\n", s.inst.daemon.name(), err)
		time.Sleep(time.Second)
	}
	s.find.add("restart", "%s did not restart: %v", s.inst.daemon.name(), err)
}

// monitorKill kills the monitor of a steady pod, after checking that the pid
// is still that pod's monitor (its start time, and its command line names
// the instance's dir).
func (f *faults) monitorKill() {
	pods := f.s.bel.steadyPods()
	if len(pods) == 0 {
		return
	}
	p := pods[f.rng.Intn(len(pods))]
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", p.info.MonitorPID))
	if err != nil || !strings.Contains(string(b), f.s.inst.dir) || !p.monitorRef.running() {
		return
	}
	p.faulted.Store(true)
	f.logf("monitor-kill", "kill -9 %s pid %d of pod %s (%s)", f.s.inst.daemon.monitor(), p.info.MonitorPID, p.name, short(p.id))
	_ = syscall.Kill(p.info.MonitorPID, syscall.SIGKILL)
}

func (f *faults) registryStall() {
	d := 10 * time.Second
	f.s.reg.arm(d, func(path string) {
		f.begin("registry-stall")
		f.logf("registry-stall", "GET %s: half the blob, then %v of nothing", path, d)
		go func() { time.Sleep(d); f.end("registry-stall") }()
	})
	f.s.pullNow()
}

func short(id string) string {
	if len(id) > 12 {
		return id[:12]
	}
	return id
}

func (f *faults) lastFault() time.Time {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.last
}

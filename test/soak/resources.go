package main

import (
	"bufio"
	"context"
	"fmt"
	"net/http"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"
)

// sample is one reading of the daemon's resources.
type sample struct {
	at                   time.Time
	pid                  int
	fds, goroutines, rss float64
}

// sampler reads the daemon's fd count (/proc), goroutines and RSS (its
// Prometheus endpoint) every interval.
type sampler struct {
	s       *soak
	mu      sync.Mutex
	samples []sample
}

func (m *sampler) run(ctx context.Context, every time.Duration) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-time.After(every):
		}
		pid := m.s.inst.pid()
		if pid == 0 {
			continue
		}
		ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/fd", pid))
		if err != nil {
			continue
		}
		vals, err := scrape(m.s.inst.daemon.metricsURL(m.s.inst))
		if err != nil || m.s.inst.pid() != pid {
			continue
		}
		m.mu.Lock()
		m.samples = append(m.samples, sample{at: time.Now(), pid: pid, fds: float64(len(ents)),
			goroutines: vals["go_goroutines"], rss: vals["process_resident_memory_bytes"]})
		m.mu.Unlock()
	}
}

func scrape(url string) (map[string]float64, error) {
	c := http.Client{Timeout: 5 * time.Second}
	resp, err := c.Get(url)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) == 2 && !strings.HasPrefix(f[0], "#") {
			if v, err := strconv.ParseFloat(f[1], 64); err == nil {
				out[f[0]] = v
			}
		}
	}
	return out, sc.Err()
}

// slope is the least-squares slope, per minute, of each value within each
// daemon process (one slope, an intercept per process: restarts reset fds,
// goroutines and RSS), counting the samples after each process's first warm
// seconds; span is the time those samples cover.
type slope struct {
	fds, goroutines, rssMiB float64
	span                    time.Duration
	n, procs                int
	last                    sample
}

func (m *sampler) slopes(warm time.Duration) slope {
	m.mu.Lock()
	defer m.mu.Unlock()
	var segs [][]sample
	for i := 0; i < len(m.samples); {
		j := i
		for j < len(m.samples) && m.samples[j].pid == m.samples[i].pid {
			j++
		}
		seg := m.samples[i:j]
		for len(seg) > 0 && seg[0].at.Sub(m.samples[i].at) < warm {
			seg = seg[1:]
		}
		if len(seg) > 1 {
			segs = append(segs, seg)
		}
		i = j
	}
	out := slope{procs: len(segs)}
	for _, seg := range segs {
		out.n += len(seg)
		out.span += seg[len(seg)-1].at.Sub(seg[0].at)
		out.last = seg[len(seg)-1]
	}
	out.fds = pooledSlope(segs, func(x sample) float64 { return x.fds })
	out.goroutines = pooledSlope(segs, func(x sample) float64 { return x.goroutines })
	out.rssMiB = pooledSlope(segs, func(x sample) float64 { return x.rss / (1 << 20) })
	return out
}

// pooledSlope is the within-segment least-squares slope (per minute).
func pooledSlope(segs [][]sample, v func(sample) float64) float64 {
	var sxy, sxx float64
	for _, seg := range segs {
		var mt, my float64
		for _, x := range seg {
			mt += x.at.Sub(seg[0].at).Minutes()
			my += v(x)
		}
		mt, my = mt/float64(len(seg)), my/float64(len(seg))
		for _, x := range seg {
			t := x.at.Sub(seg[0].at).Minutes() - mt
			sxy += t * (v(x) - my)
			sxx += t * t
		}
	}
	if sxx == 0 {
		return 0
	}
	return sxy / sxx
}

// lastProcess is the slope within the last daemon process alone (the run's
// last stretch has no daemon kill).
func (m *sampler) lastProcess(warm time.Duration) slope {
	m.mu.Lock()
	var last []sample
	for i := len(m.samples) - 1; i >= 0 && m.samples[i].pid == m.samples[len(m.samples)-1].pid; i-- {
		last = append([]sample{m.samples[i]}, last...)
	}
	m.mu.Unlock()
	only := sampler{samples: last}
	return only.slopes(warm)
}

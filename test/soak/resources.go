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
		vals, err := scrape("http://" + m.s.inst.metrics + "/metrics")
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

// slope is the least-squares slope, per minute, of the value over the
// longest run of one daemon process, after its first warm seconds.
type slope struct {
	fds, goroutines, rssMiB float64
	span                    time.Duration
	n                       int
	last                    sample
}

func (m *sampler) slopes(warm time.Duration) slope {
	m.mu.Lock()
	defer m.mu.Unlock()
	var best []sample
	for i := 0; i < len(m.samples); {
		j := i
		for j < len(m.samples) && m.samples[j].pid == m.samples[i].pid {
			j++
		}
		seg := m.samples[i:j]
		for len(seg) > 0 && seg[0].at.Sub(m.samples[i].at) < warm {
			seg = seg[1:]
		}
		if len(seg) > 1 && seg[len(seg)-1].at.Sub(seg[0].at) > spanOf(best) {
			best = seg
		}
		i = j
	}
	if len(best) < 2 {
		return slope{n: len(best)}
	}
	fit := func(v func(sample) float64) float64 { return leastSquares(best, v) }
	return slope{fds: fit(func(x sample) float64 { return x.fds }), goroutines: fit(func(x sample) float64 { return x.goroutines }),
		rssMiB: fit(func(x sample) float64 { return x.rss / (1 << 20) }), span: spanOf(best), n: len(best), last: best[len(best)-1]}
}

func spanOf(seg []sample) time.Duration {
	if len(seg) < 2 {
		return 0
	}
	return seg[len(seg)-1].at.Sub(seg[0].at)
}

func leastSquares(seg []sample, v func(sample) float64) float64 {
	var sx, sy, sxx, sxy float64
	n := float64(len(seg))
	for _, x := range seg {
		t := x.at.Sub(seg[0].at).Minutes()
		y := v(x)
		sx, sy, sxx, sxy = sx+t, sy+y, sxx+t*t, sxy+t*y
	}
	d := n*sxx - sx*sx
	if d == 0 {
		return 0
	}
	return (n*sxy - sx*sy) / d
}

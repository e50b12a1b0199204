package main

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/status"
)

// deadlines of the RPCs (the kubelet's runtime-request-timeout is 2 min).
var deadlines = map[string]time.Duration{
	"RunPodSandbox": 60 * time.Second, "PullImage": 60 * time.Second, "ExecSync": 20 * time.Second,
	"StopPodSandbox": 45 * time.Second, "StopContainer": 45 * time.Second, "RemovePodSandbox": 45 * time.Second,
}

const defaultDeadline = 30 * time.Second

// rpcStats records every call's latency and outcome.
type rpcStats struct {
	mu        sync.Mutex
	latencies map[string][]time.Duration
	errors    map[string]int
	missed    []string // past their deadline
	excused   int      // run to their deadline by a fault meant to (a CNI ADD hanging for ever)
	tolerated map[string]int
	sample    map[string]string // the first message of each tolerated key
}

// tolerate counts an error a fault explains, by RPC and gRPC code.
func (s *rpcStats) tolerate(name string, err error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	k := strings.Fields(name)[0] + " " + status.Code(err).String()
	s.tolerated[k]++
	if _, ok := s.sample[k]; !ok {
		s.sample[k] = err.Error()
	}
}

type countRow struct {
	key, sample string
	n           int
}

func (s *rpcStats) toleratedRows() []countRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []countRow
	for k, n := range s.tolerated {
		out = append(out, countRow{k, s.sample[k], n})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].key < out[b].key })
	return out
}

func newRPCStats() *rpcStats {
	return &rpcStats{latencies: map[string][]time.Duration{}, errors: map[string]int{}, tolerated: map[string]int{}, sample: map[string]string{}}
}

// call runs one RPC under its deadline, records its latency, and returns its
// error. A call that ran into its deadline missed it, whatever else went
// on (a DeadlineExceeded the daemon sends, such as a pull's no-progress
// timeout, is an answer in time).
func (s *rpcStats) call(name string, f func(ctx context.Context) error) error {
	return s.callExcused(name, nil, f)
}

// callExcused is call, but a call that ran into its deadline while excuse
// says a fault meant it to is counted as excused, not missed.
func (s *rpcStats) callExcused(name string, excuse func() bool, f func(ctx context.Context) error) error {
	d, ok := deadlines[name]
	if !ok {
		d = defaultDeadline
	}
	ctx, cancel := context.WithTimeout(context.Background(), d)
	defer cancel()
	start := time.Now()
	err := f(ctx)
	lat := time.Since(start)
	s.mu.Lock()
	defer s.mu.Unlock()
	s.latencies[name] = append(s.latencies[name], lat)
	if err != nil {
		s.errors[name]++
		switch {
		case (ctx.Err() != nil || lat >= d) && excuse != nil && excuse():
			s.excused++
		case ctx.Err() != nil || lat >= d:
			s.missed = append(s.missed, fmt.Sprintf("%s %s: %s after %v", start.Format("15:04:05.000"), name, err, lat.Round(time.Millisecond)))
		}
	}
	return err
}

type latencyRow struct {
	name          string
	n, errs       int
	p50, p99, max time.Duration
}

func (s *rpcStats) rows() []latencyRow {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []latencyRow
	for name, l := range s.latencies {
		l = append([]time.Duration(nil), l...)
		sort.Slice(l, func(a, b int) bool { return l[a] < l[b] })
		out = append(out, latencyRow{name: name, n: len(l), errs: s.errors[name],
			p50: l[len(l)/2], p99: l[(len(l)*99)/100], max: l[len(l)-1]})
	}
	sort.Slice(out, func(a, b int) bool { return out[a].name < out[b].name })
	return out
}

func (s *rpcStats) missedDeadlines() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.missed...)
}

func (s *rpcStats) excusedCalls() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.excused
}

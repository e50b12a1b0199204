package main

import (
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

func TestNumberedLines(t *testing.T) {
	ts := "2026-12-03T11:00:00.000000000Z"
	line := func(tag, text string) string { return ts + " stdout " + tag + " " + text + "\n" }
	for _, tc := range []struct {
		name, log, problem string
		n                  int
	}{
		{"in order", line("F", "soak line 1") + line("F", "soak line 2"), "", 2},
		{"partials joined", line("P", "soak li") + line("F", "ne 1") + line("F", "soak line 2"), "", 2},
		{"unfinished last line", line("F", "soak line 1") + ts + " stdout F soak line", "", 1},
		{"a gap", line("F", "soak line 1") + line("F", "soak line 3"), "line 2 is number 3 (1 lost)", 1},
		{"a repeat", line("F", "soak line 1") + line("F", "soak line 1"), "line 2 is number 1 (-1 lost)", 1},
		{"garbage", line("F", "soak line 1") + line("F", "hello"), `line 2 is "hello"`, 1},
		{"empty", "", "", 0},
	} {
		n, problem := numberedLines([]byte(tc.log))
		if n != tc.n || problem != tc.problem {
			t.Errorf("%s: got %d %q, want %d %q", tc.name, n, problem, tc.n, tc.problem)
		}
	}
}

func TestDiffState(t *testing.T) {
	ready := &pod{id: "p1", logger: "c1", exiter: "c2", exitFrom: time.Now().Add(-time.Minute), exitAt: time.Now().Add(-time.Minute)}
	faulted := &pod{id: "p2", logger: "c3", exiter: "c4", exitFrom: time.Now().Add(time.Hour), exitAt: time.Now().Add(time.Hour)}
	faulted.faulted.Store(true)
	pods := []*runtimeapi.PodSandbox{{Id: "p1", State: runtimeapi.PodSandboxState_SANDBOX_READY},
		{Id: "p2", State: runtimeapi.PodSandboxState_SANDBOX_NOTREADY}}
	ctrs := []*runtimeapi.Container{{Id: "c1", State: runtimeapi.ContainerState_CONTAINER_RUNNING},
		{Id: "c2", State: runtimeapi.ContainerState_CONTAINER_EXITED},
		{Id: "c3", State: runtimeapi.ContainerState_CONTAINER_RUNNING}, // a killed monitor's container runs on
		{Id: "c4", State: runtimeapi.ContainerState_CONTAINER_EXITED}}
	if d := diffState([]*pod{ready, faulted}, pods, ctrs); len(d) != 0 {
		t.Fatalf("same state, diff %v", d)
	}
	// A slow start: the exiter exits between exitFrom and exitAt, either state is right.
	slow := &pod{id: "p1", logger: "c1", exiter: "c2", exitFrom: time.Now().Add(-10 * time.Second), exitAt: time.Now().Add(10 * time.Second)}
	for _, st := range []runtimeapi.ContainerState{runtimeapi.ContainerState_CONTAINER_RUNNING, runtimeapi.ContainerState_CONTAINER_EXITED} {
		ctrs[1].State = st
		if d := diffState([]*pod{slow, faulted}, pods, ctrs); len(d) != 0 {
			t.Errorf("exiter %v between exitFrom and exitAt: diff %v", st, d)
		}
	}
	ctrs[1].State = runtimeapi.ContainerState_CONTAINER_EXITED
	ctrs[0].State = runtimeapi.ContainerState_CONTAINER_EXITED
	ctrs = append(ctrs, &runtimeapi.Container{Id: "c9", State: runtimeapi.ContainerState_CONTAINER_CREATED})
	d := strings.Join(diffState([]*pod{ready, faulted}, pods[:1], ctrs), "\n")
	for _, want := range []string{"c1: the client has it CONTAINER_RUNNING, the node CONTAINER_EXITED",
		"p2: the client has it SANDBOX_NOTREADY, the node does not have it", "c9: CONTAINER_CREATED on the node, unknown to the client"} {
		if !strings.Contains(d, want) {
			t.Errorf("diff lacks %q:\n%s", want, d)
		}
	}
}

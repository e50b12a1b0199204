package main

import (
	"cmp"
	"context"
	"fmt"
	"sort"
	"strings"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// converge waits (up to 60 s after the last fault) for the node to show
// exactly the pods and containers the client believes exist, in the states
// it believes; what still differs then is a finding.
func (s *soak) converge() {
	deadline := time.Now().Add(60 * time.Second)
	for {
		diff := s.stateDiff()
		if len(diff) == 0 {
			fmt.Printf("converged: %d pods as the client believes\n", len(s.bel.all()))
			return
		}
		if time.Now().After(deadline) {
			owner := s.owners()
			for _, d := range diff {
				s.find.add("convergence", "%s", d)
				id := strings.TrimSuffix(strings.Fields(d)[0], ":")
				s.find.stuckPod(cmp.Or(owner[id], id), "%s", d)
			}
			return
		}
		time.Sleep(time.Second)
	}
}

// owners maps the short ids of the client's pods and containers to their
// pod's name.
func (s *soak) owners() map[string]string {
	out := map[string]string{}
	for _, p := range s.bel.all() {
		for _, id := range p.ids() {
			out[short(id)] = p.name
		}
	}
	return out
}

func (s *soak) stateDiff() []string {
	var pods []*runtimeapi.PodSandbox
	var ctrs []*runtimeapi.Container
	err := s.rpc.call("ListPodSandbox", func(ctx context.Context) (err error) {
		r, err := s.inst.rt.ListPodSandbox(ctx, &runtimeapi.ListPodSandboxRequest{})
		if err == nil {
			pods = r.Items
		}
		return err
	})
	if err == nil {
		err = s.rpc.call("ListContainers", func(ctx context.Context) (err error) {
			r, err := s.inst.rt.ListContainers(ctx, &runtimeapi.ListContainersRequest{})
			if err == nil {
				ctrs = r.Containers
			}
			return err
		})
	}
	if err != nil {
		return []string{"list: " + err.Error()}
	}
	return diffState(s.bel.all(), pods, ctrs)
}

// diffState compares the node's pods and containers with the client's.
func diffState(believed []*pod, pods []*runtimeapi.PodSandbox, ctrs []*runtimeapi.Container) []string {
	var out []string
	want := map[string]string{} // id -> state
	for _, p := range believed {
		ps, cs := "SANDBOX_READY", "CONTAINER_RUNNING"
		if p.faulted.Load() {
			// Its monitor is gone: its containers run on until the pod is
			// stopped (docs/DESIGN.md, Monitor), or ended by themselves.
			ps, cs = "SANDBOX_NOTREADY", "*"
		}
		want[p.id] = ps
		if p.logger != "" {
			want[p.logger] = cs
		}
		if p.exiter != "" {
			want[p.exiter] = "CONTAINER_EXITED"
			if p.faulted.Load() {
				want[p.exiter] = "*"
			} else if time.Until(p.exitFrom) > 3*time.Second {
				want[p.exiter] = "CONTAINER_RUNNING"
			} else if time.Until(p.exitAt) > -3*time.Second {
				want[p.exiter] = "*" // exiting about now
			}
		}
	}
	got := map[string]string{}
	for _, p := range pods {
		got[p.Id] = p.State.String()
	}
	for _, c := range ctrs {
		got[c.Id] = c.State.String()
	}
	for id, w := range want {
		if g, ok := got[id]; !ok {
			out = append(out, fmt.Sprintf("%s: the client has it %s, the node does not have it", short(id), w))
		} else if g != w && w != "*" {
			out = append(out, fmt.Sprintf("%s: the client has it %s, the node %s", short(id), w, g))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			out = append(out, fmt.Sprintf("%s: %s on the node, unknown to the client", short(id), g))
		}
	}
	sort.Strings(out)
	return out
}

// checkNodeClean: with every pod removed, nothing of any is left on the host.
func (s *soak) checkNodeClean() {
	deadline := time.Now().Add(10 * time.Second)
	for {
		left := s.nodeLeftovers()
		if len(left) == 0 {
			fmt.Println("node clean: no netns, veth, lease, mount, cgroup, process or record left")
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				s.find.add("leak", "after the last pod: %s", l)
			}
			return
		}
		time.Sleep(500 * time.Millisecond)
	}
}

func (s *soak) nodeLeftovers() []string {
	var out []string
	if d := s.stateDiff(); len(d) > 0 {
		out = append(out, d...)
	}
	if ports := bridgePorts(s.inst.bridge); len(ports) > 0 {
		out = append(out, fmt.Sprintf("veths on %s: %v", s.inst.bridge, ports))
	}
	out = append(out, s.leaseFiles("")...)
	for _, d := range cgroupDirs(s.inst.cgParent) {
		for _, c := range cgroupChildren(d) {
			out = append(out, "cgroup "+c)
		}
	}
	for _, p := range processesMentioning(s.inst.dir, s.inst.pid()) {
		out = append(out, "process "+p)
	}
	return append(out, s.inst.daemon.leftovers(s, nil)...)
}

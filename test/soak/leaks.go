package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// checkPodGone: after RemovePodSandbox, nothing of the pod is left: pause,
// monitor and container processes, netns pin, IP lease, cgroups, records.
func (s *soak) checkPodGone(p *pod) {
	deadline := time.Now().Add(5 * time.Second)
	for {
		left := s.podLeftovers(p)
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			for _, l := range left {
				s.find.add("leak", "pod %s (%s): %s", p.name, short(p.id), l)
			}
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func (s *soak) podLeftovers(p *pod) []string {
	var out []string
	for what, r := range map[string]procRef{"pause": p.pauseRef, "monitor": p.monitorRef} {
		if r.running() && !s.isDaemonOrSelf(r.pid) {
			out = append(out, fmt.Sprintf("%s %d still running", what, r.pid))
		}
	}
	for _, r := range p.procs {
		if r.running() {
			out = append(out, fmt.Sprintf("container process %d still running", r.pid))
		}
	}
	if p.info.NetNS != "" {
		if _, err := os.Stat(p.info.NetNS); err == nil {
			out = append(out, "netns pin "+p.info.NetNS)
		}
	}
	out = append(out, s.leaseFiles(p.id)...)
	if p.info.Cgroup != "" {
		for _, d := range cgroupDirs(p.info.Cgroup) {
			out = append(out, "cgroup "+d)
		}
	}
	for _, id := range p.ids() {
		for _, pr := range processesMentioning(id, s.inst.pid()) {
			out = append(out, "process "+pr)
		}
	}
	return append(out, s.inst.daemon.leftovers(s, p)...)
}

// ids are the pod's and its containers' ids.
func (p *pod) ids() []string {
	var out []string
	for _, id := range []string{p.id, p.logger, p.exiter} {
		if id != "" {
			out = append(out, id)
		}
	}
	return out
}

func (s *soak) isDaemonOrSelf(pid int) bool { return pid == s.inst.pid() || pid == os.Getpid() }

// leaseFiles lists host-local lease files naming id (all leases when id is "").
func (s *soak) leaseFiles(id string) []string {
	var out []string
	_ = filepath.Walk(filepath.Join(s.inst.root, "cni", "ipam"), func(p string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || strings.HasPrefix(info.Name(), "last_reserved_ip") || info.Name() == "lock" {
			return nil
		}
		if b, _ := os.ReadFile(p); id == "" || strings.Contains(string(b), id) {
			out = append(out, "IP lease "+p)
		}
		return nil
	})
	return out
}

// recordsNaming lists files and directories up to three levels under the
// tops (outside an image store) whose name holds one of ids.
func recordsNaming(ids []string, tops ...string) []string {
	var out []string
	names := func(name string) bool {
		for _, id := range ids {
			if strings.Contains(name, id) {
				return true
			}
		}
		return false
	}
	for _, top := range tops {
		_ = filepath.WalkDir(top, func(p string, d os.DirEntry, err error) error {
			if err != nil {
				return nil
			}
			rel, _ := filepath.Rel(top, p)
			depth := strings.Count(rel, "/")
			if d.IsDir() && (depth >= 2 || rel == "images" || rel == "content" || rel == "soak-filler") {
				if names(d.Name()) {
					out = append(out, "record "+p)
				}
				return filepath.SkipDir
			}
			if names(d.Name()) {
				out = append(out, "record "+p)
			}
			return nil
		})
	}
	return out
}

package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
)

// memSample is the PSS (smaps_rollup) of a runtime's processes, by role.
type memSample struct {
	// TotalKiB is daemon + helpers + pause + other: everything but the workload.
	TotalKiB int64                 `json:"total_kib"`
	Roles    map[string]*roleUsage `json:"roles"`
}

type roleUsage struct {
	Procs  int   `json:"procs"`
	PssKiB int64 `json:"pss_kib"`
}

// Roles: the daemon; per-pod helpers (minicri monitors, containerd shims): other
// processes whose command line contains the match string; and their and the
// daemon's descendants: pause processes, the benchmark's workload (sleep,
// not counted in the total) and anything else (e.g. a transient runc).
var roles = []string{"daemon", "helpers", "pause", "workload", "other"}

type proc struct {
	pid, ppid int
	comm, cmd string
}

func measureMemory(daemon int, match string) (*memSample, error) {
	procs, err := listProcs()
	if err != nil {
		return nil, err
	}
	role := map[int]string{}
	self := os.Getpid()
	for _, p := range procs {
		switch {
		case p.pid == daemon:
			role[p.pid] = "daemon"
		case p.pid != self && match != "" && strings.Contains(p.cmd, match):
			role[p.pid] = "helpers"
		}
	}
	if role[daemon] != "daemon" {
		return nil, fmt.Errorf("memory: daemon pid %d not running", daemon)
	}
	// Descendants, to a fixed point (parents may be listed after children).
	for changed := true; changed; {
		changed = false
		for _, p := range procs {
			if _, ok := role[p.pid]; ok {
				continue
			}
			if _, ok := role[p.ppid]; !ok {
				continue
			}
			switch p.comm {
			case "pause", "minicri-pause":
				role[p.pid] = "pause"
			case "sleep":
				role[p.pid] = "workload"
			default:
				role[p.pid] = "other"
			}
			changed = true
		}
	}
	s := &memSample{Roles: map[string]*roleUsage{}}
	for _, r := range roles {
		s.Roles[r] = &roleUsage{}
	}
	pids := make([]int, 0, len(role))
	for pid := range role {
		pids = append(pids, pid)
	}
	sort.Ints(pids)
	for _, pid := range pids {
		pss, err := pssKiB(pid)
		if err != nil {
			if os.IsNotExist(err) || strings.Contains(err.Error(), "no such process") {
				continue // exited meanwhile
			}
			return nil, err
		}
		u := s.Roles[role[pid]]
		u.Procs++
		u.PssKiB += pss
		if role[pid] != "workload" {
			s.TotalKiB += pss
		}
	}
	return s, nil
}

func listProcs() ([]proc, error) {
	dirs, err := filepath.Glob("/proc/[0-9]*")
	if err != nil {
		return nil, fmt.Errorf("list /proc: %w", err)
	}
	var out []proc
	for _, d := range dirs {
		pid, err := strconv.Atoi(filepath.Base(d))
		if err != nil {
			continue
		}
		stat, err := os.ReadFile(d + "/stat")
		if err != nil {
			continue // exited
		}
		// pid (comm) state ppid ...
		open, closing := bytes.IndexByte(stat, '('), bytes.LastIndexByte(stat, ')')
		if open < 0 || closing < open {
			continue
		}
		f := strings.Fields(string(stat[closing+1:]))
		if len(f) < 2 {
			continue
		}
		ppid, _ := strconv.Atoi(f[1])
		cmd, _ := os.ReadFile(d + "/cmdline")
		out = append(out, proc{pid: pid, ppid: ppid, comm: string(stat[open+1 : closing]),
			cmd: string(bytes.ReplaceAll(cmd, []byte{0}, []byte{' '}))})
	}
	return out, nil
}

// pssKiB is the Pss line of /proc/PID/smaps_rollup.
func pssKiB(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/smaps_rollup", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "Pss:"); ok {
			fs := strings.Fields(v)
			if len(fs) == 0 {
				break
			}
			n, err := strconv.ParseInt(fs[0], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("pid %d smaps_rollup: %w", pid, err)
			}
			return n, nil
		}
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("pid %d smaps_rollup: %w", pid, err)
	}
	return 0, fmt.Errorf("pid %d: no Pss in smaps_rollup", pid)
}

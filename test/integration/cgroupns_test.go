package integration

import (
	"fmt"
	"os"
	"strings"
	"testing"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nsScript prints what the tests compare with the host: the cgroup
// namespace, the cgroups and the access of the cgroupfs mount.
const nsScript = `readlink /proc/self/ns/cgroup; echo ---; cat /proc/self/cgroup; echo ---; cat /proc/self/mountinfo`

// memoryCgroup is the path, in /proc/PID/cgroup's text, of the hierarchy
// that holds memory (as procCgroup reads it).
func memoryCgroup(text string) string {
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		parts := strings.SplitN(l, ":", 3)
		if len(parts) != 3 {
			continue
		}
		if (hostUnified() && parts[0] == "0") || (!hostUnified() && strings.Contains(","+parts[1]+",", ",memory,")) {
			return parts[2]
		}
	}
	return ""
}

// cgroupfsAccess is "ro" or "rw": the access of the container's cgroup2
// mount (cgroup v2), or of its memory hierarchy's (v1).
func cgroupfsAccess(mountinfo string) string {
	point := "/sys/fs/cgroup"
	if !hostUnified() {
		point = "/sys/fs/cgroup/memory"
	}
	access := ""
	for _, l := range strings.Split(mountinfo, "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == point {
			access, _, _ = strings.Cut(f[5], ",")
		}
	}
	return access
}

// TestCgroupNamespaceOptions: cgroupns_options CONTAINER gives a container
// a cgroup namespace of its own rooted at its cgroup, privileged or not
// (cgroup v2 only: v1 refuses it, TestCgroupOptionRefusals); NODE the
// host's, privileged or not; none the default (own on v2 unless
// privileged); the cgroupfs is read-only unless privileged. A mount in the
// host's cgroup namespace keeps the host's nsdelegate.
func TestCgroupNamespaceOptions(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := i.logPodConfig("cgns")
	pod.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{Privileged: true}
	podID := i.runPod(t, pod)
	hostNS, err := os.Readlink("/proc/self/ns/cgroup")
	if err != nil {
		t.Fatal(err)
	}
	delegate := hostNSDelegate()
	for _, c := range []struct {
		name       string
		ns         *runtimeapi.CgroupNamespace
		privileged bool
		own        bool
		v2Only     bool
	}{
		{"default", nil, false, hostUnified(), false},
		{"default privileged", nil, true, false, false},
		{"CONTAINER", cgroupNS(runtimeapi.NamespaceMode_CONTAINER), false, true, true},
		{"CONTAINER privileged", cgroupNS(runtimeapi.NamespaceMode_CONTAINER), true, true, true},
		{"NODE", cgroupNS(runtimeapi.NamespaceMode_NODE), false, false, false},
		{"NODE privileged", cgroupNS(runtimeapi.NamespaceMode_NODE), true, false, false},
	} {
		name := strings.ToLower(strings.ReplaceAll(c.name, " ", "-"))
		t.Run(c.name, func(t *testing.T) {
			if c.v2Only && !hostUnified() {
				t.Skip("cgroup namespace CONTAINER needs cgroup v2; this host is cgroup v1, where it is refused (TestCgroupOptionRefusals)")
			}
			id := i.run(t, podID, pod, cgroupCtr(name, "sleep 1000", c.privileged, 0, c.ns))
			hostView, err := os.ReadFile(fmt.Sprintf("/proc/%d/cgroup", i.ctrPid(t, id)))
			if err != nil {
				t.Fatal(err)
			}
			code, out := i.execIn(t, id, "sh", "-c", nsScript)
			parts := strings.SplitN(out, "\n---\n", 3)
			if code != 0 || len(parts) != 3 {
				t.Fatalf("exec: exit %d:\n%s", code, out)
			}
			ownNS := strings.TrimSpace(parts[0]) != hostNS
			wantCgroup := memoryCgroup(string(hostView))
			if c.own {
				wantCgroup = "/"
			}
			if ownNS != c.own || memoryCgroup(parts[1]) != wantCgroup {
				t.Fatalf("cgroup namespace %s (the host's %s), cgroup %q: want own namespace %v, cgroup %q",
					strings.TrimSpace(parts[0]), hostNS, memoryCgroup(parts[1]), c.own, wantCgroup)
			}
			wantAccess := map[bool]string{false: "ro", true: "rw"}[c.privileged]
			if got := cgroupfsAccess(parts[2]); got != wantAccess {
				t.Fatalf("cgroupfs mounted %q, want %q", got, wantAccess)
			}
			if hostNSDelegate() != delegate {
				t.Fatalf("the container's cgroupfs mount changed the host's nsdelegate (was %v)", delegate)
			}
		})
	}
}

package integration

import (
	"bufio"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// nonewprivs is a fixture image with a setuid-root program,
// /usr/local/bin/nnp, in its top layer.
const nonewprivs = "registry.k8s.io/e2e-test-images/nonewprivs:1.3"

// nobodyStat runs stat(1) on path as the unprivileged host user nobody; it
// returns stat's output and whether it succeeded.
func nobodyStat(t *testing.T, path string) (string, bool) {
	t.Helper()
	cmd := exec.Command("stat", "-c", "%A %u", path)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	out, err := cmd.CombinedOutput()
	return strings.TrimSpace(string(out)), err == nil
}

// probe is a host path to a file a container or an image planted.
type probe struct {
	what, path string
	setuid     bool // the file must be setuid for root (not a vacuous probe)
}

// assertUnreachable checks that each probe exists for root (so that the
// check is not vacuous) and that nobody cannot even stat it.
func assertUnreachable(t *testing.T, probes []probe) {
	t.Helper()
	for _, p := range probes {
		st, err := os.Lstat(p.path)
		if err != nil {
			t.Errorf("%s: %s does not exist for root: %v", p.what, p.path, err)
			continue
		}
		if p.setuid && st.Mode()&os.ModeSetuid == 0 {
			t.Errorf("%s: %s is not setuid (%v)", p.what, p.path, st.Mode())
		}
		if out, ok := nobodyStat(t, p.path); ok || !strings.Contains(out, "Permission denied") {
			t.Errorf("%s: user nobody reaches %s: %s", p.what, p.path, out)
		}
	}
}

// overlayUpper is the upperdir of the overlay mounted at target, from
// /proc/self/mountinfo (what any host user can read).
func overlayUpper(t *testing.T, target string) string {
	t.Helper()
	f, err := os.Open("/proc/self/mountinfo")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	s.Buffer(nil, 1<<20)
	for s.Scan() {
		fields := strings.Fields(s.Text())
		if len(fields) < 5 || fields[4] != target {
			continue
		}
		for _, o := range strings.Split(fields[len(fields)-1], ",") {
			if up, ok := strings.CutPrefix(o, "upperdir="); ok {
				return up
			}
		}
	}
	t.Fatalf("no overlay with an upperdir at %s in mountinfo", target)
	return ""
}

// TestHostUsersCannotReachContainerFiles is the attack of containerd's
// CVE-2021-41103: a container (default capabilities) plants a setuid-root
// copy of busybox and a world-writable device node in its writable layer,
// turns the pod's /etc/hosts (bound from the host) into a setuid-root
// busybox and leaves a file in its /dev/shm; an image brings a setuid-root
// program, also as an image volume. A local user (nobody) looks for them
// through every host path it can learn (mountinfo names the upperdir and
// every mount point): none may be reachable.
func TestHostUsersCannotReachContainerFiles(t *testing.T) {
	i := newInstance(t, withRegistry())
	podID, podInf, id, probes := i.plant(t)
	assertUnreachable(t, probes)
	// The container itself is unaffected: its setuid file is still setuid
	// inside (no nosuid mount flag leaked into it).
	if out, code := i.exec(t, id, "stat", "-c", "%A", "/suid", "/nnp/usr/local/bin/nnp"); code != 0 || out != "-rwsr-xr-x\n-rwsr-xr-x\n" {
		t.Fatalf("inside: %q (exit %d)", out, code)
	}
	if l := i.mountLine(t, id, "/"); strings.Contains(strings.Fields(l)[5], "nosuid") {
		t.Fatalf("the container's rootfs is nosuid: %s", l)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// plant runs the planting container of TestHostUsersCannotReachContainerFiles
// and returns the host paths to what it planted.
func (i *instance) plant(t *testing.T) (string, podInfo, string, []probe) {
	t.Helper()
	i.pull(t, busybox)
	i.pull(t, nonewprivs)
	podID, pod := i.podWithLogs(t, "hostfs")
	_, podInf := i.status(t, podID)
	cfg := ctrConfig("planter", `set -e
cp /bin/busybox /suid; chmod 4755 /suid
mknod /node c 1 3; chmod 666 /node
cat /bin/busybox > /etc/hosts; chmod 4755 /etc/hosts
echo secret > /dev/shm/secret; chmod 644 /dev/shm/secret
echo planted; sleep 1000`)
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/nnp", nonewprivs, "")}
	id := i.run(t, podID, pod, cfg)
	waitLog(t, i.ctrStatus(t, id).LogPath, "planted", 10*time.Second)

	rootfs := filepath.Join(i.dir, "state", "containers", id, "rootfs")
	upper := overlayUpper(t, rootfs)
	probes := []probe{
		{"setuid copy through the rootfs mount", filepath.Join(rootfs, "suid"), true},
		{"setuid copy in the writable layer", filepath.Join(upper, "suid"), true},
		{"device node through the rootfs mount", filepath.Join(rootfs, "node"), false},
		{"device node in the writable layer", filepath.Join(upper, "node"), false},
		{"setuid pod hosts file", filepath.Join(i.dir, "root", "sandboxes", podID, "hosts"), true},
		{"file in the pod's /dev/shm", filepath.Join(podInf.Shm, "secret"), false},
	}
	for _, mp := range mountsUnder(filepath.Join(i.dir, "state", "containers", id)) {
		if mp != rootfs {
			probes = append(probes, probe{"setuid program in an image volume", filepath.Join(mp, "usr/local/bin/nnp"), true})
		}
	}
	for _, l := range i.layerDirs(t) {
		if p := filepath.Join(i.dir, "root", "images", "layers", l, "usr/local/bin/nnp"); exists(p) {
			probes = append(probes, probe{"setuid program in an image layer", p, true})
		}
	}
	if len(probes) != 8 {
		t.Fatalf("test bug: %d probes (no image volume or layer found): %v", len(probes), probes)
	}
	return podID, podInf, id, probes
}

// TestRestartClosesWhatAnOlderMinicriLeftOpen reopens the directories as
// an older minicri created them (0711) under a running container, then
// restarts the daemon: it must close them again.
func TestRestartClosesWhatAnOlderMinicriLeftOpen(t *testing.T) {
	i := newInstance(t, withRegistry())
	podID, podInf, id, probes := i.plant(t)
	i.kill9()
	for _, d := range []string{"root", "root/containers", "root/containers/" + id, "state/containers/" + id,
		"root/sandboxes", "root/sandboxes/" + podID, "state/sandboxes", "state/sandboxes/" + podID} {
		if err := os.Chmod(filepath.Join(i.dir, d), 0o711); err != nil {
			t.Fatal(err)
		}
	}
	if out, ok := nobodyStat(t, probes[0].path); !ok {
		t.Fatalf("test bug: the old modes do not open %s: %s", probes[0].path, out)
	}
	// And as a crash during the create of a container of a user-namespaced
	// pod leaves its state directory: open to the pod's root group.
	ctrState := filepath.Join(i.dir, "state/containers", id)
	if err := os.Chown(ctrState, 0, usernsHostID); err != nil {
		t.Fatal(err)
	}
	i.start()
	assertUnreachable(t, probes)
	if st, err := os.Stat(ctrState); err != nil || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Gid != 0 {
		t.Errorf("the restart left %s %v, gid %d", ctrState, st.Mode(), st.Sys().(*syscall.Stat_t).Gid)
	}
	if st := i.ctrStatus(t, id); st.State != runtimeapi.ContainerState_CONTAINER_RUNNING {
		t.Fatalf("after the restart: %v", st.State)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// TestHostUsersCannotReachUserNamespacedContainerFiles is the same attack
// from a pod with its own user namespace, whose container init walks to its
// rootfs as an unprivileged host user while it is created.
func TestHostUsersCannotReachUserNamespacedContainerFiles(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	i.pull(t, nonewprivs)
	pod := usernsPodConfig("hostfs-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "hostfs-userns")
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	cfg := ctrConfig("planter", `set -e
cp /bin/busybox /suid; chmod 4755 /suid
echo secret > /dev/shm/secret; chmod 644 /dev/shm/secret
echo planted; sleep 1000`)
	cfg.Mounts = []*runtimeapi.Mount{imageMount("/nnp", nonewprivs, "")}
	id := i.run(t, podID, pod, cfg)
	waitLog(t, i.ctrStatus(t, id).LogPath, "planted", 10*time.Second)

	rootfs := filepath.Join(i.dir, "state", "containers", id, "rootfs")
	upper := overlayUpper(t, rootfs)
	probes := []probe{
		{"setuid copy through the rootfs mount", filepath.Join(rootfs, "suid"), true},
		{"setuid copy in the writable layer", filepath.Join(upper, "suid"), true},
		{"file in the pod's /dev/shm", filepath.Join(podInf.Shm, "secret"), false},
		{"pod hosts file", filepath.Join(i.dir, "root", "sandboxes", podID, "hosts"), false},
	}
	for _, mp := range mountsUnder(filepath.Join(i.dir, "state", "containers", id)) {
		if mp != rootfs {
			probes = append(probes, probe{"mount point of an idmapped layer or image volume", filepath.Join(mp, "."), false})
		}
	}
	assertUnreachable(t, probes)
	if out, code := i.exec(t, id, "stat", "-c", "%A %u", "/suid", "/nnp/usr/local/bin/nnp"); code != 0 || out != "-rwsr-xr-x 0\n-rwsr-xr-x 0\n" {
		t.Fatalf("inside: %q (exit %d)", out, code)
	}
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// mountLine is the container's own mountinfo line for its mount point mp.
func (i *instance) mountLine(t *testing.T, id, mp string) string {
	t.Helper()
	out, _ := i.exec(t, id, "cat", "/proc/self/mountinfo")
	for _, l := range strings.Split(out, "\n") {
		if f := strings.Fields(l); len(f) > 5 && f[4] == mp {
			return l
		}
	}
	t.Fatalf("no mount at %s in the container: %s", mp, out)
	return ""
}

func exists(p string) bool { _, err := os.Lstat(p); return err == nil }

// windowAttacker runs as nobody: it reads a path, then tries to open it
// (keeping the descriptor) as fast as it can until told to stop; then,
// once told to go, it reads the container's planted setuid file through
// what it kept.
const windowAttacker = `read -r p
echo TRYING
until exec 3<"$p"; do read -t 0 && break; done 2>/dev/null
if [ -e /proc/self/fd/3 ]; then echo OPEN; fi
read -r closed
read -r go
stat -L -c 'STAT %A %u' /proc/self/fd/3/suid 2>&1
echo "READ $(wc -c </proc/self/fd/3/suid 2>&1)"
echo DONE`

// TestHostUsersCannotOpenAUserNamespacedRootfsWhileCreated attacks the
// window in which the init of a container of a pod with its own user
// namespace walks to its rootfs as an unprivileged host user: a local user
// (nobody) learns the rootfs path from mountinfo as soon as it is mounted
// and tries to open it in a tight loop while the container is created; a
// descriptor it got would keep the container's files (a setuid copy of
// busybox planted later) in its reach for the life of the container.
func TestHostUsersCannotOpenAUserNamespacedRootfsWhileCreated(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	pod := usernsPodConfig("window-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.LogDirectory = filepath.Join(i.dir, "logs", "window-userns")
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	// On a loaded machine the attacker may start trying only after the
	// window: such a try proves nothing, so try again.
	live := false
	for try := 0; try < 3 && !live; try++ {
		var out []string
		out, live = i.attackCreateWindow(t, podID, pod, fmt.Sprintf("planter-%d", try))
		t.Logf("attacker (nobody), try %d, live %v: %q", try, live, out)
		for _, l := range out {
			if l == "OPEN" || strings.HasPrefix(l, "STAT -") || (strings.HasPrefix(l, "READ ") && l != "READ ") {
				t.Fatalf("user nobody opened the rootfs while the container was created: %q", out)
			}
		}
	}
	if !live {
		t.Fatal("the attacker was never trying while a container was created: the test did not attack")
	}
	i.stopRemove(t, podID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

// attackCreateWindow creates and starts a container that plants a setuid
// busybox, with windowAttacker racing its creation; it returns what the
// attacker printed, and whether it was trying before the create returned.
func (i *instance) attackCreateWindow(t *testing.T, podID string, pod *runtimeapi.PodSandboxConfig, name string) ([]string, bool) {
	t.Helper()
	cmd := exec.Command("/bin/bash", "-c", windowAttacker)
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: 65534, Gid: 65534, Groups: []uint32{}}}
	stdin, _ := cmd.StdinPipe()
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Wait()
	defer cmd.Process.Kill()
	trying := make(chan time.Time, 1)
	lines := make(chan []string, 1)
	go func() {
		var out []string
		for s := bufio.NewScanner(stdout); s.Scan(); {
			if out = append(out, s.Text()); s.Text() == "TRYING" {
				trying <- time.Now()
			}
		}
		lines <- out
	}()
	// Hand the attacker the new rootfs path the moment mountinfo shows it.
	before := mountsUnder(filepath.Join(i.dir, "state", "containers"))
	stop, found := make(chan struct{}), make(chan string, 1)
	go func() {
		for {
			for _, mp := range mountsUnder(filepath.Join(i.dir, "state", "containers")) {
				if strings.HasSuffix(mp, "/rootfs") && !slices.Contains(before, mp) {
					stdin.Write([]byte(mp + "\n"))
					found <- mp
					return
				}
			}
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	id := i.create(t, podID, pod, ctrConfig(name, "set -e; cp /bin/busybox /suid; chmod 4755 /suid; echo planted; sleep 1000"))
	created := time.Now()
	close(stop)
	stdin.Write([]byte("closed\n"))
	i.startCtr(t, id)
	waitLog(t, i.ctrStatus(t, id).LogPath, "planted", 10*time.Second)
	stdin.Write([]byte("go\n"))
	out := <-lines
	select {
	case mp := <-found:
		if mp != filepath.Join(i.dir, "state", "containers", id, "rootfs") {
			t.Fatalf("test bug: attacked %s", mp)
		}
	default:
		t.Fatal("test bug: the rootfs mount never showed in mountinfo")
	}
	if st, err := os.Stat(filepath.Join(i.dir, "state", "containers", id)); err != nil || st.Mode().Perm() != 0o700 || st.Sys().(*syscall.Stat_t).Gid != 0 {
		t.Errorf("after create, the container's state directory is %v", st.Mode())
	}
	select {
	case at := <-trying:
		return out, at.Before(created)
	default:
		return out, false
	}
}

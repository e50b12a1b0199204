package integration

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	runtimeapi "k8s.io/cri-api/pkg/apis/runtime/v1"
)

// injectSource is the attacker's tool: it attaches to PID 1 (the pause, in a
// shared PID namespace) and makes it run openat(path) and read() on what it
// opened, as code injected into the pause would. It prints "attach <errno>"
// when it cannot attach, else "openat <ret>" and, on success, "read <data>".
// x86_64 only: the injection rewrites registers and reuses the syscall
// instruction the pause sleeps in.
const injectSource = `#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>

static long inject(struct user_regs_struct *base, long nr, long a, long b, long c)
{
	struct user_regs_struct r = *base;
	int st;
	r.rip = base->rip - 2; /* the syscall instruction the pause sleeps in */
	r.orig_rax = -1;       /* no syscall restart on resume */
	r.rax = nr; r.rdi = a; r.rsi = b; r.rdx = c;
	if (ptrace(PTRACE_SETREGS, 1, 0, &r) < 0 || ptrace(PTRACE_SINGLESTEP, 1, 0, 0) < 0 ||
	    waitpid(1, &st, __WALL) < 0 || ptrace(PTRACE_GETREGS, 1, 0, &r) < 0) {
		printf("ptrace %s\n", strerror(errno));
		return -9999;
	}
	return (long)r.rax;
}

int main(int argc, char **argv)
{
	struct user_regs_struct saved;
	int st;
	if (argc != 2)
		return 2;
	if (ptrace(PTRACE_SEIZE, 1, 0, 0) < 0) {
		printf("attach %d\n", errno);
		return 0;
	}
	if (ptrace(PTRACE_INTERRUPT, 1, 0, 0) < 0 || waitpid(1, &st, __WALL) < 0 ||
	    ptrace(PTRACE_GETREGS, 1, 0, &saved) < 0) {
		printf("ptrace %s\n", strerror(errno));
		return 1;
	}
	long insn = ptrace(PTRACE_PEEKTEXT, 1, saved.rip - 2, 0);
	if ((insn & 0xffff) != 0x050f) {
		printf("not in a syscall: %lx\n", insn);
		return 1;
	}
	/* The path goes on the pause's stack, well below its red zone. */
	unsigned long at = (saved.rsp - 4096) & ~7UL;
	char path[256] = {0};
	strncpy(path, argv[1], sizeof path - 1);
	for (size_t i = 0; i < sizeof path; i += 8) {
		long w;
		memcpy(&w, path + i, 8);
		ptrace(PTRACE_POKEDATA, 1, at + i, w);
	}
	long fd = inject(&saved, SYS_openat, AT_FDCWD, (long)at, O_RDONLY);
	printf("openat %ld\n", fd);
	if (fd >= 0) {
		long n = inject(&saved, SYS_read, fd, (long)at, 64);
		char buf[72] = {0};
		for (long i = 0; i < n && i < 64; i += 8) {
			long w = ptrace(PTRACE_PEEKDATA, 1, at + i, 0);
			memcpy(buf + i, &w, 8);
		}
		if (n >= 0 && n < 64)
			buf[n] = 0;
		printf("read %s\n", buf);
		inject(&saved, SYS_close, fd, 0, 0);
	}
	ptrace(PTRACE_SETREGS, 1, 0, &saved);
	ptrace(PTRACE_DETACH, 1, 0, 0);
	return 0;
}
`

// buildInjector compiles the attacker's tool into a directory containers
// may mount.
func buildInjector(t *testing.T) string {
	t.Helper()
	if runtime.GOARCH != "amd64" {
		t.Fatalf("the ptrace injector is written for amd64, not %s", runtime.GOARCH)
	}
	dir := t.TempDir()
	os.Chmod(dir, 0o755)
	src := filepath.Join(dir, "inject.c")
	if err := os.WriteFile(src, []byte(injectSource), 0o644); err != nil {
		t.Fatal(err)
	}
	if out, err := exec.Command("gcc", "-static", "-O1", "-o", filepath.Join(dir, "inject"), src).CombinedOutput(); err != nil {
		t.Fatalf("build the injector: %v\n%s", err, out)
	}
	return dir
}

// hostMarker is a host file a container must never read through the pause.
func hostMarker(t *testing.T) string {
	t.Helper()
	// Reachable by any uid, so that only the pause's confinement stops a
	// read (t.TempDir's parent is private).
	dir, err := os.MkdirTemp("", "minicri-marker-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	os.Chmod(dir, 0o755)
	path := filepath.Join(dir, "host-marker")
	if err := os.WriteFile(path, []byte("host secret\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func sharedPIDPod(name string) *runtimeapi.PodSandboxConfig {
	cfg := podConfig(name)
	cfg.Linux.SecurityContext = &runtimeapi.LinuxSandboxSecurityContext{
		NamespaceOptions: &runtimeapi.NamespaceOption{Pid: runtimeapi.NamespaceMode_POD},
	}
	return cfg
}

// attacker is a container of the pod with CAP_SYS_PTRACE (what
// `kubectl debug --profile=general` adds) and the injector at /tool. It runs
// AppArmor-unconfined: on an AppArmor host the default profile would deny the
// ptrace first (EACCES), and the attack must reach the pause's own lock-in.
func attacker(name, tool string) *runtimeapi.ContainerConfig {
	cfg := ctrConfig(name, "sleep 1000")
	cfg.Mounts = []*runtimeapi.Mount{{ContainerPath: "/tool", HostPath: tool, Readonly: true}}
	cfg.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{
		Capabilities: &runtimeapi.Capability{AddCapabilities: []string{"SYS_PTRACE"}},
		Apparmor:     &runtimeapi.SecurityProfile{ProfileType: runtimeapi.SecurityProfile_Unconfined},
	}
	return cfg
}

// assertPauseLockedIn performs the attack from container id and checks that
// it gains nothing: the pause's root is empty, it has no capability, no way
// to gain one, a seccomp filter, and injected code cannot open a host file.
func (i *instance) assertPauseLockedIn(t *testing.T, id, marker string) {
	t.Helper()
	if out, code := i.exec(t, id, "ls", "-a", "/proc/1/root/"); code != 0 || out != ".\n..\n" {
		t.Errorf("/proc/1/root is not an empty root (exit %d):\n%s", code, out)
	}
	if out, code := i.exec(t, id, "ls", "/proc/1/fd/"); code != 0 || out != "" {
		t.Errorf("the pause holds fds a container may reopen (exit %d):\n%s", code, out)
	}
	for _, p := range []string{"/proc/1/root" + marker, "/proc/1/root/etc/hostname", "/proc/1/cwd" + marker} {
		if out, code := i.exec(t, id, "cat", p); code == 0 {
			t.Errorf("read the host's %s through the pause: %q", p, out)
		}
	}
	out, code := i.exec(t, id, "cat", "/proc/1/status")
	if code != 0 {
		t.Fatalf("read /proc/1/status: %s", out)
	}
	var missing []string
	for _, want := range []string{"CapInh:\t0000000000000000", "CapPrm:\t0000000000000000", "CapEff:\t0000000000000000",
		"CapBnd:\t0000000000000000", "CapAmb:\t0000000000000000", "NoNewPrivs:\t1", "Seccomp:\t2",
		"Uid:\t65535\t65535\t65535\t65535", "Gid:\t65535\t65535\t65535\t65535"} {
		if !strings.Contains(out, want+"\n") {
			missing = append(missing, want)
		}
	}
	if len(missing) > 0 {
		t.Errorf("the pause's status lacks %q:\n%s", missing, out)
	}
	// Attaching works (the container may ptrace), but code run as the
	// pause cannot open anything: seccomp refuses, and its root is empty.
	if out, _ := i.exec(t, id, "/tool/inject", marker); out != "openat -1\n" {
		t.Errorf("code injected into the pause: %q, want openat -1 (EPERM)", out)
	}
}

// assertPauseReaps checks that the pause, locked in, still reaps an orphan
// reparented to it.
func (i *instance) assertPauseReaps(t *testing.T, id string) {
	t.Helper()
	out, code := i.exec(t, id, "sh", "-c", "sleep 0.2 & echo $!")
	pid, err := strconv.Atoi(strings.TrimSpace(out))
	if code != 0 || err != nil {
		t.Fatalf("start an orphan: %q %d", out, code)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		out, code := i.exec(t, id, "cat", fmt.Sprintf("/proc/%d/stat", pid))
		if code != 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("orphan %d is not reaped by the pause: %s", pid, out)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

func TestPauseEscapeSharedPID(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	tool, marker := buildInjector(t), hostMarker(t)
	pod := sharedPIDPod("pause-escape")
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, attacker("attacker", tool))
	i.assertPauseLockedIn(t, id, marker)
	i.assertPauseReaps(t, id)

	// A container running as the pause's own uid, without CAP_SYS_PTRACE,
	// cannot attach to it nor read its memory: the pause is not dumpable.
	same := ctrConfig("same-uid", "sleep 1000")
	same.Mounts = []*runtimeapi.Mount{{ContainerPath: "/tool", HostPath: tool, Readonly: true}}
	same.Linux.SecurityContext = &runtimeapi.LinuxContainerSecurityContext{RunAsUser: &runtimeapi.Int64Value{Value: 65535}}
	sameID := i.run(t, podID, pod, same)
	if out, _ := i.exec(t, sameID, "/tool/inject", marker); out != "attach 1\n" {
		t.Errorf("a container as uid 65535 attached to the pause: %q, want attach 1 (EPERM)", out)
	}
	if out, code := i.exec(t, sameID, "cat", "/proc/1/environ"); code == 0 {
		t.Errorf("a container as uid 65535 read the pause's environment: %q", out)
	}

	// The pause still stops on request.
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)
	i.assertCtrGone(t, sameID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf})
}

func TestPauseEscapeUserNamespace(t *testing.T) {
	i := newInstance(t, withRegistry())
	i.pull(t, busybox)
	tool, marker := buildInjector(t), hostMarker(t)
	pod := usernsPodConfig("pause-escape-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 65536))
	pod.Linux.SecurityContext.NamespaceOptions.Pid = runtimeapi.NamespaceMode_POD
	podID := i.runPod(t, pod)
	_, podInf := i.status(t, podID)
	id := i.run(t, podID, pod, attacker("attacker", tool))
	i.assertPauseLockedIn(t, id, marker)
	i.assertPauseReaps(t, id)
	i.stopRemove(t, podID)
	i.assertCtrGone(t, id)

	// A user namespace that does not map 65535: the pause stays the pod's
	// root, still without any capability.
	short := usernsPodConfig("pause-short-userns", runtimeapi.NamespaceMode_POD, mapping(0, usernsHostID, 1000))
	shortID := i.runPod(t, short)
	_, shortInf := i.status(t, shortID)
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", shortInf.PID))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("Uid:\t%d\t%d\t%d\t%d\n", usernsHostID, usernsHostID, usernsHostID, usernsHostID),
		"CapEff:\t0000000000000000\n", "CapBnd:\t0000000000000000\n", "NoNewPrivs:\t1\n", "Seccomp:\t2\n"} {
		if !strings.Contains(string(b), want) {
			t.Errorf("the pause of a pod that does not map 65535 lacks %q:\n%s", want, b)
		}
	}
	i.stopRemove(t, shortID)
	i.assertNothingLeft(t, map[string]podInfo{podID: podInf, shortID: shortInf})
}

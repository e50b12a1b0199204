/*
 * minicri-pause: the process that holds a pod's namespaces.
 *
 *   minicri-pause [-l] [-h hostname] [-s key=value]... [-u uid] [-g gid] [-G gid]...
 *
 * It runs inside the pod's network, IPC, UTS (and, when it has its own, PID)
 * namespaces. Before it reports ready it applies the pod's namespaced sysctls
 * (they land in the namespaces it is in) and sets the hostname. Then, with -l
 * (minicri's monitor always passes it; without it the binary is a plain pause,
 * as when another runtime runs it as a pause image and confines it), it locks
 * itself in, since in a shared PID namespace it is every container's PID 1 and
 * a container with CAP_SYS_PTRACE reaches its root and may attach to it:
 *
 *   - it enters a mount namespace of its own whose only mount is an empty,
 *     read-only tmpfs (pivot_root, old root detached): /proc/<pause>/root
 *     shows nothing;
 *   - it closes every fd but fd 3, which it closes once it reported;
 *   - it sets its supplementary groups to the -G ones (none by default),
 *     its gid to -g (else to the -u id) and its uid to -u: the pod's
 *     run_as_group/run_as_user, else the pause image's 65535;
 *   - it drops every capability (bounding, ambient, permitted, effective,
 *     inheritable), becomes non-dumpable, sets no_new_privs;
 *   - it installs a seccomp filter that allows only what the reaping loop
 *     does: wait4, rt_sigsuspend, rt_sigreturn, restart_syscall, exit,
 *     exit_group, and write/close on the readiness fd. Anything else fails
 *     with EPERM; a foreign syscall ABI kills it.
 *
 * Readiness is reported on fd 3 when that fd is open: the byte 'R' on success,
 * or an error message followed by exit(1). Afterwards it reaps every child it
 * inherits (it is PID 1 of a shared PID namespace) and exits on SIGTERM or
 * SIGINT.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#define READY_FD 3

#if defined(__x86_64__)
#define PAUSE_AUDIT_ARCH AUDIT_ARCH_X86_64
#elif defined(__aarch64__)
#define PAUSE_AUDIT_ARCH AUDIT_ARCH_AARCH64
#else
#error "minicri-pause: no seccomp filter for this architecture"
#endif

static void fail(const char *what, const char *arg)
{
	char msg[512];
	int n = snprintf(msg, sizeof msg, "%s %s: %s", what, arg, strerror(errno));
	if (n > 0 && write(READY_FD, msg, (size_t)n) < 0)
		(void)0;
	_exit(1);
}

static void set_sysctl(const char *kv)
{
	char path[512] = "/proc/sys/";
	const char *eq = strchr(kv, '=');
	size_t klen, off = strlen(path);
	if (!eq || eq == kv) {
		errno = EINVAL;
		fail("sysctl", kv);
	}
	klen = (size_t)(eq - kv);
	if (off + klen >= sizeof path) {
		errno = ENAMETOOLONG;
		fail("sysctl", kv);
	}
	for (size_t i = 0; i < klen; i++)
		path[off + i] = kv[i]; /* the daemon hands the path under /proc/sys */
	path[off + klen] = '\0';
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	if (fd < 0)
		fail("sysctl", kv);
	const char *val = eq + 1;
	if (write(fd, val, strlen(val)) < 0)
		fail("sysctl", kv);
	close(fd);
}

/*
 * isolate_root leaves the pause in a new mount namespace whose only mount is
 * an empty read-only tmpfs. The tmpfs is mounted over /proc (a directory every
 * host has; the mount is only in this namespace), becomes the root, and the
 * old root is stacked on it by pivot_root(".", ".") and detached.
 */
static void isolate_root(void)
{
	if (unshare(CLONE_NEWNS) < 0)
		fail("unshare", "mount namespace");
	if (mount(NULL, "/", NULL, MS_REC | MS_PRIVATE, NULL) < 0)
		fail("make mounts private", "/");
	if (mount("tmpfs", "/proc", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		  "size=4k,nr_inodes=2,mode=0555") < 0)
		fail("mount empty root", "tmpfs");
	if (chdir("/proc") < 0)
		fail("chdir", "empty root");
	if (syscall(SYS_pivot_root, ".", ".") < 0)
		fail("pivot_root", "empty root");
	if (umount2(".", MNT_DETACH) < 0)
		fail("detach", "old root");
	if (chdir("/") < 0)
		fail("chdir", "/");
}

/*
 * drop_privileges sets the supplementary groups, switches to gid and uid
 * (each when >= 0) and drops every capability.
 */
static void drop_privileges(long uid, long gid, const gid_t *groups, size_t ngroups)
{
	for (int cap = 0; cap < 64; cap++) {
		if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) < 0 && errno != EINVAL)
			fail("drop capability", "bounding set");
	}
	if (prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0) < 0)
		fail("clear capabilities", "ambient");
	if (setgroups(ngroups, groups) < 0)
		fail("setgroups", "pause groups");
	if (gid >= 0 && setresgid((gid_t)gid, (gid_t)gid, (gid_t)gid) < 0)
		fail("setresgid", "pause gid");
	if (uid >= 0 && setresuid((uid_t)uid, (uid_t)uid, (uid_t)uid) < 0)
		fail("setresuid", "pause uid");
	struct __user_cap_header_struct hdr = {.version = _LINUX_CAPABILITY_VERSION_3};
	struct __user_cap_data_struct data[_LINUX_CAPABILITY_U32S_3];
	memset(data, 0, sizeof data);
	if (syscall(SYS_capset, &hdr, data) < 0)
		fail("capset", "none");
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) < 0)
		fail("prctl", "not dumpable");
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail("prctl", "no_new_privs");
}

#define ARG0_LO offsetof(struct seccomp_data, args[0])
#define ARG0_HI (offsetof(struct seccomp_data, args[0]) + 4)
#define ALLOW(nr) BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, (nr), 0, 1), BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW)

/* confine lets the pause do what its loop does and nothing else. */
static void confine(void)
{
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, arch)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, PAUSE_AUDIT_ARCH, 1, 0),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
#if defined(__x86_64__)
		/* x32 syscalls share the arch value: refuse them. */
		BPF_JUMP(BPF_JMP | BPF_JGE | BPF_K, 0x40000000, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_KILL_PROCESS),
#endif
		ALLOW(__NR_wait4),
		ALLOW(__NR_rt_sigsuspend),
		ALLOW(__NR_rt_sigreturn),
		ALLOW(__NR_restart_syscall),
		ALLOW(__NR_exit_group),
		ALLOW(__NR_exit),
		/* write and close only on the readiness fd. */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_write, 1, 0),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_close, 0, 5),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_HI),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0, 0, 3),
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, ARG0_LO),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, READY_FD, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | (EPERM & SECCOMP_RET_DATA)),
	};
	struct sock_fprog prog = {.len = sizeof filter / sizeof filter[0], .filter = filter};
	if (prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		fail("seccomp", "filter");
}

static void on_term(int sig)
{
	(void)sig;
	_exit(0);
}

static void on_chld(int sig)
{
	(void)sig;
	while (waitpid(-1, NULL, WNOHANG) > 0)
		;
}

static long parse_id(const char *s)
{
	char *end;
	errno = 0;
	long id = strtol(s, &end, 10);
	if (errno || *s == '\0' || *end != '\0' || id < 0 || id > 0x7fffffffL) {
		errno = EINVAL;
		fail("id", s);
	}
	return id;
}

int main(int argc, char **argv)
{
	struct sigaction sa;
	memset(&sa, 0, sizeof sa);
	sa.sa_handler = on_term;
	sigaction(SIGTERM, &sa, NULL);
	sigaction(SIGINT, &sa, NULL);
	sa.sa_handler = on_chld;
	sa.sa_flags = SA_NOCLDSTOP | SA_RESTART;
	sigaction(SIGCHLD, &sa, NULL);

	long uid = -1, gid = -1;
	int lock_in = 0;
	/* At most one group per argument. */
	gid_t *groups = calloc((size_t)argc, sizeof(gid_t));
	size_t ngroups = 0;
	if (!groups)
		fail("allocate", "groups");
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "-s") && i + 1 < argc) {
			set_sysctl(argv[++i]);
		} else if (!strcmp(argv[i], "-h") && i + 1 < argc) {
			const char *h = argv[++i];
			if (sethostname(h, strlen(h)) < 0)
				fail("sethostname", h);
		} else if (!strcmp(argv[i], "-l")) {
			lock_in = 1;
		} else if (!strcmp(argv[i], "-u") && i + 1 < argc) {
			uid = parse_id(argv[++i]);
		} else if (!strcmp(argv[i], "-g") && i + 1 < argc) {
			gid = parse_id(argv[++i]);
		} else if (!strcmp(argv[i], "-G") && i + 1 < argc) {
			groups[ngroups++] = (gid_t)parse_id(argv[++i]);
		} else {
			errno = EINVAL;
			fail("argument", argv[i]);
		}
	}
	int ready = fcntl(READY_FD, F_GETFD) >= 0;
	/*
	 * An inherited fd would outlive the root switch (/proc/<pause>/fd/N
	 * reopens it): keep none but the readiness fd, closed once used.
	 */
	if (lock_in) {
		if (syscall(SYS_close_range, 0, READY_FD - 1, 0) < 0 ||
		    syscall(SYS_close_range, READY_FD + 1, ~0U, 0) < 0)
			fail("close_range", "inherited fds");
		isolate_root();
		if (gid < 0)
			gid = uid; /* -u alone: the same gid, as before -g existed */
		drop_privileges(uid, gid, groups, ngroups);
		confine();
	}
	if (ready) {
		if (write(READY_FD, "R", 1) < 0)
			(void)0;
		close(READY_FD);
	}
	sigset_t none;
	sigemptyset(&none);
	for (;;)
		sigsuspend(&none);
}

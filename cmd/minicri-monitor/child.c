/* minicri-monitor: the children it waits for and signals. A child
 * subreaper, it reaps its helpers, the pause, the containers' inits (which
 * re-parent to it when their helper exits) and any orphan of a host-PID
 * pod's containers. It takes as a child only what a helper named by pid and
 * start time (named_child): a pid is reused once reaped. */
#define _GNU_SOURCE
#include "child.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "exit.h"
#include "proc.h"

/*
 * Children that exited before a helper named them: the pause or an init
 * that died at once. Kept so that no exit status is lost, under the pid and
 * the start time of the process reaped: a pid alone is reused (in a host-PID
 * pod the monitor also reaps the containers' orphans, and a new init may get
 * an orphan's pid). Only a process created after a helper that has not
 * answered yet can be what that helper names, so nothing else is kept, and
 * an entry goes when no such helper is left (early_sweep).
 */
#define EARLY 64
static struct {
	pid_t pid;
	unsigned long long start;
	int status;
} early[EARLY];
static int early_next;

/* claimable: a helper still to answer started no later than a process
 * started at start, so the process may be one it started. */
static int claimable(unsigned long long start)
{
	for (struct helper *h = helpers; h; h = h->next)
		if (h->sock >= 0 && h->start <= start)
			return 1;
	return 0;
}

static void keep_early(pid_t pid, unsigned long long start, int status)
{
	if (!start || !claimable(start))
		return; /* an orphan (host-PID pods): no helper can name it */
	early[early_next].pid = pid;
	early[early_next].start = start;
	early[early_next].status = status;
	early_next = (early_next + 1) % EARLY;
}

void early_sweep(void)
{
	for (int i = 0; i < EARLY; i++)
		if (early[i].pid && !claimable(early[i].start))
			early[i].pid = 0;
}

/* take_early: the status of the process pid that started at start, if it
 * was reaped before its helper named it. */
static int take_early(pid_t pid, unsigned long long start, int *status)
{
	for (int i = 0; i < EARLY; i++)
		if (early[i].pid == pid && early[i].start == start) {
			early[i].pid = 0;
			*status = early[i].status;
			return 1;
		}
	return 0;
}

/*
 * named_child checks the process a helper named (a new container's init,
 * the pause, a restored process) before the monitor takes it as its own,
 * to wait for and to signal: a pid above 1 that fits pid_t, with the start
 * time the helper read, created no earlier than the helper, and either
 * reaped here already (its status in *status: 1) or a process, or a zombie,
 * descending from this monitor (0). -1: refused, why in err.
 */
int named_child(struct helper *h, struct reply *r, int *status, char *err, size_t n)
{
	struct pinfo pi;
	if (!pid_ok(r->pid)) {
		snprintf(err, n, "the monitor helper named pid %lld: not a process it can have started", r->pid);
		return -1;
	}
	pid_t pid = (pid_t)r->pid;
	if (!r->start_time || r->start_time < h->start) {
		snprintf(err, n, "the monitor helper named pid %d without a start time after its own", (int)pid);
		return -1;
	}
	if (proc_info(pid, &pi) == 0 && pi.leader && pi.start == r->start_time && proc_descends(pid, getpid())) {
		/* It is still here (running, or a zombie not reaped yet), so a
		 * status kept under its pid and start tick is an earlier
		 * process's: the start time counts clock ticks, and a pid
		 * reused within one (ns_last_pid) has the same identity. */
		int stale;
		take_early(pid, r->start_time, &stale);
		return 0;
	}
	if (take_early(pid, r->start_time, status))
		return 1; /* it exited while the helper was still running */
	snprintf(err, n, "the monitor helper named pid %d: not a process of this monitor", (int)pid);
	return -1;
}

void pause_reaped(int status)
{
	pause_st.exited = 1;
	pause_st.code = exit_code(status);
	clock_gettime(CLOCK_REALTIME, &pause_st.exited_at);
	mlog("INFO", "pause exited: code %d", pause_st.code);
}

void reap_children(void)
{
	for (;;) {
		siginfo_t w = {0};
		if (waitid(P_ALL, 0, &w, WEXITED | WNOHANG | WNOWAIT) != 0 || w.si_pid <= 0)
			return;
		pid_t pid = w.si_pid;
		struct pinfo pi = {0};
		proc_info(pid, &pi); /* the zombie's start time: which process it was */
		int status;
		if (waitpid(pid, &status, WNOHANG) != pid)
			return;
		if (helper_reaped(pid, status))
			continue;
		if (pid == pause_st.pid && !pause_st.exited) {
			pause_reaped(status);
			continue;
		}
		struct ctr *k;
		for (k = ctrs; k; k = k->next)
			if (k->pid == pid && !k->reaped)
				break;
		if (k) {
			ctr_reaped(k, status);
			continue;
		}
		/* An orphan (host-PID pods) or a child not named yet. */
		keep_early(pid, pi.start, status);
	}
}

int signal_child(pid_t pid, int sig)
{
	if (!pid_ok(pid)) {
		errno = ESRCH;
		return -1;
	}
	return kill(pid, sig);
}

void sigkill(struct ctr *k)
{
	if (!k->reaped && signal_child(k->pid, SIGKILL) != 0 && errno != ESRCH)
		mlog("WARN", "container %s: kill: %s", k->id, strerror(errno));
}

void free_ctr(struct ctr *k)
{
	attach_container_gone(k);
	int *fds[] = {&k->out.fd, &k->err.fd, &k->stdin_fd, &k->log_fd, &k->dir_fd, &k->oom_ino, &k->oom_evt, &k->oom_dir, &k->oom_par};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (*fds[i] >= 0) {
			close(*fds[i]);
			*fds[i] = -1;
		}
	k->gone = 1;
}

struct ctr *adopt(const char *id, struct reply *r, const int *reaped)
{
	struct ctr *old = find_ctr(id);
	if (old)
		free_ctr(old); /* replaced (a restore of an exited container) */
	struct ctr *k = calloc(1, sizeof *k);
	if (!k)
		return NULL;
	snprintf(k->id, sizeof k->id, "%s", id);
	k->pid = (pid_t)r->pid;
	k->ctx = r->ctx ? strdup(r->ctx) : NULL;
	k->runtime = strdup(r->runtime ? r->runtime : "");
	k->tty = r->tty;
	k->stdin_once = r->stdin_once;
	k->out = (struct stream){.fd = take_fd(r, "out"), .kind = FR_STDOUT};
	k->err = (struct stream){.fd = take_fd(r, "err"), .kind = FR_STDERR};
	k->stdin_fd = take_fd(r, "in");
	k->log_fd = take_fd(r, "log");
	k->dir_fd = take_fd(r, "dir");
	k->oom_ino = take_fd(r, "oomino");
	k->oom_evt = take_fd(r, "oomevt");
	k->oom_dir = take_fd(r, "oomdir");
	k->oom_par = take_fd(r, "oompar");
	k->oom_base = r->oombase;
	k->oom_base_ok = r->has_oombase;
	if (r->started) {
		k->started = 1;
		clock_gettime(CLOCK_REALTIME, &k->started_at);
	}
	int fds[] = {k->out.fd, k->err.fd, k->stdin_fd, k->oom_ino, k->oom_evt};
	for (size_t i = 0; i < sizeof fds / sizeof fds[0]; i++)
		if (fds[i] >= 0)
			set_nonblock(fds[i]);
	k->next = ctrs;
	ctrs = k;
	if (k->oom_ino >= 0)
		oom_check(k);
	if (reaped)
		ctr_reaped(k, *reaped); /* it exited while the helper was still running */
	return k;
}

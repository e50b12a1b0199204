/* minicri-monitor: running the short-lived Go helper, `HELPER DIR` with fd 3 one end of a SOCK_SEQPACKET socketpair. The monitor sends
 * one message, {"req":<request>,"ctx":<container context|null>[,"code":N]};
 * the helper answers with one message of "key value" lines (error, pid, ctx,
 * runtime, state, ref, pod, resp, oom, tty, stdin_once, started, oombase,
 * fds) and the descriptors named by the "fds" line, then exits. */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include "helper.h"
#include "proc.h"

#define MAX_MSG (64 * 1024)

struct helper *helpers;
const char *helper_exe, *mon_dir;

int helper_spawn(struct buf *msg, struct conn *c, const char *id, helper_done fn)
{
	int sv[2];
	if (!msg->p || socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) != 0)
		return 0;
	struct helper *h = calloc(1, sizeof *h);
	if (!h) {
		close(sv[0]);
		close(sv[1]);
		return 0;
	}
	pid_t pid = fork();
	if (pid == 0) {
		sigset_t none;
		sigemptyset(&none);
		sigprocmask(SIG_SETMASK, &none, NULL);
		signal(SIGPIPE, SIG_DFL);
		if (dup2(sv[1], 3) != 3)
			_exit(127);
		char *argv[] = {"minicri-monitor-helper", (char *)mon_dir, NULL};
		execv(helper_exe, argv);
		_exit(127);
	}
	close(sv[1]);
	if (pid < 0 || send(sv[0], msg->p, msg->len, MSG_NOSIGNAL) != (ssize_t)msg->len) {
		mlog("ERROR", "run the monitor helper: %s", strerror(errno));
		close(sv[0]);
		free(h);
		if (pid > 0)
			kill(pid, SIGKILL); /* reaped as an unknown child */
		return 0;
	}
	h->pid = pid;
	struct pinfo pi;
	h->start = proc_info(pid, &pi) == 0 ? pi.start : 0; /* our child, not reaped: always there */
	h->sock = sv[0];
	h->conn = c;
	h->fn = fn;
	snprintf(h->id, sizeof h->id, "%s", id);
	h->next = helpers;
	helpers = h;
	return 1;
}

int helpers_unanswered(void)
{
	int n = 0;
	for (struct helper *h = helpers; h; h = h->next)
		n += h->sock >= 0;
	return n;
}

int helper_creating(const char *id)
{
	for (struct helper *h = helpers; h; h = h->next)
		if (h->sock >= 0 && id[0] && strcmp(h->id, id) == 0)
			return 1;
	return 0;
}

void helper_sweep(void)
{
	for (struct helper **pp = &helpers; *pp;) {
		struct helper *h = *pp;
		if (h->sock >= 0 || !h->reaped) {
			pp = &h->next;
			continue;
		}
		*pp = h->next;
		free(h);
	}
}

int helper_reaped(pid_t pid, int status)
{
	for (struct helper *h = helpers; h; h = h->next) {
		if (h->pid != pid)
			continue;
		if (status != 0)
			mlog("WARN", "monitor helper %d for %s ended with status 0x%x", (int)pid, h->id[0] ? h->id : "the pod",
			     (unsigned)status);
		h->reaped = 1;
		return 1;
	}
	return 0;
}

int take_fd(struct reply *r, const char *name)
{
	for (int i = 0; i < r->nfds; i++)
		if (r->fds[i] >= 0 && strcmp(r->fdnames[i], name) == 0) {
			int fd = r->fds[i];
			r->fds[i] = -1;
			return fd;
		}
	return -1;
}

static void parse_fds(struct reply *r, char *v)
{
	int i = 0;
	for (char *save = NULL, *t = strtok_r(v, " ", &save); t && i < r->nfds; t = strtok_r(NULL, " ", &save), i++)
		snprintf(r->fdnames[i], sizeof r->fdnames[i], "%s", t);
}

/* parse_num: a whole decimal number, else -1. */
static long long parse_num(const char *v)
{
	char *end;
	errno = 0;
	long long x = strtoll(v, &end, 10);
	return errno || end == v || *end || x < 0 ? -1 : x;
}

static void parse_reply(struct reply *r, char *msg)
{
	for (char *line = msg; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = 0;
		char *v = strchr(line, ' ');
		if (v) {
			*v++ = 0;
			if (!strcmp(line, "error"))
				r->error = v;
			else if (!strcmp(line, "pid")) {
				r->has_pid = 1;
				r->pid = parse_num(v);
			} else if (!strcmp(line, "start_time"))
				r->start_time = parse_num(v) > 0 ? (unsigned long long)parse_num(v) : 0;
			else if (!strcmp(line, "ctx"))
				r->ctx = v;
			else if (!strcmp(line, "runtime"))
				r->runtime = v;
			else if (!strcmp(line, "state"))
				r->state = v;
			else if (!strcmp(line, "ref"))
				r->ref = v;
			else if (!strcmp(line, "pod"))
				r->pod = v;
			else if (!strcmp(line, "resp"))
				r->resp = v;
			else if (!strcmp(line, "oom"))
				r->oom = atoi(v) != 0;
			else if (!strcmp(line, "tty"))
				r->tty = atoi(v) != 0;
			else if (!strcmp(line, "stdin_once"))
				r->stdin_once = atoi(v) != 0;
			else if (!strcmp(line, "started"))
				r->started = atoi(v) != 0;
			else if (!strcmp(line, "oombase")) {
				r->oombase = strtoull(v, NULL, 10);
				r->has_oombase = 1;
			} else if (!strcmp(line, "fds"))
				parse_fds(r, v);
		}
		line = nl ? nl + 1 : NULL;
	}
}

void helper_readable(struct helper *h)
{
	static char msg[MAX_MSG + 1];
	union {
		char b[CMSG_SPACE(sizeof(int) * MAX_FDS)];
		struct cmsghdr align;
	} cbuf;
	struct iovec iov = {.iov_base = msg, .iov_len = MAX_MSG};
	struct msghdr mh = {.msg_iov = &iov, .msg_iovlen = 1, .msg_control = cbuf.b, .msg_controllen = sizeof cbuf.b};
	ssize_t n = recvmsg(h->sock, &mh, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	struct reply r;
	memset(&r, 0, sizeof r);
	for (struct cmsghdr *cm = CMSG_FIRSTHDR(&mh); cm; cm = CMSG_NXTHDR(&mh, cm)) {
		if (cm->cmsg_level != SOL_SOCKET || cm->cmsg_type != SCM_RIGHTS)
			continue;
		size_t k = (cm->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (size_t i = 0; i < k && r.nfds < MAX_FDS; i++)
			memcpy(&r.fds[r.nfds++], CMSG_DATA(cm) + i * sizeof(int), sizeof(int));
	}
	if (n > 0 && !(mh.msg_flags & (MSG_TRUNC | MSG_CTRUNC))) {
		msg[n] = 0;
		parse_reply(&r, msg);
	} else {
		r.error = n > 0 ? "monitor helper answer too large" : "monitor helper exited without answering (see monitor.log)";
	}
	close(h->sock);
	h->sock = -1;
	h->fn(h, &r);
	for (int i = 0; i < r.nfds; i++)
		if (r.fds[i] >= 0)
			close(r.fds[i]);
}

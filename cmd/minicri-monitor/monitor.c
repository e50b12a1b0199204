/*
 * minicri-monitor: the long-lived part of a pod's monitor.
 *
 *   minicri-monitor HELPER DIR     fd 3: the daemon's readiness pipe
 *                                  fd 4: DIR, opened O_RDONLY|O_DIRECTORY
 *                                  fd 1, 2: DIR/monitor.log
 *
 * It detaches (a new session, its parent exits), becomes a child subreaper,
 * listens on DIR/monitor.sock (0600) and runs one event loop (poll(2),
 * signalfd for SIGCHLD). Everything that creates processes or resolves a
 * path (the pause, libcontainer or a runtime binary, the log file beneath
 * the log directory, cgroup files) is done by a short-lived Go helper,
 * `HELPER monitor-helper DIR`, forked per request (see helper.c and
 * monitor/helper.go): the processes it starts re-parent to this subreaper
 * when it exits, and it hands over, on a socketpair with SCM_RIGHTS, the
 * descriptors this process keeps (output pipes or TTY master, stdin, log,
 * the container directory for exit.json, OOM-watch files).
 *
 * This process reaps, records exits (exit.json, atomically), writes the CRI
 * log, serves attach, resize and kill, and answers the daemon's protocol
 * (monitor/protocol.go: one JSON request line, one JSON response line).
 * Requests it does not know are handed to a helper with the container's
 * context: a new operation that creates processes needs no change here.
 *
 * Its files, each calling only those below it (hack/ccalls.sh checks it):
 *   monitor.c   start-up and the event loop: what poll(2) reported goes to
 *   protocol.c  the daemon's requests and their waits
 *   start.c     StartContainer through the init's exec.fifo, without a helper
 *   child.c     the children: reaping, the exits reaped early, named pids, signals
 *   exit.c      a container's exit: its helper, OOM verdict, exit.json
 *   output.c    container output into the CRI log
 *   attach.c    attach sessions
 *   helper.c    running a helper, reading its answer
 *   reply.c     the protocol's answers
 *   state.c     the shared records: containers, pause, connections
 *   proc.c      which process a pid names (/proc)
 *   util.c      buffers, clocks, log lines, a JSON scanner
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "attach.h"
#include "child.h"
#include "exit.h"
#include "helper.h"
#include "output.h"
#include "protocol.h"
#include "reply.h"
#include "start.h"
#include "state.h"

#define READY_FD 3
#define MAX_REQ (64 * 1024)

static int listen_fd = -1, sig_fd = -1, ready_fd = READY_FD;

/* ---- start-up ------------------------------------------------------------------------ */

static void pod_start_reply(struct helper *h, struct reply *r)
{
	struct buf b = {0};
	char why[256] = "";
	if (r->pod)
		snprintf(pod_id, 160, "%s", r->pod);
	if (!r->error && !r->has_pid)
		snprintf(why, sizeof why, "the monitor helper named no pause");
	if (!r->error && r->has_pid) {
		int status, v = named_child(h, r, &status, why, sizeof why);
		if (v >= 0) {
			pause_st.pid = (pid_t)r->pid;
			pause_st.ref = r->ref ? strdup(r->ref) : NULL;
		}
		if (v == 1)
			pause_reaped(status);
	}
	const char *fail = r->error ? r->error : why[0] ? why : NULL;
	if (fail) {
		buf_add(&b, "{\"error\":", 9);
		buf_str(&b, fail);
		buf_addf(&b, ",\"state\":%s}\n", r->state ? r->state : "{}");
	} else {
		buf_addf(&b, "{\"state\":%s}\n", r->state ? r->state : "{}");
	}
	ssize_t w = b.p ? write(ready_fd, b.p, b.len) : -1;
	if (w != (ssize_t)b.len)
		mlog("WARN", "cannot report readiness to the daemon: %s", strerror(errno));
	close(ready_fd);
	ready_fd = -1;
	buf_free(&b);
	if (fail) {
		mlog("ERROR", "monitor start failed: %s", fail);
		unlinkat(DIR_FD, "monitor.sock", 0);
		exit(1);
	}
	mlog("INFO", "monitor ready: pause %d, monitor %d", (int)pause_st.pid, (int)getpid());
}
static int listen_socket(void)
{
	if (unlinkat(DIR_FD, "monitor.sock", 0) != 0 && errno != ENOENT)
		return -1;
	int s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (s < 0)
		return -1;
	struct sockaddr_un a = {.sun_family = AF_UNIX};
	snprintf(a.sun_path, sizeof a.sun_path, "/proc/self/fd/%d/monitor.sock", DIR_FD);
	mode_t old = umask(0177); /* whoever may connect may create and kill containers */
	int rc = bind(s, (struct sockaddr *)&a, sizeof a);
	umask(old);
	if (rc != 0 || fchmodat(DIR_FD, "monitor.sock", 0600, 0) != 0 || listen(s, 128) != 0) {
		close(s);
		return -1;
	}
	return s;
}

static void fail_start(const char *what)
{
	char msg[512];
	snprintf(msg, sizeof msg, "%s: %s", what, strerror(errno));
	struct buf b = {0};
	buf_add(&b, "{\"error\":", 9);
	buf_str(&b, msg);
	buf_add(&b, ",\"state\":{}}\n", 13);
	if (b.p && write(READY_FD, b.p, b.len) < 0)
		mlog("ERROR", "cannot report failure to the daemon");
	mlog("ERROR", "%s", msg);
	exit(1);
}

static void start(void)
{
	if (fcntl(READY_FD, F_SETFD, FD_CLOEXEC) != 0 || fcntl(DIR_FD, F_SETFD, FD_CLOEXEC) != 0)
		fail_start("monitor descriptors 3 and 4");
	pid_t pid = fork();
	if (pid < 0)
		fail_start("fork");
	if (pid > 0)
		_exit(0); /* re-parented away from the daemon */
	if (setsid() < 0)
		fail_start("setsid");
	if (prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0)
		fail_start("set child subreaper");
	signal(SIGPIPE, SIG_IGN);
	sigset_t set;
	sigemptyset(&set);
	sigaddset(&set, SIGCHLD);
	if (sigprocmask(SIG_BLOCK, &set, NULL) != 0 || (sig_fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC)) < 0)
		fail_start("signalfd");
	if ((listen_fd = listen_socket()) < 0)
		fail_start("listen on monitor.sock");
	struct buf m = {0};
	buf_add(&m, "{\"req\":{\"op\":\"pod-start\"},\"ctx\":null}", 37);
	if (!helper_spawn(&m, NULL, "", pod_start_reply))
		fail_start("run the monitor helper");
	buf_free(&m);
}

/* ---- the loop --------------------------------------------------------------------------- */

enum { P_LISTEN, P_SIG, P_CONN, P_OUT, P_ERR, P_STDIN, P_OOM, P_HELPER, P_START };
struct pref {
	int kind;
	void *p;
};

static void conn_io(struct conn *c, short rev)
{
	if (rev & POLLOUT && c->out.len) {
		ssize_t w = write(c->fd, c->out.p, c->out.len);
		if (w > 0)
			buf_consume(&c->out, (size_t)w);
		else if (w < 0 && errno != EAGAIN && errno != EINTR)
			c->dead = 1;
	}
	if (c->dead || !(rev & (POLLIN | POLLHUP | POLLERR)))
		return;
	if (c->state == C_ATTACH) {
		attach_readable(c);
		return;
	}
	if (c->state != C_REQ || c->close_after_flush)
		return;
	char rb[4096];
	ssize_t r = read(c->fd, rb, sizeof rb);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0 || buf_add(&c->in, rb, (size_t)r) != 0) {
		c->dead = 1;
		return;
	}
	char *nl = memchr(c->in.p, '\n', c->in.len);
	if (!nl) {
		if (c->in.len > MAX_REQ)
			conn_reply_error(c, "bad request: too long");
		return;
	}
	size_t n = (size_t)(nl - c->in.p);
	char *line = malloc(n + 1);
	if (!line) {
		c->dead = 1;
		return;
	}
	memcpy(line, c->in.p, n);
	line[n] = 0;
	buf_consume(&c->in, n + 1); /* what follows is attach frames */
	handle_request(c, line, n);
	free(line);
}

static void accept_conns(void)
{
	for (;;) {
		int fd = accept4(listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			return;
		if (!conn_new(fd)) {
			close(fd);
			return;
		}
	}
}

static void reap(void)
{
	struct signalfd_siginfo si;
	while (read(sig_fd, &si, sizeof si) == sizeof si)
		;
	reap_children();
}

/* dispatch handles what poll reported on each descriptor of the set. */
static void dispatch(struct pollfd *pfd, struct pref *ref, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		short rev = pfd[i].revents;
		if (!rev)
			continue;
		struct ctr *k = ref[i].p;
		switch (ref[i].kind) {
		case P_LISTEN: accept_conns(); break;
		case P_SIG: reap(); break;
		case P_CONN: conn_io(ref[i].p, rev); break;
		case P_OUT:
			if (k->out.fd == pfd[i].fd)
				stream_read(k, &k->out);
			maybe_finalize(k);
			break;
		case P_ERR:
			if (k->err.fd == pfd[i].fd)
				stream_read(k, &k->err);
			maybe_finalize(k);
			break;
		case P_STDIN: attach_stdin_writable(k); break;
		case P_OOM:
			if (k->oom_ino == pfd[i].fd || k->oom_evt == pfd[i].fd)
				oom_event(k);
			maybe_finalize(k);
			break;
		case P_HELPER: helper_readable(ref[i].p); break;
		case P_START: {
			struct conn *c = ref[i].p;
			if (c->state == C_WAIT && c->wait == W_START && c->start_fd == pfd[i].fd)
				start_check(c, 0);
			break;
		}
		}
	}
}

/* The poll set: its descriptors and what each is (grown as needed). */
static struct pollfd *pfd;
static struct pref *ref;
static size_t cap;

static void poll_add(size_t *n, int fd, short ev, int kind, void *p)
{
	pfd[*n] = (struct pollfd){.fd = fd, .events = ev};
	ref[(*n)++] = (struct pref){kind, p};
}

static size_t poll_set(void)
{
	size_t n = 0, need = 2;
	for (struct helper *h = helpers; h; h = h->next)
		need++;
	for (struct conn *c = conns; c; c = c->next)
		need += 2;
	for (struct ctr *k = ctrs; k; k = k->next)
		need += 4;
	if (need > cap) {
		cap = need * 2;
		pfd = realloc(pfd, cap * sizeof *pfd);
		ref = realloc(ref, cap * sizeof *ref);
		if (!pfd || !ref) {
			mlog("ERROR", "out of memory");
			exit(1);
		}
	}
	if (listen_fd >= 0)
		poll_add(&n, listen_fd, POLLIN, P_LISTEN, NULL);
	poll_add(&n, sig_fd, POLLIN, P_SIG, NULL);
	for (struct conn *c = conns; c; c = c->next) {
		short ev = c->out.len ? POLLOUT : 0;
		if ((c->state == C_REQ && !c->close_after_flush) || (c->state == C_ATTACH && !c->pending.len))
			ev |= POLLIN;
		if (ev)
			poll_add(&n, c->fd, ev, P_CONN, c);
		if (c->state == C_WAIT && c->wait == W_START && c->start_fd >= 0)
			poll_add(&n, c->start_fd, POLLIN, P_START, c);
	}
	for (struct ctr *k = ctrs; k; k = k->next) {
		if (k->out.fd >= 0)
			poll_add(&n, k->out.fd, POLLIN, P_OUT, k);
		if (k->err.fd >= 0)
			poll_add(&n, k->err.fd, POLLIN, P_ERR, k);
		if (k->stdin_fd >= 0 && attach_wants_stdin_out(k))
			poll_add(&n, k->stdin_fd, POLLOUT, P_STDIN, k);
		if (k->oom_ino >= 0 || k->oom_evt >= 0)
			poll_add(&n, k->oom_ino >= 0 ? k->oom_ino : k->oom_evt, POLLIN, P_OOM, k);
	}
	for (struct helper *h = helpers; h; h = h->next)
		if (h->sock >= 0)
			poll_add(&n, h->sock, POLLIN, P_HELPER, h);
	return n;
}

/* poll_timeout: until the nearest deadline of a wait, at most 100 ms while
 * an exit waits for its output or OOM watch, else none (-1). */
static int poll_timeout(void)
{
	int timeout = -1;
	for (struct conn *c = conns; c; c = c->next)
		if (c->state == C_WAIT && c->wait != W_HELPER) {
			long long ms = ms_until(c->deadline);
			ms = ms < 0 ? 0 : ms + 1;
			if (timeout < 0 || ms < timeout)
				timeout = (int)ms;
		}
	for (struct ctr *k = ctrs; k; k = k->next)
		if (k->reaped && !k->final && k->exit_helper_done && (timeout < 0 || timeout > 100))
			timeout = 100;
	return timeout;
}

/* stop_listening, once the pod stopped: a late request is refused rather
 * than left unanswered, and attach sessions end. */
static void stop_listening(void)
{
	if (!stopping || listen_fd < 0)
		return;
	unlinkat(DIR_FD, "monitor.sock", 0);
	close(listen_fd);
	listen_fd = -1;
	attach_end_all();
}

static void loop(void)
{
	while (!(stopping && !conns)) {
		size_t n = poll_set();
		if (poll(pfd, n, poll_timeout()) < 0 && errno != EINTR) {
			mlog("ERROR", "poll: %s", strerror(errno));
			exit(1);
		}
		dispatch(pfd, ref, n);
		waits_check(); /* exits that became final in dispatch */
		start_waiters();
		waits_timeout();
		finalize_all(); /* exits that waited for their output or OOM watch */
		waits_check();
		early_sweep();
		stop_check();
		stop_listening();
		sweep_ctrs();
		helper_sweep();
		sweep_conns();
	}
	unlinkat(DIR_FD, "monitor.sock", 0);
	mlog("INFO", "monitor exiting");
}

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: minicri-monitor HELPER DIR (fd 3: readiness pipe, fd 4: DIR)\n");
		return 2;
	}
	helper_exe = argv[1];
	mon_dir = argv[2];
	start();
	loop();
	return 0;
}

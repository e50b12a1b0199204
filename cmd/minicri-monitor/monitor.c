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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "helper.h"
#include "monitor.h"
#include "proc.h"

#define READY_FD 3
#define DIR_FD 4
#define MAX_REQ (64 * 1024)

struct ctr *ctrs;
struct conn *conns;
struct pause_state pause_st = {.pid = -1};
const char *helper_exe, *mon_dir;
static int listen_fd = -1, sig_fd = -1, ready_fd = READY_FD, stopping;

static struct timespec mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

static long long ms_until(struct timespec t)
{
	struct timespec n = mono();
	return (long long)(t.tv_sec - n.tv_sec) * 1000 + (t.tv_nsec - n.tv_nsec) / 1000000;
}

static struct timespec after_ms(long long ms)
{
	struct timespec t = mono();
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	return t;
}

static void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

struct ctr *find_ctr(const char *id)
{
	for (struct ctr *k = ctrs; k; k = k->next)
		if (!k->gone && strcmp(k->id, id) == 0)
			return k;
	return NULL;
}

/* ---- responses ----------------------------------------------------------------- */

void ctr_info(struct buf *b, struct ctr *k)
{
	char t[48];
	buf_addf(b, "{\"pid\":%d", (int)k->pid);
	if (k->started) {
		fmt_time(t, &k->started_at);
		buf_addf(b, ",\"started_at\":\"%s\"", t);
	}
	if (k->final) {
		fmt_time(t, &k->finished_at);
		buf_addf(b, ",\"exit\":{\"code\":%d,\"finished_at\":\"%s\"%s}", k->code, t,
			 k->oom_killed ? ",\"oom_killed\":true" : "");
	}
	if (k->runtime && k->runtime[0]) {
		buf_add(b, ",\"runtime\":", 11);
		buf_str(b, k->runtime);
	}
	buf_add(b, "}", 1);
}

static void pause_info(struct buf *b)
{
	buf_addf(b, "{\"ref\":%s,\"exited\":%s,\"exit_code\":%d", pause_st.ref ? pause_st.ref : "{\"pid\":0,\"start_time\":0}",
		 pause_st.exited ? "true" : "false", pause_st.code);
	if (pause_st.exited) {
		char t[48];
		fmt_time(t, &pause_st.exited_at);
		buf_addf(b, ",\"exited_at\":\"%s\"", t);
	}
	buf_add(b, "}", 1);
}

void conn_reply(struct conn *c, struct buf *b)
{
	buf_add(&c->out, b->p, b->len);
	buf_add(&c->out, "\n", 1);
	c->close_after_flush = 1;
	c->state = C_REQ;
	c->wait = W_NONE;
}

void conn_reply_error(struct conn *c, const char *fmt, ...)
{
	char msg[2048];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct buf b = {0};
	buf_add(&b, "{\"error\":", 9);
	buf_str(&b, msg);
	buf_add(&b, "}", 1);
	conn_reply(c, &b);
	buf_free(&b);
}

static void reply_ctr(struct conn *c, struct ctr *k)
{
	struct buf b = {0};
	buf_add(&b, "{\"container\":", 13);
	ctr_info(&b, k);
	buf_add(&b, "}", 1);
	conn_reply(c, &b);
	buf_free(&b);
}

static void reply_pause(struct conn *c)
{
	struct buf b = {0};
	buf_add(&b, "{\"pause\":", 9);
	pause_info(&b);
	buf_add(&b, "}", 1);
	conn_reply(c, &b);
	buf_free(&b);
}

/* ---- exits --------------------------------------------------------------------- */

static int exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* write_exit records k's exit in exit.json of its directory, atomically:
 * a temp file written and synced, renamed over, the directory synced. */
static void write_exit(struct ctr *k)
{
	if (k->dir_fd < 0)
		return;
	char tmp[64], t[48];
	snprintf(tmp, sizeof tmp, ".exit.json.tmp-%d", (int)getpid());
	fmt_time(t, &k->finished_at);
	struct buf b = {0};
	buf_addf(&b, "{\"code\":%d,\"finished_at\":\"%s\"%s}", k->code, t, k->oom_killed ? ",\"oom_killed\":true" : "");
	int fd = openat(k->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int ok = fd >= 0 && b.p && write(fd, b.p, b.len) == (ssize_t)b.len && fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (ok && renameat(k->dir_fd, tmp, k->dir_fd, "exit.json") == 0) {
		if (fsync(k->dir_fd) != 0)
			mlog("WARN", "container %s: sync exit record dir: %s", k->id, strerror(errno));
	} else {
		mlog("ERROR", "container %s: record exit: %s", k->id, strerror(errno));
		unlinkat(k->dir_fd, tmp, 0);
	}
	buf_free(&b);
}

static int read_key(int dirfd, const char *file, const char *key, unsigned long long *v)
{
	char data[4096];
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, data, sizeof data - 1);
	close(fd);
	if (n <= 0)
		return -1;
	data[n] = 0;
	size_t kl = strlen(key);
	for (char *l = data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
			*v = strtoull(l + kl + 1, NULL, 10);
			return 0;
		}
	}
	return -1;
}

static void oom_watch_end(struct ctr *k)
{
	if (k->oom_ino >= 0)
		close(k->oom_ino);
	if (k->oom_evt >= 0)
		close(k->oom_evt);
	k->oom_ino = k->oom_evt = -1;
}

/* oom_check: cgdriver.OOMWatch.check, on every change of memory.events or
 * cgroup.events, and once more when the cgroup empties or goes. */
static void oom_check(struct ctr *k)
{
	unsigned long long n, populated;
	if (read_key(k->oom_dir, "memory.events", "oom_kill", &n) == 0 && n > 0)
		k->oom_seen = 1;
	if (read_key(k->oom_dir, "cgroup.events", "populated", &populated) != 0 || populated == 0)
		oom_watch_end(k);
}

static void oom_event(struct ctr *k)
{
	char b[4096];
	if (k->oom_ino >= 0) {
		while (read(k->oom_ino, b, sizeof b) > 0)
			;
		oom_check(k);
		return;
	}
	if (read(k->oom_evt, b, 8) != 8)
		return;
	/* cgroup v1: the eventfd also fires when the cgroup is removed. */
	if (faccessat(k->oom_dir, "memory.oom_control", F_OK, 0) == 0)
		k->oom_seen = 1;
	else
		oom_watch_end(k);
}

static void notify_waiters(struct ctr *k);

static void maybe_finalize(struct ctr *k)
{
	if (!k->reaped || k->final || !k->exit_helper_done)
		return;
	long long since = -ms_until(k->reaped_mono);
	int drained = k->out.fd < 0 && k->err.fd < 0;
	int watched = k->oom_ino < 0 && k->oom_evt < 0;
	if ((!drained && since < 2000) || (!watched && since < 1000))
		return;
	if (!drained)
		mlog("WARN", "container %s: output still open after exit; not waiting for it", k->id);
	int oom = k->exit_helper_oom || k->oom_seen;
	unsigned long long n;
	if (!oom && k->oom_base_ok && k->code == 128 + SIGKILL && k->oom_par >= 0 &&
	    read_key(k->oom_par, "memory.events", "oom_kill", &n) == 0 && n > k->oom_base)
		oom = 1; /* the parent's count rose: this cgroup's kill, seen too late */
	k->oom_killed = oom;
	/* Lines held without a newline yet are part of the output before the exit. */
	if (k->out.fd >= 0)
		log_flush_partial(k, &k->out);
	if (k->err.fd >= 0)
		log_flush_partial(k, &k->err);
	write_exit(k);
	k->final = 1;
	mlog("INFO", "container %s exited: code %d, oom_killed %d", k->id, k->code, oom);
	attach_container_final(k);
	notify_waiters(k);
}

static void exit_helper_reply(struct helper *h, struct reply *r);

static void ctr_reaped(struct ctr *k, int status)
{
	k->reaped = 1;
	k->code = exit_code(status);
	clock_gettime(CLOCK_REALTIME, &k->finished_at);
	k->reaped_mono = mono();
	/* The helper kills what is left in the container's cgroup (shared-PID
	 * pods) and reads its OOM kill count while the cgroup is there. */
	struct buf m = {0};
	buf_addf(&m, "{\"req\":{\"op\":\"exited\",\"id\":");
	buf_str(&m, k->id);
	buf_addf(&m, "},\"ctx\":%s,\"code\":%d}", k->ctx ? k->ctx : "null", k->code);
	if (!helper_spawn(&m, NULL, k->id, exit_helper_reply)) {
		k->exit_helper_done = 1;
		maybe_finalize(k);
	}
	buf_free(&m);
}

static void exit_helper_reply(struct helper *h, struct reply *r)
{
	struct ctr *k = find_ctr(h->id);
	if (!k)
		return;
	if (r->error)
		mlog("WARN", "container %s: after exit: %s", k->id, r->error);
	k->exit_helper_oom = r->oom;
	k->exit_helper_done = 1;
	maybe_finalize(k);
}

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

static void early_sweep(void)
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
static int named_child(struct helper *h, struct reply *r, int *status, char *err, size_t n)
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
	if (take_early(pid, r->start_time, status))
		return 1; /* it exited while the helper was still running */
	if (proc_info(pid, &pi) != 0 || !pi.leader || pi.start != r->start_time || !proc_descends(pid, getpid())) {
		snprintf(err, n, "the monitor helper named pid %d: not a process of this monitor", (int)pid);
		return -1;
	}
	return 0;
}

static void pause_reaped(int status)
{
	pause_st.exited = 1;
	pause_st.code = exit_code(status);
	clock_gettime(CLOCK_REALTIME, &pause_st.exited_at);
	mlog("INFO", "pause exited: code %d", pause_st.code);
}

static void reap(void)
{
	struct signalfd_siginfo si;
	while (read(sig_fd, &si, sizeof si) == sizeof si)
		;
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

/* ---- requests served here --------------------------------------------------------- */

/* signal_child is kill(2) for a child named_child took: never a pid of 1 or
 * less (-1 is every process, 0 the monitor's own group). */
static int signal_child(pid_t pid, int sig)
{
	if (!pid_ok(pid)) {
		errno = ESRCH;
		return -1;
	}
	return kill(pid, sig);
}

static void sigkill(struct ctr *k)
{
	if (!k->reaped && signal_child(k->pid, SIGKILL) != 0 && errno != ESRCH)
		mlog("WARN", "container %s: kill: %s", k->id, strerror(errno));
}

static void delete_helper_reply(struct helper *h, struct reply *r);

static void spawn_delete(struct conn *c, struct ctr *k)
{
	struct buf m = {0};
	buf_add(&m, "{\"req\":{\"op\":\"delete\",\"id\":", 27);
	buf_str(&m, k->id);
	buf_addf(&m, "},\"ctx\":%s}", k->ctx ? k->ctx : "null");
	c->state = C_WAIT;
	c->wait = W_HELPER;
	if (!helper_spawn(&m, c, k->id, delete_helper_reply))
		conn_reply_error(c, "destroy container: cannot run the monitor helper");
	buf_free(&m);
}

/* free_ctr forgets k: its descriptors now, its memory in the loop's sweep
 * (the poll table of this round may still name it). */
static void free_ctr(struct ctr *k)
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

static void sweep_ctrs(void)
{
	for (struct ctr **pp = &ctrs; *pp;) {
		struct ctr *k = *pp;
		if (!k->gone) {
			pp = &k->next;
			continue;
		}
		*pp = k->next;
		free(k->out.line);
		free(k->err.line);
		free(k->ctx);
		free(k->runtime);
		free(k);
	}
}

static void delete_helper_reply(struct helper *h, struct reply *r)
{
	struct ctr *k = find_ctr(h->id);
	if (r->error) {
		if (h->conn)
			conn_reply_error(h->conn, "destroy container: %s", r->error);
		return;
	}
	if (k)
		free_ctr(k);
	if (h->conn) {
		struct buf b = {0};
		buf_add(&b, "{}", 2);
		conn_reply(h->conn, &b);
		buf_free(&b);
	}
}

static void notify_waiters(struct ctr *k)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || strcmp(c->id, k->id) != 0)
			continue;
		if (c->wait == W_KILL_GRACE || c->wait == W_KILL_FORCE)
			reply_ctr(c, k);
		else if (c->wait == W_DELETE)
			spawn_delete(c, k);
	}
}

static void kill_request(struct conn *c, struct ctr *k, long long sig, long long timeout_ns)
{
	if (k->final) {
		reply_ctr(c, k);
		return;
	}
	c->state = C_WAIT;
	if (sig > 0 && sig < 65 && sig != SIGKILL && timeout_ns > 0) {
		if (!k->reaped && signal_child(k->pid, (int)sig) != 0 && errno != ESRCH) {
			conn_reply_error(c, "signal container: %s", strerror(errno));
			return;
		}
		c->wait = W_KILL_GRACE;
		long long ms = timeout_ns / 1000000;
		c->deadline = after_ms(ms > 86400000LL ? 86400000LL : ms);
		return;
	}
	sigkill(k);
	c->wait = W_KILL_FORCE;
	c->deadline = after_ms(30000);
}

static void stop_check(void);

static void stop_request(struct conn *c)
{
	for (struct ctr *k = ctrs; k; k = k->next)
		sigkill(k);
	if (pause_st.pid > 0 && !pause_st.exited && signal_child(pause_st.pid, SIGKILL) != 0 && errno != ESRCH)
		mlog("WARN", "kill pause: %s", strerror(errno));
	c->state = C_WAIT;
	c->wait = W_STOP;
	c->deadline = after_ms(30000);
	stop_check();
}

static void stop_check(void)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || c->wait != W_STOP)
			continue;
		int done = pause_st.pid <= 0 || pause_st.exited;
		for (struct ctr *k = ctrs; k; k = k->next)
			if (!k->final)
				done = 0;
		if (done) {
			reply_pause(c);
			stopping = 1;
			/* No new requests: a late one is refused rather than left unanswered. */
			unlinkat(DIR_FD, "monitor.sock", 0);
			if (listen_fd >= 0)
				close(listen_fd);
			listen_fd = -1;
			for (struct conn *a = conns; a; a = a->next)
				if (a->state == C_ATTACH)
					a->dead = 1;
		}
	}
}

static void create_helper_reply(struct helper *h, struct reply *r);
static void simple_helper_reply(struct helper *h, struct reply *r);

/* to_helper hands the request line to a helper with the container's context. */
static void to_helper(struct conn *c, const char *line, size_t n, struct ctr *k, helper_done fn)
{
	struct buf m = {0};
	buf_add(&m, "{\"req\":", 7);
	buf_add(&m, line, n);
	buf_addf(&m, ",\"ctx\":%s}", k && k->ctx ? k->ctx : "null");
	c->state = C_WAIT;
	c->wait = W_HELPER;
	if (!helper_spawn(&m, c, c->id, fn))
		conn_reply_error(c, "cannot run the monitor helper");
	buf_free(&m);
}

/*
 * StartContainer of a libcontainer container, without a helper: what
 * libcontainer's Exec does. The created init waits in open(2) of the write
 * end of <runc root>/<id>/exec.fifo; opening the read end lets it write one
 * byte and exec the container's process. Once the byte is read, the FIFO is
 * removed (from then on libcontainer sees the container running). Anything
 * unusual (an external runtime, an already started or exited container, a
 * FIFO that cannot be opened) goes to the helper, which answers as before.
 * The wait is one more descriptor in the loop (W_START): never blocking.
 */
static void start_end(struct conn *c)
{
	if (c->start_fd >= 0)
		close(c->start_fd);
	c->start_fd = -1;
	free(c->start_fifo);
	c->start_fifo = NULL;
}

static int start_direct(struct conn *c, struct ctr *k)
{
	char root[4096];
	struct jv v;
	if ((k->runtime && k->runtime[0]) || k->started || k->reaped || !k->ctx)
		return 0;
	if (json_get(k->ctx, strlen(k->ctx), "runc_root", &v) != 1 || jv_str(v, root, sizeof root) != 0 || root[0] != '/')
		return 0;
	struct buf path = {0};
	buf_addf(&path, "%s/%s/exec.fifo", root, k->id);
	buf_add(&path, "", 1);
	int fd = open(path.p, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	if (fd < 0 || fstat(fd, &st) != 0 || !S_ISFIFO(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		buf_free(&path);
		return 0;
	}
	c->start_fd = fd;
	c->start_fifo = path.p; /* owned by c now */
	c->state = C_WAIT;
	c->wait = W_START;
	c->deadline = after_ms(60000);
	return 1;
}

/* start_check reads the init's byte. No byte at EOF (the init's end closed)
 * or once gone (the init reaped, or the container deleted) means the init
 * died before it was started. */
static void start_check(struct conn *c, int gone)
{
	struct ctr *k = find_ctr(c->id);
	char b[8];
	ssize_t r = read(c->start_fd, b, sizeof b);
	if (r > 0) {
		if (unlink(c->start_fifo) != 0 && errno != ENOENT)
			mlog("WARN", "remove exec fifo of %s: %s", c->id, strerror(errno));
		start_end(c);
		if (!k) {
			conn_reply_error(c, "container %s: unknown to this monitor", c->id);
			return;
		}
		k->started = 1;
		clock_gettime(CLOCK_REALTIME, &k->started_at);
		reply_ctr(c, k);
		return;
	}
	if (r < 0 && errno == EAGAIN && !gone)
		return; /* not written yet */
	/* EOF: the init closed its end without the byte, i.e. it died. */
	int e = errno;
	start_end(c);
	conn_reply_error(c, "start container %s: %s", c->id,
			 r < 0 && e != EAGAIN ? strerror(e)
			 : k && k->started   ? "cannot start an already running container" /* a concurrent start took the byte */
					     : "container process is already dead");
}

/* start_waiters checks the W_START requests whose container is gone. */
static void start_waiters(void)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || c->wait != W_START)
			continue;
		struct ctr *k = find_ctr(c->id);
		if (!k || k->reaped)
			start_check(c, 1);
	}
}

static int is_op(const char *op, const char *name) { return strcmp(op, name) == 0; }

static void handle_request(struct conn *c, const char *line, size_t n)
{
	char op[32] = "";
	struct jv v;
	if (json_get(line, n, "op", &v) != 1 || jv_str(v, op, sizeof op) != 0) {
		conn_reply_error(c, "bad request: no op");
		return;
	}
	c->id[0] = 0;
	int r = json_get(line, n, "id", &v);
	if (r < 0 || (r == 1 && jv_str(v, c->id, sizeof c->id) != 0)) {
		conn_reply_error(c, "bad request: bad id");
		return;
	}
	if (is_op(op, "status")) {
		reply_pause(c);
		return;
	}
	if (is_op(op, "stop")) {
		stop_request(c);
		return;
	}
	if (is_op(op, "attach")) {
		attach_start(c, line, n);
		return;
	}
	struct ctr *k = c->id[0] ? find_ctr(c->id) : NULL;
	if (is_op(op, "create")) {
		if (!c->id[0])
			conn_reply_error(c, "create: no container ID");
		else if (k)
			conn_reply_error(c, "container %s already exists", c->id);
		else
			to_helper(c, line, n, NULL, create_helper_reply);
		return;
	}
	int known = is_op(op, "start") || is_op(op, "kill") || is_op(op, "delete") || is_op(op, "reopen-log") ||
		    is_op(op, "inspect") || is_op(op, "resize");
	if (!known) { /* an operation of the helper's (it may create processes: see create_helper_reply) */
		to_helper(c, line, n, k, create_helper_reply);
		return;
	}
	if (!k) {
		if (is_op(op, "delete")) {
			struct buf b = {0};
			buf_add(&b, "{}", 2);
			conn_reply(c, &b); /* already gone: idempotent */
			buf_free(&b);
		} else {
			conn_reply_error(c, "container %s: unknown to this monitor", c->id);
		}
		return;
	}
	long long sig = 0, timeout = 0, w = 0, h = 0;
	if (is_op(op, "inspect")) {
		reply_ctr(c, k);
	} else if (is_op(op, "start")) {
		if (!start_direct(c, k))
			to_helper(c, line, n, k, simple_helper_reply);
	} else if (is_op(op, "reopen-log")) {
		to_helper(c, line, n, k, simple_helper_reply);
	} else if (is_op(op, "kill")) {
		if (json_get(line, n, "signal", &v) == 1)
			jv_int(v, &sig);
		if (json_get(line, n, "timeout", &v) == 1)
			jv_int(v, &timeout);
		kill_request(c, k, sig, timeout);
	} else if (is_op(op, "delete")) {
		if (k->final) {
			spawn_delete(c, k);
			return;
		}
		sigkill(k);
		c->state = C_WAIT;
		c->wait = W_DELETE;
		c->deadline = after_ms(30000);
	} else if (is_op(op, "resize")) {
		if (json_get(line, n, "width", &v) == 1)
			jv_int(v, &w);
		if (json_get(line, n, "height", &v) == 1)
			jv_int(v, &h);
		struct winsize ws = {.ws_col = (unsigned short)w, .ws_row = (unsigned short)h};
		if (k->tty && k->out.fd >= 0 && ioctl(k->out.fd, TIOCSWINSZ, &ws) != 0) {
			conn_reply_error(c, "resize terminal of %s: %s", k->id, strerror(errno));
			return;
		}
		struct buf b = {0};
		buf_add(&b, "{}", 2);
		conn_reply(c, &b);
		buf_free(&b);
	}
}

/* ---- helper replies ------------------------------------------------------------------ */

static int take_fd(struct reply *r, const char *name)
{
	for (int i = 0; i < r->nfds; i++)
		if (r->fds[i] >= 0 && strcmp(r->fdnames[i], name) == 0) {
			int fd = r->fds[i];
			r->fds[i] = -1;
			return fd;
		}
	return -1;
}

/* adopt registers the process a helper created (create, or any operation
 * of the helper's that answers with a pid), checked by named_child (reaped:
 * its status), and the descriptors it passed. */
static struct ctr *adopt(const char *id, struct reply *r, const int *reaped)
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

static void create_helper_reply(struct helper *h, struct reply *r)
{
	struct ctr *k = NULL;
	char why[256] = "";
	if (!r->error && r->has_pid && h->id[0]) {
		int status, v = named_child(h, r, &status, why, sizeof why);
		if (v < 0)
			mlog("ERROR", "container %s: %s", h->id, why);
		else
			k = adopt(h->id, r, v ? &status : NULL);
	}
	if (!h->conn)
		return;
	if (why[0]) {
		conn_reply_error(h->conn, "container %s: %s", h->id, why);
	} else if (r->error) {
		conn_reply_error(h->conn, "%s", r->error);
	} else if (k) {
		reply_ctr(h->conn, k);
	} else {
		struct buf b = {0};
		buf_add(&b, r->resp ? r->resp : "{}", strlen(r->resp ? r->resp : "{}"));
		conn_reply(h->conn, &b);
		buf_free(&b);
	}
}

static void simple_helper_reply(struct helper *h, struct reply *r)
{
	struct ctr *k = find_ctr(h->id);
	int log = take_fd(r, "log");
	if (k && log >= 0) { /* reopen-log: the new file, opened beneath the log directory */
		if (k->log_fd >= 0)
			close(k->log_fd);
		k->log_fd = log;
		log = -1;
	}
	if (log >= 0)
		close(log);
	if (k && !r->error && r->started) {
		k->started = 1;
		clock_gettime(CLOCK_REALTIME, &k->started_at);
	}
	if (!h->conn)
		return;
	if (r->error)
		conn_reply_error(h->conn, "%s", r->error);
	else if (k)
		reply_ctr(h->conn, k);
	else
		conn_reply_error(h->conn, "container %s: unknown to this monitor", h->id);
}

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

/* ---- start-up ------------------------------------------------------------------------ */

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
		struct conn *c = calloc(1, sizeof *c);
		if (!c) {
			close(fd);
			return;
		}
		c->fd = fd;
		c->start_fd = -1;
		c->next = conns;
		conns = c;
	}
}

static void timers(void)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || ms_until(c->deadline) > 0)
			continue;
		struct ctr *k = find_ctr(c->id);
		if (c->wait == W_KILL_GRACE && k) {
			sigkill(k);
			c->wait = W_KILL_FORCE;
			c->deadline = after_ms(30000);
		} else if (c->wait == W_KILL_FORCE || c->wait == W_DELETE) {
			conn_reply_error(c, "container %s did not exit after SIGKILL", c->id);
		} else if (c->wait == W_STOP) {
			conn_reply_error(c, "pod did not stop within 30s");
		} else if (c->wait == W_START) {
			start_end(c);
			conn_reply_error(c, "start container %s: its init did not take the start within 60s", c->id);
		}
	}
	for (struct ctr *k = ctrs; k; k = k->next)
		maybe_finalize(k);
	early_sweep();
}

static void sweep(void)
{
	sweep_ctrs();
	helper_sweep();
	for (struct conn **pp = &conns; *pp;) {
		struct conn *c = *pp;
		if (!c->dead && c->close_after_flush && c->out.len == 0)
			c->dead = 1;
		if (!c->dead || c->state == C_WAIT) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		start_end(c);
		close(c->fd);
		buf_free(&c->in);
		buf_free(&c->out);
		buf_free(&c->pending);
		free(c);
	}
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

static void loop(void)
{
	struct pollfd *pfd = NULL;
	struct pref *ref = NULL;
	size_t cap = 0;
	while (!(stopping && !conns)) {
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
#define ADD(f, ev, k, ptr) (pfd[n] = (struct pollfd){.fd = (f), .events = (ev)}, ref[n++] = (struct pref){(k), (ptr)})
		if (listen_fd >= 0)
			ADD(listen_fd, POLLIN, P_LISTEN, NULL);
		ADD(sig_fd, POLLIN, P_SIG, NULL);
		for (struct conn *c = conns; c; c = c->next) {
			short ev = c->out.len ? POLLOUT : 0;
			if ((c->state == C_REQ && !c->close_after_flush) || (c->state == C_ATTACH && !c->pending.len))
				ev |= POLLIN;
			if (ev)
				ADD(c->fd, ev, P_CONN, c);
			if (c->state == C_WAIT && c->wait == W_START && c->start_fd >= 0)
				ADD(c->start_fd, POLLIN, P_START, c);
		}
		for (struct ctr *k = ctrs; k; k = k->next) {
			if (k->out.fd >= 0)
				ADD(k->out.fd, POLLIN, P_OUT, k);
			if (k->err.fd >= 0)
				ADD(k->err.fd, POLLIN, P_ERR, k);
			if (k->stdin_fd >= 0 && attach_wants_stdin_out(k))
				ADD(k->stdin_fd, POLLOUT, P_STDIN, k);
			if (k->oom_ino >= 0 || k->oom_evt >= 0)
				ADD(k->oom_ino >= 0 ? k->oom_ino : k->oom_evt, POLLIN, P_OOM, k);
		}
		for (struct helper *h = helpers; h; h = h->next)
			if (h->sock >= 0)
				ADD(h->sock, POLLIN, P_HELPER, h);
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
		if (poll(pfd, n, timeout) < 0 && errno != EINTR) {
			mlog("ERROR", "poll: %s", strerror(errno));
			exit(1);
		}
		dispatch(pfd, ref, n);
		start_waiters();
		timers();
		stop_check();
		sweep();
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

/*
 * minicri-monitor: the daemon's requests (monitor/protocol.go: one JSON
 * request line, one JSON response line). Served here: status, stop,
 * inspect, kill (signal, timeout, SIGKILL), delete, resize, start (start.c),
 * attach (attach.c). Create, reopen-log, the start the monitor cannot do
 * itself, and any operation it does not know go to a helper with the
 * container's context; a helper's answer that names a pid is adopted as the
 * container (child.c): a new operation that creates processes needs no
 * change here.
 */
#define _GNU_SOURCE
#include "protocol.h"

#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "attach.h"
#include "child.h"
#include "helper.h"
#include "reply.h"
#include "start.h"

int stopping;

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
	if (h->conn)
		reply_empty(h->conn);
}

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

static void delete_request(struct conn *c, struct ctr *k)
{
	if (k->final) {
		spawn_delete(c, k);
		return;
	}
	sigkill(k);
	c->state = C_WAIT;
	c->wait = W_DELETE;
	c->deadline = after_ms(30000);
}

void waits_check(void)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT)
			continue;
		struct ctr *k = find_ctr(c->id);
		if (c->wait == W_CREATED) {
			if (helper_creating(c->id))
				continue;
			if (k)
				delete_request(c, k); /* what the create made */
			else
				reply_empty(c); /* it made nothing */
			continue;
		}
		if (!k || !k->final)
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

static void kill_all(void)
{
	for (struct ctr *k = ctrs; k; k = k->next)
		if (!k->reaped)
			sigkill(k);
	if (pause_st.pid > 0 && !pause_st.exited && signal_child(pause_st.pid, SIGKILL) != 0 && errno != ESRCH)
		mlog("WARN", "kill pause: %s", strerror(errno));
}

static void stop_request(struct conn *c)
{
	c->state = C_WAIT;
	c->wait = W_STOP;
	c->deadline = after_ms(30000);
	stop_check();
}

/* stop_check answers the stops once the pause and every container ended.
 * A helper still to answer may yet make a process (the pod's pause, while
 * the pod starts: a daemon killed in RunPodSandbox has its successor stop
 * the pod before its start ended; a container; an exec): the stop waits for
 * its answer and kills what it made too. */
void stop_check(void)
{
	int pending = 0;
	for (struct conn *c = conns; c; c = c->next)
		pending |= c->state == C_WAIT && c->wait == W_STOP;
	if (!pending)
		return;
	kill_all();
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || c->wait != W_STOP)
			continue;
		int done = (pause_st.pid <= 0 || pause_st.exited) && !helpers_unanswered();
		for (struct ctr *k = ctrs; k; k = k->next)
			if (!k->final)
				done = 0;
		if (done) {
			reply_pause(c);
			stopping = 1; /* the loop stops listening: a late request is refused rather than left unanswered */
		}
	}
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
		const char *resp = r->resp ? r->resp : "{}";
		conn_reply(h->conn, resp, strlen(resp));
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

static int is_op(const char *op, const char *name) { return strcmp(op, name) == 0; }

static void resize_request(struct conn *c, struct ctr *k, const char *line, size_t n)
{
	struct jv v;
	long long w = 0, h = 0;
	if (json_get(line, n, "width", &v) == 1)
		jv_int(v, &w);
	if (json_get(line, n, "height", &v) == 1)
		jv_int(v, &h);
	struct winsize ws = {.ws_col = (unsigned short)w, .ws_row = (unsigned short)h};
	if (k->tty && k->out.fd >= 0 && ioctl(k->out.fd, TIOCSWINSZ, &ws) != 0) {
		conn_reply_error(c, "resize terminal of %s: %s", k->id, strerror(errno));
		return;
	}
	reply_empty(c);
}

/* ctr_request serves op of the container k knows (inspect, start,
 * reopen-log, kill, delete, resize). */
static void ctr_request(struct conn *c, const char *op, struct ctr *k, const char *line, size_t n)
{
	struct jv v;
	long long sig = 0, timeout = 0;
	if (is_op(op, "inspect")) {
		reply_ctr(c, k);
	} else if (is_op(op, "start")) {
		/* Started already: a start whose answer the daemon lost (killed
		 * before it read it, or unable to record it on a full disk) is
		 * asked again; it gets the same answer. */
		if (k->started)
			reply_ctr(c, k);
		else if (k->reaped && !(k->runtime && k->runtime[0]))
			/* its init died before the start, and was reaped
			 * already: no FIFO to open, nothing for a helper */
			conn_reply_error(c, "start container %s: container process is already dead", c->id);
		else if (!start_direct(c, k))
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
		delete_request(c, k);
	} else if (is_op(op, "resize")) {
		resize_request(c, k, line, n);
	}
}

void handle_request(struct conn *c, const char *line, size_t n)
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
	if (!known) /* an operation of the helper's (it may create processes: see create_helper_reply) */
		to_helper(c, line, n, k, create_helper_reply);
	else if (k)
		ctr_request(c, op, k, line, n);
	else if (is_op(op, "delete") && helper_creating(c->id)) {
		/* Its create is still under way (a daemon killed in CreateContainer,
		 * whose successor deletes what its record shows half made): delete
		 * what the create makes once it ends (waits_check). */
		c->state = C_WAIT;
		c->wait = W_CREATED;
		c->deadline = after_ms(60000);
	} else if (is_op(op, "delete"))
		reply_empty(c); /* already gone: idempotent */
	else
		conn_reply_error(c, "container %s: unknown to this monitor", c->id);
}

void waits_timeout(void)
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
		} else if (c->wait == W_CREATED) {
			conn_reply_error(c, "delete container %s: its create did not end within 60s", c->id);
		} else if (c->wait == W_START) {
			conn_start_end(c);
			conn_reply_error(c, "start container %s: its init did not take the start within 60s", c->id);
		}
	}
}

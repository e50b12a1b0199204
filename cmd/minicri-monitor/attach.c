/* minicri-monitor: attach sessions, framed as monitor/attach.go describes:
 * a kind byte, a big-endian uint32 length, that many bytes (at most
 * MAX_FRAME). Output is queued per session; a session more than
 * MAX_ATTACH_QUEUE bytes behind is dropped rather than stalling the
 * container or its log. Stdin is written without blocking: what the
 * container does not take yet is held, and the session's input is not read
 * meanwhile. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "reply.h"

static void parse_frames(struct conn *c);

void attach_start(struct conn *c, const char *line, size_t n)
{
	struct jv v, a;
	struct ctr *k = NULL;
	if (json_get(line, n, "id", &v) == 1 && jv_str(v, c->id, sizeof c->id) == 0)
		k = find_ctr(c->id);
	if (!k) {
		conn_reply_error(c, "container %s: unknown to this monitor", c->id);
		return;
	}
	if (k->final) {
		conn_reply_error(c, "container %s has exited", k->id);
		return;
	}
	if (json_get(line, n, "attach", &a) != 1 || a.n < 2 || a.p[0] != '{') {
		conn_reply_error(c, "attach: no streams named");
		return;
	}
	if (json_get(a.p, a.n, "stdin", &v) == 1)
		c->a_stdin = jv_true(v);
	if (json_get(a.p, a.n, "stdout", &v) == 1)
		c->a_stdout = jv_true(v);
	if (json_get(a.p, a.n, "stderr", &v) == 1)
		c->a_stderr = jv_true(v);
	struct buf b = {0};
	buf_add(&b, "{\"container\":", 13);
	ctr_info(&b, k);
	buf_add(&b, "}\n", 2);
	buf_add(&c->out, b.p, b.len);
	buf_free(&b);
	c->state = C_ATTACH;
	parse_frames(c); /* frames sent right behind the request line */
}

static void session_end(struct conn *c) { c->dead = 1; }

static void write_stdin(struct conn *c, struct ctr *k, const char *p, size_t n)
{
	if (!c->a_stdin || k->stdin_fd < 0)
		return;
	while (n > 0) {
		ssize_t w = write(k->stdin_fd, p, n);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN) {
			buf_add(&c->pending, p, n);
			return;
		}
		if (w <= 0)
			return; /* the container closed its stdin or exited: the input has nowhere to go */
		p += w;
		n -= (size_t)w;
	}
}

static void parse_frames(struct conn *c)
{
	struct ctr *k = find_ctr(c->id);
	while (!c->dead && c->pending.len == 0 && c->in.len >= 5) {
		const unsigned char *h = (const unsigned char *)c->in.p;
		uint32_t n = (uint32_t)h[1] << 24 | (uint32_t)h[2] << 16 | (uint32_t)h[3] << 8 | h[4];
		if (n > MAX_FRAME) {
			session_end(c);
			return;
		}
		if (c->in.len < 5 + (size_t)n)
			return;
		if (!k) {
			session_end(c);
			return;
		}
		if (h[0] == FR_STDIN) {
			write_stdin(c, k, c->in.p + 5, n);
		} else if (h[0] == FR_STDIN_CLOSE) {
			if (!c->a_stdin || k->tty || !k->stdin_once) {
				session_end(c); /* detach */
				return;
			}
			if (k->stdin_fd >= 0) { /* stdin_once: closed for good */
				close(k->stdin_fd);
				k->stdin_fd = -1;
			}
		}
		buf_consume(&c->in, 5 + (size_t)n);
	}
}

void attach_readable(struct conn *c)
{
	char rb[16384];
	ssize_t r = read(c->fd, rb, sizeof rb);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) {
		session_end(c); /* the client left */
		return;
	}
	if (buf_add(&c->in, rb, (size_t)r) != 0) {
		session_end(c);
		return;
	}
	parse_frames(c);
}

void attach_broadcast(struct ctr *k, int kind, const char *p, size_t n)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->dead || c->state != C_ATTACH || strcmp(c->id, k->id) != 0)
			continue;
		if ((kind == FR_STDOUT && !c->a_stdout) || (kind == FR_STDERR && !c->a_stderr))
			continue;
		if (c->out.len + n + 5 > MAX_ATTACH_QUEUE) {
			mlog("WARN", "attach session of container %s fell behind: dropped", k->id);
			session_end(c);
			continue;
		}
		unsigned char h[5] = {(unsigned char)kind, (unsigned char)(n >> 24), (unsigned char)(n >> 16),
				      (unsigned char)(n >> 8), (unsigned char)n};
		if (buf_add(&c->out, h, 5) != 0 || buf_add(&c->out, p, n) != 0)
			session_end(c);
	}
}

void attach_container_final(struct ctr *k)
{
	for (struct conn *c = conns; c; c = c->next)
		if (c->state == C_ATTACH && strcmp(c->id, k->id) == 0)
			c->close_after_flush = 1;
}

void attach_container_gone(struct ctr *k)
{
	for (struct conn *c = conns; c; c = c->next)
		if (c->state == C_ATTACH && strcmp(c->id, k->id) == 0)
			session_end(c);
}

int attach_wants_stdin_out(struct ctr *k)
{
	for (struct conn *c = conns; c; c = c->next)
		if (!c->dead && c->state == C_ATTACH && c->pending.len && strcmp(c->id, k->id) == 0)
			return 1;
	return 0;
}

void attach_stdin_writable(struct ctr *k)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->dead || c->state != C_ATTACH || !c->pending.len || strcmp(c->id, k->id) != 0)
			continue;
		while (c->pending.len) {
			ssize_t w = k->stdin_fd >= 0 ? write(k->stdin_fd, c->pending.p, c->pending.len) : -1;
			if (w < 0 && errno == EINTR)
				continue;
			if (w < 0 && errno == EAGAIN)
				break;
			if (w <= 0) {
				c->pending.len = 0;
				break;
			}
			buf_consume(&c->pending, (size_t)w);
		}
		if (!c->pending.len)
			parse_frames(c);
	}
}

void attach_end_all(void)
{
	for (struct conn *a = conns; a; a = a->next)
		if (a->state == C_ATTACH)
			a->dead = 1;
}

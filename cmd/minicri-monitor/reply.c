/* minicri-monitor: answers to the daemon's requests, as monitor/protocol.go
 * reads them: one JSON line per request, then the connection closes
 * (except an attach, which goes on with frames: attach.c). */
#define _GNU_SOURCE
#include "reply.h"

#include <stdarg.h>
#include <stdio.h>

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

void conn_reply(struct conn *c, const char *json, size_t n)
{
	buf_add(&c->out, json, n);
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
	conn_reply(c, b.p, b.len);
	buf_free(&b);
}

void reply_empty(struct conn *c) { conn_reply(c, "{}", 2); }

void reply_ctr(struct conn *c, struct ctr *k)
{
	struct buf b = {0};
	buf_add(&b, "{\"container\":", 13);
	ctr_info(&b, k);
	buf_add(&b, "}", 1);
	conn_reply(c, b.p, b.len);
	buf_free(&b);
}

void reply_pause(struct conn *c)
{
	struct buf b = {0};
	buf_add(&b, "{\"pause\":", 9);
	pause_info(&b);
	buf_add(&b, "}", 1);
	conn_reply(c, b.p, b.len);
	buf_free(&b);
}

/* minicri-monitor: container output into CRI log lines, byte for byte as
 * internal/crilog's Copy writes them:
 *   "<RFC3339Nano UTC> <stream> <P|F> <content>\n"
 * a line ended by "\n" (a "\r" before it dropped) is F; MAX_LINE bytes
 * without a newline are a P chunk (a "\r" ending the chunk is kept for the
 * next one); what is left at EOF without a newline is a P entry.
 * Every entry is one write(2) to the O_APPEND log: a reopen swaps the fd
 * between entries, never inside one. */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "attach.h"
#include "output.h"

static void log_entry(struct ctr *k, struct stream *s, int partial, const char *p, size_t n)
{
	if (k->log_fd < 0)
		return;
	static char line[MAX_LINE + 128];
	char t[48];
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	fmt_time(t, &now);
	const char *name = s->kind == FR_STDERR ? "stderr" : "stdout";
	size_t h = (size_t)snprintf(line, 128, "%s %s %c ", t, name, partial ? 'P' : 'F');
	memcpy(line + h, p, n);
	line[h + n] = '\n';
	size_t len = h + n + 1, off = 0;
	while (off < len) {
		ssize_t w = write(k->log_fd, line + off, len - off);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0) {
			if (!k->log_failed)
				mlog("WARN", "container %s: write log: %s", k->id, strerror(errno));
			k->log_failed = 1; /* reported once; reading goes on so the container never blocks */
			return;
		}
		off += (size_t)w;
	}
	k->log_failed = 0;
}

/* emit writes the complete lines (and a full P chunk) held in s->line. */
static void emit(struct ctr *k, struct stream *s)
{
	size_t start = 0;
	for (;;) {
		char *nl = memchr(s->line + start, '\n', s->n - start);
		if (nl) {
			size_t end = (size_t)(nl - s->line);
			size_t cl = end - start;
			if (cl > 0 && s->line[end - 1] == '\r')
				cl--;
			log_entry(k, s, 0, s->line + start, cl);
			start = end + 1;
			continue;
		}
		if (s->n - start == MAX_LINE) {
			size_t cl = MAX_LINE;
			if (s->line[start + cl - 1] == '\r')
				cl--; /* a "\r\n" may straddle the chunks */
			log_entry(k, s, 1, s->line + start, cl);
			start += cl;
			continue;
		}
		break;
	}
	if (start) {
		memmove(s->line, s->line + start, s->n - start);
		s->n -= start;
	}
}

void stream_read(struct ctr *k, struct stream *s)
{
	static char rb[MAX_LINE];
	ssize_t r = read(s->fd, rb, sizeof rb);
	if (r < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (r <= 0) { /* EOF, or EIO of a TTY whose slave side closed */
		stream_eof(k, s);
		return;
	}
	attach_broadcast(k, s->kind, rb, (size_t)r);
	if (k->log_fd < 0)
		return;
	if (!s->line && !(s->line = malloc(MAX_LINE)))
		return;
	size_t off = 0;
	while (off < (size_t)r) {
		size_t room = MAX_LINE - s->n, take = (size_t)r - off;
		if (take > room)
			take = room;
		memcpy(s->line + s->n, rb + off, take);
		s->n += take;
		off += take;
		emit(k, s);
	}
}

void log_flush_partial(struct ctr *k, struct stream *s)
{
	if (s->n > 0)
		log_entry(k, s, 1, s->line, s->n);
	s->n = 0;
}

void stream_eof(struct ctr *k, struct stream *s)
{
	log_flush_partial(k, s);
	free(s->line);
	s->line = NULL;
	if (s->fd >= 0)
		close(s->fd);
	s->fd = -1;
}

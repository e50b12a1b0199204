/*
 * minicri-monitor: StartContainer of a libcontainer container, without a
 * helper: what libcontainer's Exec does. The created init waits in open(2)
 * of the write end of <runc root>/<id>/exec.fifo; opening the read end lets
 * it write one byte and exec the container's process. Once the byte is
 * read, the FIFO is removed (from then on libcontainer sees the container
 * running). A container started already gets the answer of its start again
 * (protocol.c). Anything unusual (an external runtime, an exited container,
 * a FIFO that cannot be opened) goes to the helper, which
 * answers as before. The wait is one more descriptor in the loop (W_START):
 * never blocking.
 */
#define _GNU_SOURCE
#include "start.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "reply.h"

int start_direct(struct conn *c, struct ctr *k)
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

/* No byte at EOF (the init's end closed) or once gone (the init reaped, or
 * the container deleted) means the init died before it was started. */
void start_check(struct conn *c, int gone)
{
	struct ctr *k = find_ctr(c->id);
	char b[8];
	ssize_t r = read(c->start_fd, b, sizeof b);
	if (r > 0) {
		if (unlink(c->start_fifo) != 0 && errno != ENOENT)
			mlog("WARN", "remove exec fifo of %s: %s", c->id, strerror(errno));
		conn_start_end(c);
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
	/* EOF: the init closed its end without the byte: it died, or a
	 * concurrent start (the same request again, from a daemon restarted
	 * meanwhile) took the byte; that one's answer is this one's too. */
	int e = errno;
	conn_start_end(c);
	if (k && k->started && !(r < 0 && e != EAGAIN)) {
		reply_ctr(c, k);
		return;
	}
	conn_reply_error(c, "start container %s: %s", c->id,
			 r < 0 && e != EAGAIN ? strerror(e) : "container process is already dead");
}

void start_waiters(void)
{
	for (struct conn *c = conns; c; c = c->next) {
		if (c->state != C_WAIT || c->wait != W_START)
			continue;
		struct ctr *k = find_ctr(c->id);
		if (!k || k->reaped)
			start_check(c, 1);
	}
}

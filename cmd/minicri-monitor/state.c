/* minicri-monitor: the records its files share: the containers (added by
 * child.c, freed here once marked gone), the pause, the client connections
 * (served by protocol.c and attach.c). */
#define _GNU_SOURCE
#include "state.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct ctr *ctrs;
struct conn *conns;
struct pause_state pause_st = {.pid = -1};

struct ctr *find_ctr(const char *id)
{
	for (struct ctr *k = ctrs; k; k = k->next)
		if (!k->gone && strcmp(k->id, id) == 0)
			return k;
	return NULL;
}

struct conn *conn_new(int fd)
{
	struct conn *c = calloc(1, sizeof *c);
	if (!c)
		return NULL;
	c->fd = fd;
	c->start_fd = -1;
	c->next = conns;
	conns = c;
	return c;
}

void conn_start_end(struct conn *c)
{
	if (c->start_fd >= 0)
		close(c->start_fd);
	c->start_fd = -1;
	free(c->start_fifo);
	c->start_fifo = NULL;
}

void sweep_ctrs(void)
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

void sweep_conns(void)
{
	for (struct conn **pp = &conns; *pp;) {
		struct conn *c = *pp;
		if (!c->dead && c->close_after_flush && c->out.len == 0)
			c->dead = 1;
		if (!c->dead || c->state == C_WAIT) {
			pp = &c->next;
			continue;
		}
		*pp = c->next;
		conn_start_end(c);
		close(c->fd);
		buf_free(&c->in);
		buf_free(&c->out);
		buf_free(&c->pending);
		free(c);
	}
}

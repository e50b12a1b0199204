/* minicri-monitor: answers to the daemon's requests (reply.c). */
#ifndef MINICRI_MONITOR_REPLY_H
#define MINICRI_MONITOR_REPLY_H

#include "state.h"

/* conn_reply queues one JSON line on c, which then closes once flushed. */
void conn_reply(struct conn *c, const char *json, size_t n);
void conn_reply_error(struct conn *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void reply_empty(struct conn *c); /* {} */
void reply_ctr(struct conn *c, struct ctr *k);
void reply_pause(struct conn *c);
/* ctr_info: a container as the protocol names it (monitor/protocol.go's CtrInfo). */
void ctr_info(struct buf *b, struct ctr *k);

#endif

/* minicri-monitor: container output into the CRI log (output.c). */
#ifndef MINICRI_MONITOR_OUTPUT_H
#define MINICRI_MONITOR_OUTPUT_H

#include "state.h"

void stream_read(struct ctr *k, struct stream *s);        /* logs and fans out what is there */
void stream_eof(struct ctr *k, struct stream *s);         /* the rest, then the stream closes */
void log_flush_partial(struct ctr *k, struct stream *s); /* a line held without its newline */

#endif

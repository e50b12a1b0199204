/* minicri-monitor: small helpers shared by its files (util.c). */
#ifndef MINICRI_MONITOR_UTIL_H
#define MINICRI_MONITOR_UTIL_H

#include <stddef.h>
#include <time.h>

struct buf {
	char *p;
	size_t len, cap;
};

int buf_add(struct buf *b, const void *d, size_t n);
int buf_addf(struct buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
int buf_str(struct buf *b, const char *s); /* a JSON string, quoted and escaped */
void buf_consume(struct buf *b, size_t n);
void buf_free(struct buf *b);

/* RFC 3339 with nanoseconds, UTC, trailing zeros dropped: Go's RFC3339Nano. */
void fmt_time(char out[48], const struct timespec *ts);

/* CLOCK_MONOTONIC now, ms from now to t (negative once past), now + ms. */
struct timespec mono(void);
long long ms_until(struct timespec t);
struct timespec after_ms(long long ms);

void set_nonblock(int fd);

void mlog(const char *level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
extern char pod_id[];

/* A JSON value's raw text. */
struct jv {
	const char *p;
	size_t n;
};

/* json_get finds key at the top level of the object s: 1 found, 0 not, -1 malformed. */
int json_get(const char *s, size_t n, const char *key, struct jv *out);
/* jv_str copies a string value without escapes into out (cap bytes with the NUL): 0 or -1. */
int jv_str(struct jv v, char *out, size_t cap);
int jv_int(struct jv v, long long *out);
int jv_true(struct jv v);

#endif

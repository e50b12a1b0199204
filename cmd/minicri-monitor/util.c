/* minicri-monitor: growable buffers, clocks and time format, log lines, a bounded JSON scanner. */
#define _GNU_SOURCE
#include "util.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

char pod_id[160];

int buf_add(struct buf *b, const void *d, size_t n)
{
	if (n > SIZE_MAX / 2 - b->len)
		return -1;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		while (cap < b->len + n)
			cap *= 2;
		char *p = realloc(b->p, cap);
		if (!p)
			return -1;
		b->p = p;
		b->cap = cap;
	}
	if (n)
		memcpy(b->p + b->len, d, n);
	b->len += n;
	return 0;
}

int buf_addf(struct buf *b, const char *fmt, ...)
{
	char tmp[512];
	va_list ap, again;
	va_start(ap, fmt);
	va_copy(again, ap);
	int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
	va_end(ap);
	if (n < 0 || (size_t)n < sizeof tmp) {
		va_end(again);
		return n < 0 ? -1 : buf_add(b, tmp, (size_t)n);
	}
	/* Longer than tmp (a container's context holds several paths): format
	 * it whole, never cut (a cut JSON message is a failed request). */
	char *big = malloc((size_t)n + 1);
	if (!big) {
		va_end(again);
		return -1;
	}
	vsnprintf(big, (size_t)n + 1, fmt, again);
	va_end(again);
	int rc = buf_add(b, big, (size_t)n);
	free(big);
	return rc;
}

int buf_str(struct buf *b, const char *s)
{
	static const char hex[] = "0123456789abcdef";
	int rc = buf_add(b, "\"", 1);
	for (; *s && rc == 0; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			char e[2] = {'\\', (char)c};
			rc = buf_add(b, e, 2);
		} else if (c < 0x20 || c == 0x7f) {
			char e[6] = {'\\', 'u', '0', '0', hex[c >> 4], hex[c & 15]};
			rc = buf_add(b, e, 6);
		} else {
			rc = buf_add(b, s, 1);
		}
	}
	return rc ? rc : buf_add(b, "\"", 1);
}

void buf_consume(struct buf *b, size_t n)
{
	if (n >= b->len) {
		b->len = 0;
		return;
	}
	memmove(b->p, b->p + n, b->len - n);
	b->len -= n;
}

void buf_free(struct buf *b)
{
	free(b->p);
	b->p = NULL;
	b->len = b->cap = 0;
}

void fmt_time(char out[48], const struct timespec *ts)
{
	struct tm tm;
	time_t sec = ts->tv_sec;
	gmtime_r(&sec, &tm);
	size_t n = strftime(out, 32, "%Y-%m-%dT%H:%M:%S", &tm);
	if (ts->tv_nsec > 0 && ts->tv_nsec < 1000000000L) {
		char f[16];
		snprintf(f, sizeof f, ".%09ld", (long)ts->tv_nsec);
		size_t l = strlen(f);
		while (l > 1 && f[l - 1] == '0')
			l--;
		memcpy(out + n, f, l);
		n += l;
	}
	out[n++] = 'Z';
	out[n] = 0;
}

struct timespec mono(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t;
}

long long ms_until(struct timespec t)
{
	struct timespec n = mono();
	return (long long)(t.tv_sec - n.tv_sec) * 1000 + (t.tv_nsec - n.tv_nsec) / 1000000;
}

struct timespec after_ms(long long ms)
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

void set_nonblock(int fd)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl >= 0)
		fcntl(fd, F_SETFL, fl | O_NONBLOCK);
}

void mlog(const char *level, const char *fmt, ...)
{
	char msg[1024], t[48];
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(msg, sizeof msg, fmt, ap);
	va_end(ap);
	struct timespec now;
	clock_gettime(CLOCK_REALTIME, &now);
	fmt_time(t, &now);
	struct buf b = {0};
	buf_addf(&b, "{\"time\":\"%s\",\"level\":\"%s\",\"msg\":", t, level);
	buf_str(&b, msg);
	if (pod_id[0]) {
		buf_add(&b, ",\"pod\":", 7);
		buf_str(&b, pod_id);
	}
	buf_add(&b, "}\n", 2);
	if (b.p) {
		ssize_t w = write(2, b.p, b.len);
		(void)w; /* nowhere else to report it */
	}
	buf_free(&b);
}

/* ---- JSON scanning: indices into s, SIZE_MAX on error ---------------------- */

#define BAD SIZE_MAX
#define MAX_DEPTH 32

static size_t skip_ws(const char *s, size_t n, size_t i)
{
	while (i < n && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n'))
		i++;
	return i;
}

static size_t skip_string(const char *s, size_t n, size_t i)
{
	if (i >= n || s[i] != '"')
		return BAD;
	for (i++; i < n; i++) {
		if (s[i] == '\\') {
			i++;
			continue;
		}
		if (s[i] == '"')
			return i + 1;
	}
	return BAD;
}

static size_t skip_value(const char *s, size_t n, size_t i, int depth)
{
	if (depth > MAX_DEPTH)
		return BAD;
	i = skip_ws(s, n, i);
	if (i >= n)
		return BAD;
	if (s[i] == '"')
		return skip_string(s, n, i);
	if (s[i] == '{' || s[i] == '[') {
		char close = s[i] == '{' ? '}' : ']';
		int obj = s[i] == '{';
		i = skip_ws(s, n, i + 1);
		if (i < n && s[i] == close)
			return i + 1;
		for (;;) {
			if (obj) {
				i = skip_string(s, n, skip_ws(s, n, i));
				if (i == BAD)
					return BAD;
				i = skip_ws(s, n, i);
				if (i >= n || s[i] != ':')
					return BAD;
				i++;
			}
			i = skip_value(s, n, i, depth + 1);
			if (i == BAD)
				return BAD;
			i = skip_ws(s, n, i);
			if (i >= n)
				return BAD;
			if (s[i] == close)
				return i + 1;
			if (s[i] != ',')
				return BAD;
			i++;
		}
	}
	size_t start = i;
	while (i < n && (s[i] == '-' || s[i] == '+' || s[i] == '.' || (s[i] >= '0' && s[i] <= '9') ||
			 (s[i] >= 'a' && s[i] <= 'z') || (s[i] >= 'A' && s[i] <= 'Z')))
		i++;
	return i > start ? i : BAD;
}

int json_get(const char *s, size_t n, const char *key, struct jv *out)
{
	size_t klen = strlen(key);
	size_t i = skip_ws(s, n, 0);
	if (i >= n || s[i] != '{')
		return -1;
	i = skip_ws(s, n, i + 1);
	if (i < n && s[i] == '}')
		return 0;
	for (;;) {
		size_t ks = skip_ws(s, n, i);
		size_t ke = skip_string(s, n, ks);
		if (ke == BAD)
			return -1;
		i = skip_ws(s, n, ke);
		if (i >= n || s[i] != ':')
			return -1;
		size_t vs = skip_ws(s, n, i + 1);
		size_t ve = skip_value(s, n, vs, 1);
		if (ve == BAD)
			return -1;
		if (ke - ks - 2 == klen && memcmp(s + ks + 1, key, klen) == 0) {
			out->p = s + vs;
			out->n = ve - vs;
			return 1;
		}
		i = skip_ws(s, n, ve);
		if (i >= n)
			return -1;
		if (s[i] == '}')
			return 0;
		if (s[i] != ',')
			return -1;
		i++;
	}
}

int jv_str(struct jv v, char *out, size_t cap)
{
	if (v.n < 2 || v.p[0] != '"' || v.p[v.n - 1] != '"' || v.n - 2 >= cap)
		return -1;
	for (size_t i = 1; i < v.n - 1; i++) {
		unsigned char c = (unsigned char)v.p[i];
		if (c == '\\' || c < 0x20)
			return -1; /* the values read here (ops, IDs) never need escapes */
		out[i - 1] = (char)c;
	}
	out[v.n - 2] = 0;
	return 0;
}

int jv_int(struct jv v, long long *out)
{
	char tmp[32];
	if (v.n == 0 || v.n >= sizeof tmp)
		return -1;
	memcpy(tmp, v.p, v.n);
	tmp[v.n] = 0;
	char *end;
	errno = 0;
	long long x = strtoll(tmp, &end, 10);
	if (errno || *end)
		return -1;
	*out = x;
	return 0;
}

int jv_true(struct jv v) { return v.n == 4 && memcmp(v.p, "true", 4) == 0; }

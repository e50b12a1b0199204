/* minicri-monitor: a container's exit. Once its init is reaped, a helper
 * kills what is left in the container's cgroup and reads its OOM kill count;
 * once that helper answered, the output is drained (or 2 s passed) and the
 * OOM watch ended (or 1 s passed), the exit is final: written to exit.json
 * atomically, and the waiting clients are answered (protocol.c). */
#define _GNU_SOURCE
#include "exit.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "attach.h"
#include "helper.h"
#include "output.h"

int exit_code(int status)
{
	if (WIFSIGNALED(status))
		return 128 + WTERMSIG(status);
	return WEXITSTATUS(status);
}

/* write_exit records k's exit in exit.json of its directory, atomically:
 * a temp file written and synced, renamed over, the directory synced. */
static void write_exit(struct ctr *k)
{
	if (k->dir_fd < 0)
		return;
	char tmp[64], t[48];
	snprintf(tmp, sizeof tmp, ".exit.json.tmp-%d", (int)getpid());
	fmt_time(t, &k->finished_at);
	struct buf b = {0};
	buf_addf(&b, "{\"code\":%d,\"finished_at\":\"%s\"%s}", k->code, t, k->oom_killed ? ",\"oom_killed\":true" : "");
	int fd = openat(k->dir_fd, tmp, O_WRONLY | O_CREAT | O_TRUNC | O_NOFOLLOW | O_CLOEXEC, 0600);
	int ok = fd >= 0 && b.p && write(fd, b.p, b.len) == (ssize_t)b.len && fsync(fd) == 0;
	if (fd >= 0 && close(fd) != 0)
		ok = 0;
	if (ok && renameat(k->dir_fd, tmp, k->dir_fd, "exit.json") == 0) {
		if (fsync(k->dir_fd) != 0)
			mlog("WARN", "container %s: sync exit record dir: %s", k->id, strerror(errno));
	} else {
		mlog("ERROR", "container %s: record exit: %s", k->id, strerror(errno));
		unlinkat(k->dir_fd, tmp, 0);
	}
	buf_free(&b);
}

static int read_key(int dirfd, const char *file, const char *key, unsigned long long *v)
{
	char data[4096];
	int fd = openat(dirfd, file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	ssize_t n = read(fd, data, sizeof data - 1);
	close(fd);
	if (n <= 0)
		return -1;
	data[n] = 0;
	size_t kl = strlen(key);
	for (char *l = data; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL) {
		if (strncmp(l, key, kl) == 0 && l[kl] == ' ') {
			*v = strtoull(l + kl + 1, NULL, 10);
			return 0;
		}
	}
	return -1;
}

static void oom_watch_end(struct ctr *k)
{
	if (k->oom_ino >= 0)
		close(k->oom_ino);
	if (k->oom_evt >= 0)
		close(k->oom_evt);
	k->oom_ino = k->oom_evt = -1;
}

/* oom_check: cgdriver.OOMWatch.check, on every change of memory.events or
 * cgroup.events, and once more when the cgroup empties or goes. */
void oom_check(struct ctr *k)
{
	unsigned long long n, populated;
	if (read_key(k->oom_dir, "memory.events", "oom_kill", &n) == 0 && n > 0)
		k->oom_seen = 1;
	if (read_key(k->oom_dir, "cgroup.events", "populated", &populated) != 0 || populated == 0)
		oom_watch_end(k);
}

void oom_event(struct ctr *k)
{
	char b[4096];
	if (k->oom_ino >= 0) {
		while (read(k->oom_ino, b, sizeof b) > 0)
			;
		oom_check(k);
		return;
	}
	if (read(k->oom_evt, b, 8) != 8)
		return;
	/* cgroup v1: the eventfd also fires when the cgroup is removed. */
	if (faccessat(k->oom_dir, "memory.oom_control", F_OK, 0) == 0)
		k->oom_seen = 1;
	else
		oom_watch_end(k);
}

void maybe_finalize(struct ctr *k)
{
	if (!k->reaped || k->final || !k->exit_helper_done)
		return;
	long long since = -ms_until(k->reaped_mono);
	int drained = k->out.fd < 0 && k->err.fd < 0;
	int watched = k->oom_ino < 0 && k->oom_evt < 0;
	if ((!drained && since < 2000) || (!watched && since < 1000))
		return;
	if (!drained)
		mlog("WARN", "container %s: output still open after exit; not waiting for it", k->id);
	int oom = k->exit_helper_oom || k->oom_seen;
	unsigned long long n;
	if (!oom && k->oom_base_ok && k->code == 128 + SIGKILL && k->oom_par >= 0 &&
	    read_key(k->oom_par, "memory.events", "oom_kill", &n) == 0 && n > k->oom_base)
		oom = 1; /* the parent's count rose: this cgroup's kill, seen too late */
	k->oom_killed = oom;
	/* Lines held without a newline yet are part of the output before the exit. */
	if (k->out.fd >= 0)
		log_flush_partial(k, &k->out);
	if (k->err.fd >= 0)
		log_flush_partial(k, &k->err);
	write_exit(k);
	k->final = 1;
	mlog("INFO", "container %s exited: code %d, oom_killed %d", k->id, k->code, oom);
	attach_container_final(k);
}

void finalize_all(void)
{
	for (struct ctr *k = ctrs; k; k = k->next)
		maybe_finalize(k);
}

static void exit_helper_reply(struct helper *h, struct reply *r)
{
	struct ctr *k = find_ctr(h->id);
	if (!k)
		return;
	if (r->error)
		mlog("WARN", "container %s: after exit: %s", k->id, r->error);
	k->exit_helper_oom = r->oom;
	k->exit_helper_done = 1;
	maybe_finalize(k);
}

void ctr_reaped(struct ctr *k, int status)
{
	k->reaped = 1;
	k->code = exit_code(status);
	clock_gettime(CLOCK_REALTIME, &k->finished_at);
	k->reaped_mono = mono();
	/* The helper kills what is left in the container's cgroup (shared-PID
	 * pods) and reads its OOM kill count while the cgroup is there. */
	struct buf m = {0};
	buf_addf(&m, "{\"req\":{\"op\":\"exited\",\"id\":");
	buf_str(&m, k->id);
	buf_addf(&m, "},\"ctx\":%s,\"code\":%d}", k->ctx ? k->ctx : "null", k->code);
	if (!helper_spawn(&m, NULL, k->id, exit_helper_reply)) {
		k->exit_helper_done = 1;
		maybe_finalize(k);
	}
	buf_free(&m);
}
